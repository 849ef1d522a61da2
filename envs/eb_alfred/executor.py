"""EB-ALFRED's execution semantics for skills, on the household engine.

Behaviour follows EmbodiedBench ``embodiedbench/envs/eb_alfred/thor_connector.py``
(``ThorConnector.llm_skill_interact``), first public release:

- ``find a X`` teleports to face X; it also remembers X as the receptacle for
  the next ``put down``. Every skill other than ``put down`` and ``open``
  forgets that receptacle.
- ``put down the object in hand`` puts into the remembered receptacle, or
  drops when there is none; when that receptacle refuses, the next-closest other
  instance of its type is tried (AI2-THOR's forced put: reach is not needed).
  Puts are counted per receptacle; a failed put on a receptacle that has seen 3
  or more puts drops the object instead (and still fails: "The robot dropped the
  object instead.").
- ``find`` / ``open`` / ``close`` with an instance name (``Cabinet_2``, or a bare
  ``Cabinet`` in a scene with several) address exactly that instance
  (EBAlfEnv.py maps the last word through ``name_to_id_dict``); every other
  lookup takes the "nearest" object of the type. AI2-THOR's nearest-visible
  rule becomes, on the engine: sliced pieces first once they exist, then
  objects in reach, then objects not inside a closed receptacle, then (for
  StoveBurner) empty ones, then engine-id order.
- ``slice the X`` sends a bare ``SliceObject`` (``ThorConnector.slice``): no knife
  in hand is needed, as AI2-THOR's own action needs none; ALFRED's knife check
  sits in ``to_thor_api_exec``, which EmbodiedBench does not call.
- A sliced object keeps its parent's name: ``Apple`` addresses ``AppleSliced``
  pieces; ``Sink`` / ``Bathtub`` address the SinkBasin / BathtubBasin.

The ``thor`` backend does not use these rules: it issues EmbodiedBench's own
controller calls (:mod:`envs.eb_alfred.thor_skills`).

EmbodiedBench keeps its "something was sliced" flag for the life of the
simulator process (never reset between episodes); here it is per episode and
equivalent to "pieces exist", since only slicing creates pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envs.household import ActionResult, HouseholdEngine, World
from envs.eb_alfred.skills import (
    BASIN_ALIASES, CLOSE, DROP_VERB, FIND, OPEN, PICK_UP, PUT, SLICE, SLICED_PIECE, TURN_OFF, TURN_ON,
    SceneVocabulary, Skill, split_instance,
)

#: A failed put on a receptacle with this many puts or more drops the object
#: (EmbodiedBench thor_connector.py: ``put_count_dict[receptacle] >= 3``).
PUT_FAILS_BEFORE_DROP = 3


@dataclass
class ExecutorState:
    """The connector's memory besides the world (copied with it for planning)."""

    cur_receptacle: str | None = None
    put_counts: dict[str, int] = field(default_factory=dict)

    def copy(self) -> "ExecutorState":
        return ExecutorState(self.cur_receptacle, dict(self.put_counts))


class SkillExecutor:
    """Runs parsed skills on a world (mutated in place), as EB-ALFRED would."""

    def __init__(self, world: World, vocab: SceneVocabulary, state: ExecutorState | None = None) -> None:
        self.world = world
        self.vocab = vocab
        self.engine = HouseholdEngine(world)
        self.state = state or ExecutorState()
        self._types = {o.type.casefold(): o.type for o in world.objects.values()}

    def copy(self) -> "SkillExecutor":
        """An independent executor on a copy of the world (for look-ahead)."""
        return SkillExecutor(self.world.copy(), self.vocab, self.state.copy())

    # --- name resolution -------------------------------------------------------
    def types_for(self, name: str) -> tuple[str, ...]:
        """Engine types a bare skill name addresses, most specific first."""
        base = name
        folded = base.casefold()
        types: list[str] = []
        for alias, basin in BASIN_ALIASES.items():
            if folded == alias.casefold():
                types.append(basin)
        for sliceable, piece in SLICED_PIECE.items():
            if folded == sliceable.casefold():
                types.append(piece)
        real = self._types.get(folded) or next((t for t in self._types.values() if t.casefold() == folded), None)
        if real is None:
            real = base
        types.append(real)
        return tuple(dict.fromkeys(types))

    def _rank(self, obj_id: str, pieces_first: bool) -> tuple:
        """Sort key standing in for AI2-THOR's distance/visibility ranking."""
        world = self.world
        o = world.objects[obj_id]
        in_closed = self.world.closed_container(obj_id) is not None
        occupied = o.type == "StoveBurner" and bool(world.contents(obj_id))
        at = world.at
        if obj_id == at:
            proximity = 0  # the object the agent faces
        elif at is not None and at in world.objects and world.is_inside(obj_id, at) and not in_closed:
            proximity = 1  # inside what the agent faces
        elif world.in_reach(obj_id) and not in_closed:
            proximity = 2
        else:
            proximity = 3
        return (
            0 if (pieces_first and o.is_piece) else 1,
            proximity,
            1 if in_closed else 0,
            1 if occupied else 0,
            split_instance(obj_id),
        )

    def resolve(self, name: str, *, exact_instance: bool, prop: str | None = None) -> str | None:
        """The engine id a skill's object name addresses now, or None."""
        world = self.world
        if exact_instance or split_instance(name)[1] > 1:
            oid = self.vocab.instance(name)
            if oid is not None and oid in world.objects and not world.objects[oid].inactive:
                return oid
            if oid is not None:
                # The instance was sliced away: its name now reaches its pieces.
                name = split_instance(oid)[0]
            elif oid is None and split_instance(name)[1] > 1:
                return None
        types = self.types_for(name)
        cands = [
            k for k, o in world.objects.items()
            if o.type in types and not o.inactive and not world.is_held(k) and (prop is None or getattr(o, prop))
        ]
        if not cands:
            return None
        pieces_first = any(world.objects[k].is_piece for k in cands)
        # Alias order: a basin beats the Sink/Bathtub fixture, pieces beat the whole object.
        order = {t: i for i, t in enumerate(types)}
        return min(cands, key=lambda k: (order[world.objects[k].type] if not pieces_first else 0,
                                         *self._rank(k, pieces_first)))

    # --- execution ---------------------------------------------------------------
    def execute(self, skill: Skill) -> ActionResult:
        """Execute one skill; the message is EB-ALFRED-style failure text ("" on success)."""
        if skill.verb not in (PUT, OPEN):
            self.state.cur_receptacle = None
        handler = {
            FIND: self._find, PICK_UP: self._pick_up, PUT: self._put_down, DROP_VERB: self._drop,
            OPEN: self._open, CLOSE: self._close, TURN_ON: self._turn_on, TURN_OFF: self._turn_off,
            SLICE: self._slice,
        }[skill.verb]
        return handler(skill.target)

    def _name(self, obj_id: str) -> str:
        return self.vocab.display_name(self.world, obj_id)

    def _find(self, name: str | None) -> ActionResult:
        assert name is not None
        target = self.resolve(name, exact_instance=True)
        if target is None:
            return ActionResult(False, f"Cannot find {name}. This object may not exist in this scene. "
                                       "Try to explore other instances instead.")
        self.state.cur_receptacle = target
        res = self.engine.goto(target)
        return res if res.ok else ActionResult(False, f"Cannot move to {name}")

    def _pick_up(self, name: str | None) -> ActionResult:
        """thor_connector.py:297-336 ``pick``: an object that is not visible and lies in a
        receptacle reports where it is (EBAlfEnv.py:356-362 names the receptacle); otherwise
        the pickup is tried and a failure reports what the hand holds."""
        assert name is not None
        world = self.world
        target = self.resolve(name, exact_instance=False, prop="pickupable")
        if target is None:
            return ActionResult(False, f"Cannot find {name} to pick up. Find the object before picking up it")
        closed = self.world.closed_container(target)
        visible = world.in_reach(target) and closed is None
        parent = world.objects[target].parent
        if not visible and parent is not None:
            where = self._name(closed or parent)
            return ActionResult(False, f"{name} is not visible because it is in {where}. "
                                       "Go there to pick the object instead.")
        res = self.engine.pickup(target)
        if res.ok:
            return res
        if world.holding is None:
            return ActionResult(False, "Robot is not holding any object")
        return ActionResult(False, f"Robot is currently holding {world.objects[world.holding].type}")

    def _type_name(self, obj_id: str) -> str:
        """The receptacle name EB-ALFRED's put messages use: the AI2-THOR id's first field
        (``Sink|...|SinkBasin`` -> ``Sink``), never an instance name."""
        otype = self.world.objects[obj_id].type
        return next((alias for alias, basin in BASIN_ALIASES.items() if basin == otype), otype)

    def _next_closest(self, recep: str) -> str | None:
        """Another instance of ``recep``'s type, the closest first (thor_connector.py:356-375:
        the second round excludes the receptacle just tried)."""
        world = self.world
        rtype = world.objects[recep].type
        cands = [k for k, o in world.objects.items()
                 if o.type == rtype and k != recep and not o.inactive and not world.is_held(k)]
        return min(cands, key=lambda k: self._rank(k, False)) if cands else None

    def _put_down(self, _: str | None) -> ActionResult:
        """thor_connector.py:87-109 and ``put`` (338-426): count the put, try the found
        receptacle, then the next-closest instance of its type; a third failing put on the
        same receptacle drops the object."""
        world = self.world
        recep = self.state.cur_receptacle
        if recep is None:
            return self._drop(None)
        self.state.put_counts[recep] = self.state.put_counts.get(recep, 0) + 1
        if world.holding is None:
            msg = "Robot is not holding any object"
        else:
            if self.engine.put(recep).ok:
                return ActionResult(True, "")
            other = self._next_closest(recep)
            if other is not None and self.engine.put(other, force=True).ok:
                return ActionResult(True, "")
            check = "the receptacle" if other is not None else "whether the receptacle"
            msg = (f"Putting the object on {self._type_name(recep)} failed. First check {check} is open or not. "
                   "Also try other instances of the receptacle")
        if self.state.put_counts[recep] >= PUT_FAILS_BEFORE_DROP:
            self.engine.drop()
            msg += ". The robot dropped the object instead."
        return ActionResult(False, msg)

    def _drop(self, _: str | None) -> ActionResult:
        res = self.engine.drop()
        return res if res.ok else ActionResult(False, "Robot is not holding any object")

    def _open(self, name: str | None) -> ActionResult:
        assert name is not None
        target = self.resolve(name, exact_instance=True)
        if target is None:
            return ActionResult(False, f"Cannot find {name} to open. Find the object before opening it")
        o = self.world.objects[target]
        res = self.engine.open(target)
        if res.ok:
            return res
        if o.openable and o.is_open:
            # thor_connector.py:451-453, 476-477: the message names the type (the id's first field).
            return ActionResult(False, f"Open action failed. The {self._type_name(target)} is already open")
        return ActionResult(False, "Open action failed.")

    def _close(self, name: str | None) -> ActionResult:
        assert name is not None
        target = self.resolve(name, exact_instance=True)
        if target is None:
            return ActionResult(False, f"Cannot find {name} to close")
        o = self.world.objects[target]
        res = self.engine.close(target)
        if res.ok:
            return res
        if o.openable and not o.is_open:
            # thor_connector.py:499-501, 516-518: the type, as for open.
            return ActionResult(False, f"Close action failed. The {self._type_name(target)} is already closed")
        return ActionResult(False, "Close action failed")

    def _toggle(self, name: str | None, on: bool) -> ActionResult:
        assert name is not None
        word = "on" if on else "off"
        target = self.resolve(name, exact_instance=False, prop="toggleable")
        if target is None:
            return ActionResult(False, f"Cannot find {name} to turn {word}")
        res = self.engine.toggle_on(target) if on else self.engine.toggle_off(target)
        return res if res.ok else ActionResult(False, f"Turn {word} action failed")

    def _turn_on(self, name: str | None) -> ActionResult:
        return self._toggle(name, True)

    def _turn_off(self, name: str | None) -> ActionResult:
        return self._toggle(name, False)

    def _slice(self, name: str | None) -> ActionResult:
        assert name is not None
        target = self.resolve(name, exact_instance=False, prop="sliceable")
        if target is None:
            return ActionResult(False, f"Cannot find {name} to slice")
        # A bare SliceObject, no knife needed (thor_connector.py:560-574; AI2-THOR's own
        # rule, envs/household/engine.py).
        res = self.engine.slice(target, knife_required=False)
        return res if res.ok else ActionResult(False, "Slice action failed")
