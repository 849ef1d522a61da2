"""Low-level ALFRED steps on the household engine, with class-level grounding.

A step names an object *type*; the executor grounds it to an instance the way
a map-based ALFRED agent (FLARE's lineage) would, with the privileged
knowledge a teleport navigation implies:

- ``GotoLocation T [H]`` faces an instance of T (a SinkBasin, a Microwave, an
  Apple). With empty hands (fetching): instances holding an H first (a
  CounterTop with an Apple), then ones the agent has not put somewhere already
  (so "fetch the second one" finds a new one), then ones not inside a closed
  receptacle, then the most recently handled, then engine-id order. Carrying
  something: the most recently handled instance first (the Bowl just filled,
  the Sofa holding the first KeyChain), then H-holding, open, id order.
- interactions act on an instance of the type in reach of what the agent
  faces (``World.in_reach``): the faced object first, then the most recently
  handled, then the one not yet placed by the agent, then id order.

Every failure is an ALFRED API failure (counted toward the 10-failure limit).
"""

from __future__ import annotations

from envs.household import ActionResult, HouseholdEngine, World
from envs.alfred.language import GOTO, LowAction

#: Names a planner may use for a type that the engine spells otherwise.
ALIASES = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}


class AlfredExecutor:
    """Runs low-level steps on ``world`` (mutated in place)."""

    def __init__(self, world: World, recent: list[str] | None = None, placed: set[str] | None = None,
                 engine: object | None = None) -> None:
        self.world = world
        #: the household engine, or any engine with its primitives (the AI2-THOR one,
        #: :class:`envs.thor.engine.ThorEngine`, which updates ``world`` in place).
        self.engine = engine if engine is not None else HouseholdEngine(world)
        #: ids the agent picked up or put into, most recent last.
        self.recent: list[str] = list(recent or [])
        #: ids the agent put somewhere.
        self.placed: set[str] = set(placed or ())
        self._types = {o.type.casefold(): o.type for o in world.objects.values()}

    def copy(self) -> "AlfredExecutor":
        """A look-ahead copy on the household engine (whatever engine this one drives)."""
        return AlfredExecutor(self.world.copy(), self.recent, self.placed)

    def canonical(self, name: str) -> str:
        name = ALIASES.get(name, name)
        return self._types.get(name.casefold(), name)

    def _touch(self, obj_id: str) -> None:
        if obj_id in self.recent:
            self.recent.remove(obj_id)
        self.recent.append(obj_id)

    def _recency(self, obj_id: str) -> int:
        return -self.recent.index(obj_id) if obj_id in self.recent else 1

    def _instances(self, obj_type: str) -> list[str]:
        w = self.world
        return [k for k, o in w.objects.items() if o.type == obj_type and not o.inactive and not w.is_held(k)]

    def _holds(self, recep_id: str, obj_type: str) -> bool:
        w = self.world
        return any(w.objects[k].type == obj_type and not w.objects[k].inactive
                   for k in w.contents(recep_id, recursive=True))

    def ground_goto(self, obj_type: str, hint: str | None) -> str | None:
        w = self.world
        cands = self._instances(obj_type)
        if not cands:
            return None

        closed = {k: w.closed_container(k) is not None for k in cands}
        hinted = {k: bool(hint) and self._holds(k, hint) for k in cands}
        if w.holding is not None:
            # Carrying something to a place: the place last used first (the Bowl just
            # filled, the Sofa already holding the first KeyChain).
            def key(k: str) -> tuple:
                return (self._recency(k), not hinted[k], closed[k], _id_order(k))
        else:
            # Fetching: where the hint is, and never what the agent already put away.
            def key(k: str) -> tuple:
                return (not hinted[k], k in self.placed, closed[k], self._recency(k), _id_order(k))

        return min(cands, key=key)

    def ground_here(self, obj_type: str, prop: str | None = None) -> str | None:
        w = self.world
        cands = [k for k in self._instances(obj_type) if w.in_reach(k) and (prop is None or getattr(w.objects[k], prop))]
        if not cands:
            return None
        return min(cands, key=lambda k: (0 if k == w.at else 1, self._recency(k), 1 if k in self.placed else 0,
                                         _id_order(k)))

    def execute(self, step: LowAction) -> ActionResult:
        w, e = self.world, self.engine
        t = self.canonical(step.obj)
        if step.action == GOTO:
            target = self.ground_goto(t, self.canonical(step.hint) if step.hint else None)
            if target is None:
                return ActionResult(False, f"No {step.obj} can be found in this scene.")
            return e.goto(target)
        if step.action == "PutObject":
            target = self.ground_here(t, "receptacle")
            if target is None:
                return ActionResult(False, f"No {step.obj} is in reach to put into.")
            held = w.holding
            res = e.put(target)
            if res.ok and held is not None:
                self.placed.add(held)
                self._touch(target)
            return res
        prop = {"PickupObject": "pickupable", "OpenObject": "openable", "CloseObject": "openable",
                "ToggleObjectOn": "toggleable", "ToggleObjectOff": "toggleable",
                "SliceObject": "sliceable"}[step.action]
        target = self.ground_here(t, prop)
        if target is None:
            return ActionResult(False, f"No {step.obj} is in reach.")
        res = {
            "PickupObject": e.pickup, "OpenObject": e.open, "CloseObject": e.close,
            "ToggleObjectOn": e.toggle_on, "ToggleObjectOff": e.toggle_off, "SliceObject": e.slice,
        }[step.action](target)
        if res.ok and step.action == "PickupObject":
            self.placed.discard(target)
            self._touch(target)
        return res


def _id_order(obj_id: str) -> tuple[str, int]:
    base, _, num = obj_id.rpartition("_")
    return (base, int(num)) if num.isdigit() else (obj_id, 0)
