"""The household world state: objects, what holds what, what the agent holds and faces.

Plain ``__slots__`` classes, picklable and cheap to copy. Containment is stored
once, as each object's ``parent``; "inside" is transitive, as in AI2-THOR,
whose receptacle trigger boxes report everything physically within them (an
Apple in a Bowl on a CounterTop is inside the CounterTop too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from envs.household.constants import CLEAN_BASIN, CLEAN_SOURCE, TASK_TYPES


@dataclass(frozen=True)
class TaskSpec:
    """An ALFRED task, named after ALFRED's ``pddl_params``.

    Unused fields are "" (ALFRED leaves them empty: ``parent_target`` for
    look_at_obj_in_light, ``mrecep_target`` outside movable-receptacle tasks).
    """

    task_type: str
    object_target: str
    parent_target: str
    mrecep_target: str = ""
    toggle_target: str = ""
    object_sliced: bool = False

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"unknown ALFRED task type {self.task_type!r}; expected one of {TASK_TYPES}")
        if not self.object_target:
            raise ValueError("TaskSpec.object_target is empty")
        needs = {
            "look_at_obj_in_light": "toggle_target",
            "pick_and_place_with_movable_recep": "mrecep_target",
        }.get(self.task_type, "parent_target")
        if not getattr(self, needs):
            raise ValueError(f"a {self.task_type} task needs {needs}")
        if self.task_type == "pick_and_place_with_movable_recep" and not self.parent_target:
            raise ValueError(f"a {self.task_type} task needs parent_target")

    @property
    def target_type(self) -> str:
        """The goal's object type: ``object_target`` + 'Sliced' for sliced tasks
        (ALFRED env/tasks.py ``get_targets``)."""
        return self.object_target + "Sliced" if self.object_sliced else self.object_target


class Obj:
    """One object instance. ``parent`` is the receptacle instance holding it;
    None when held, lying on the floor, or for static objects."""

    __slots__ = (
        "id", "type", "parent", "receptacle", "openable", "is_open", "toggleable", "is_on",
        "sliceable", "is_sliced", "pickupable", "cleaned", "heated", "cooled", "thor_id",
    )

    def __init__(
        self,
        id: str,
        type: str,
        parent: str | None = None,
        *,
        receptacle: bool = False,
        openable: bool = False,
        is_open: bool = False,
        toggleable: bool = False,
        is_on: bool = False,
        sliceable: bool = False,
        is_sliced: bool = False,
        pickupable: bool = False,
        cleaned: bool = False,
        heated: bool = False,
        cooled: bool = False,
        thor_id: str | None = None,
    ) -> None:
        self.id = id
        self.type = type
        self.parent = parent
        self.receptacle = receptacle
        self.openable = openable
        self.is_open = is_open
        self.toggleable = toggleable
        self.is_on = is_on
        self.sliceable = sliceable
        self.is_sliced = is_sliced
        self.pickupable = pickupable
        self.cleaned = cleaned
        self.heated = heated
        self.cooled = cooled
        #: the AI2-THOR id of a static receptacle from the floor plan's layout, if any.
        self.thor_id = thor_id

    @property
    def is_piece(self) -> bool:
        """A piece made by slicing (``AppleSliced``, ``EggCracked``)."""
        return self.is_sliced and not self.sliceable

    @property
    def inactive(self) -> bool:
        """A whole object after slicing. AI2-THOR 2.x keeps it in the metadata with
        ``isSliced`` set (its id stays in ALFRED's cleaned/heated/cooled sets and it
        keeps its parent receptacle), but it can no longer be seen or acted on."""
        return self.is_sliced and self.sliceable

    def copy(self) -> "Obj":
        o = Obj.__new__(Obj)
        o.id = self.id
        o.type = self.type
        o.parent = self.parent
        o.receptacle = self.receptacle
        o.openable = self.openable
        o.is_open = self.is_open
        o.toggleable = self.toggleable
        o.is_on = self.is_on
        o.sliceable = self.sliceable
        o.is_sliced = self.is_sliced
        o.pickupable = self.pickupable
        o.cleaned = self.cleaned
        o.heated = self.heated
        o.cooled = self.cooled
        o.thor_id = self.thor_id
        return o

    def __getstate__(self) -> tuple:
        return tuple(getattr(self, s) for s in Obj.__slots__)

    def __setstate__(self, state: tuple) -> None:
        for s, v in zip(Obj.__slots__, state):
            setattr(self, s, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj) and self.__getstate__() == other.__getstate__()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        flags = [s for s in ("is_open", "is_on", "is_sliced", "cleaned", "heated", "cooled") if getattr(self, s)]
        return f"Obj({self.id!r}, parent={self.parent!r}{', ' + ', '.join(flags) if flags else ''})"


class World:
    """The full state. ``objects`` keeps a deterministic insertion order."""

    __slots__ = ("floor_plan", "seed", "task", "objects", "holding", "at")

    def __init__(
        self,
        floor_plan: int,
        seed: int,
        task: TaskSpec | None,
        objects: dict[str, Obj],
        holding: str | None = None,
        at: str | None = None,
    ) -> None:
        self.floor_plan = floor_plan
        self.seed = seed
        self.task = task
        self.objects = objects
        #: id of the held object, or None.
        self.holding = holding
        #: id of the object/receptacle the agent last went to and faces, or None.
        self.at = at

    def copy(self) -> "World":
        """An independent copy (objects copied, containment shared by value)."""
        return World(
            self.floor_plan, self.seed, self.task,
            {k: o.copy() for k, o in self.objects.items()}, self.holding, self.at,
        )

    def __getstate__(self) -> tuple:
        return (self.floor_plan, self.seed, self.task, self.objects, self.holding, self.at)

    def __setstate__(self, state: tuple) -> None:
        self.floor_plan, self.seed, self.task, self.objects, self.holding, self.at = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, World) and self.__getstate__() == other.__getstate__()

    __hash__ = None  # type: ignore[assignment]

    # --- queries --------------------------------------------------------------
    def ancestors(self, obj_id: str) -> Iterator[str]:
        """The receptacles holding ``obj_id``, innermost first."""
        objects = self.objects
        parent = objects[obj_id].parent
        while parent is not None:
            yield parent
            parent = objects[parent].parent

    def closed_container(self, obj_id: str) -> str | None:
        """The innermost closed openable receptacle holding ``obj_id``, if any."""
        objects = self.objects
        for parent in self.ancestors(obj_id):
            p = objects[parent]
            if p.openable and not p.is_open:
                return parent
        return None

    def is_inside(self, obj_id: str, recep_id: str) -> bool:
        """True if ``obj_id`` is (transitively) inside ``recep_id``."""
        objects = self.objects
        parent = objects[obj_id].parent
        while parent is not None:
            if parent == recep_id:
                return True
            parent = objects[parent].parent
        return False

    def contents(self, recep_id: str, recursive: bool = False) -> list[str]:
        """Ids of the objects in ``recep_id`` (directly, or at any depth)."""
        if recursive:
            return [k for k in self.objects if self.is_inside(k, recep_id)]
        return [k for k, o in self.objects.items() if o.parent == recep_id]

    def of_type(self, obj_type: str) -> list[str]:
        """Ids of the instances of exactly ``obj_type``, in id order."""
        return [k for k, o in self.objects.items() if o.type == obj_type]

    def is_held(self, obj_id: str) -> bool:
        """True for the held object and anything inside it."""
        h = self.holding
        return h is not None and (obj_id == h or self.is_inside(obj_id, h))

    def root(self, obj_id: str) -> str:
        """The outermost receptacle holding ``obj_id`` (itself when it has no parent)."""
        objects = self.objects
        o = objects[obj_id]
        while o.parent is not None:
            o = objects[o.parent]
        return o.id

    def basins_of(self, faucet_id: str) -> list[str]:
        """The SinkBasin a Faucet fills when turned on: one, or none.

        ALFRED cleans only what is in the SinkBasin closest to the faucet turned on
        (askforalfred/alfred env/thor_env.py ``update_states`` / ``check_clean``:
        ``get_obj_of_type_closest_to_obj('SinkBasin', faucet)``). The engine builds one
        Faucet per SinkBasin (:func:`~envs.household.build.build_world`), paired in id
        order: faucet k fills basin k (the layouts carry no faucet positions; the
        json_2.1.0 experts' faucets lie nearest the first basin of their floor plan in id
        order). A hand-built world with more faucets than basins pairs the extra
        faucets with the last basin.
        """
        basins = self.of_type(CLEAN_BASIN)
        faucets = self.of_type(CLEAN_SOURCE)
        if not basins or faucet_id not in faucets:
            return []
        return [basins[min(faucets.index(faucet_id), len(basins) - 1)]]

    def basin_of(self, faucet_id: str) -> str | None:
        """The first SinkBasin :meth:`basins_of` gives, or None."""
        fed = self.basins_of(faucet_id)
        return fed[0] if fed else None

    def in_reach(self, obj_id: str) -> bool:
        """True if the agent, facing ``at``, can see and act on ``obj_id``: both share
        the same outermost receptacle (facing ``CounterTop_1`` reaches the Apple in
        the Bowl on it), or they are a Faucet and its SinkBasin."""
        at = self.at
        objects = self.objects
        if at is None or at not in objects or obj_id not in objects:
            return False
        root_at, root_obj = self.root(at), self.root(obj_id)
        if root_at == root_obj:
            return True
        for a, b in ((root_at, root_obj), (root_obj, root_at)):
            if objects[a].type == CLEAN_SOURCE and b in self.basins_of(a):
                return True
        return False

    def next_id(self, obj_type: str) -> str:
        """A fresh ``<Type>_<n>`` id (n one past the highest in use)."""
        prefix = obj_type + "_"
        used = [int(k[len(prefix):]) for k in self.objects if k.startswith(prefix) and k[len(prefix):].isdigit()]
        return f"{obj_type}_{max(used, default=0) + 1}"

    def __repr__(self) -> str:
        return (f"World(FloorPlan{self.floor_plan}, seed={self.seed}, {len(self.objects)} objects, "
                f"holding={self.holding!r}, at={self.at!r})")
