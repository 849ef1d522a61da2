"""ALFRED's oracle: FLARE triplets from ``pddl_params`` and the true state.

For the task in ``pddl_params`` it writes the triplet program an ideal FLARE
planner would (pick the target from where it lies, clean/heat/cool it, put
it in the parent; slice first for sliced targets; fetch two for pick-two; fill
the movable receptacle and carry it for movable-receptacle tasks; carry the
object to the lamp for look-at), tries a few groundings (which instance,
which knife drop site, which order), simulates each expansion on a copy of the
world with the env's own :class:`~envs.alfred.executor.AlfredExecutor`, and
keeps the shortest one that satisfies every goal condition. Replanning from
any state works the same way.

:class:`AlfredOraclePlanner` is the registered agent (``alfred_oracle``):
privileged, it returns the expanded low-level plan, then an empty plan (stop)
once the goal holds.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator, Mapping, Sequence

from envs.alfred.executor import AlfredExecutor
from envs.alfred.language import NO_RECEPTACLE, Triplet, expand, parse_low_action
from envs.alfred.plugin import AlfredOracleParams
from envs.household import TaskSpec, World, goal_satisfied
from envs.household.constants import KNIFE_TYPES
from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import INFO_PRIVILEGED, EpisodeSpec

ORACLE_VERSION = "1"
#: Instances tried per choice.
MAX_CANDIDATES = 3
#: Where a knife may be left after slicing, tried in order after its own start receptacle.
KNIFE_DROP_SITES = ("CounterTop", "DiningTable", "SideTable", "Desk", "SinkBasin", "Cabinet", "Drawer")

_TREAT = {
    "pick_clean_then_place_in_recep": "CleanObject",
    "pick_heat_then_place_in_recep": "HeatObject",
    "pick_cool_then_place_in_recep": "CoolObject",
}
_MARK = {"CleanObject": "cleaned", "HeatObject": "heated", "CoolObject": "cooled"}


def source(world: World, obj_id: str) -> str:
    """The receptacle type a Pickup triplet names for ``obj_id``: its innermost closed
    container, else its outermost receptacle; "0" on the floor."""
    closed = world.closed_container(obj_id)
    if closed is not None:
        return world.objects[closed].type
    root = world.root(obj_id)
    return NO_RECEPTACLE if root == obj_id else world.objects[root].type


def _ranked(world: World, ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda k: (world.holding != k, world.closed_container(k) is not None, k))[:MAX_CANDIDATES]


class _Fail(Exception):
    pass


class _Sim:
    def __init__(self, ex: AlfredExecutor, task: TaskSpec, max_len: int) -> None:
        self.ex = ex.copy()
        self.w = self.ex.world
        self.task = task
        self.max_len = max_len
        self.plan: list[str] = []

    def run(self, triplet: Triplet) -> None:
        for step in expand(triplet):
            res = self.ex.execute(step)
            self.plan.append(step.text)
            if not res.ok or len(self.plan) > self.max_len:
                raise _Fail(f"{step.text}: {res.message}")

    def pick(self, obj_id: str) -> str:
        """Pick up ``obj_id`` by its type and where it lies; the grounding may take another
        instance of the type (any will do): returns the one held."""
        if self.w.holding == obj_id:
            return obj_id
        if self.w.holding is not None:
            raise _Fail("hands full")
        obj_type = self.w.objects[obj_id].type
        self.run(Triplet("PickupObject", obj_type, source(self.w, obj_id)))
        held = self.w.holding
        if held is None or self.w.objects[held].type != obj_type:
            raise _Fail(f"picked {held}, wanted a {obj_type}")
        return held


def _programs(ex: AlfredExecutor, task: TaskSpec) -> Iterator[Callable[[_Sim], None]]:
    w = ex.world
    tt = task.task_type
    target = task.target_type
    parent = task.parent_target

    def live(t: str, prop: str = "pickupable") -> list[str]:
        return _ranked(w, [k for k, o in w.objects.items() if o.type == t and getattr(o, prop) and not o.inactive])

    need = 2 if tt == "pick_two_obj_and_place" else 1
    if task.object_sliced and len(live(target)) < need:
        wholes = live(task.object_target, "sliceable")
        knives = [k for t in sorted(KNIFE_TYPES) for k in live(t)]
        for whole, knife in itertools.product(wholes, knives):
            for site in (None, *KNIFE_DROP_SITES):
                def prog(sim: _Sim, whole: str = whole, knife: str = knife, site: str | None = site) -> None:
                    ksrc = source(sim.w, knife)
                    sim.pick(knife)
                    sim.run(Triplet("SliceObject", task.object_target, source(sim.w, whole)))
                    if not sim.w.objects[whole].is_sliced:
                        raise _Fail("sliced another one")
                    drop = site or (ksrc if ksrc != NO_RECEPTACLE else "CounterTop")
                    sim.run(Triplet("PutObject", sim.w.objects[knife].type, drop))
                    sub = oracle_plan(sim.ex, task, max_len=sim.max_len - len(sim.plan))
                    if sub is None:
                        raise _Fail("no continuation")
                    for text in sub:
                        step = parse_low_action(text)
                        assert step is not None
                        if not sim.ex.execute(step).ok:
                            raise _Fail(text)
                        sim.plan.append(text)
                yield prog
        return

    targets = live(target)
    if tt == "look_at_obj_in_light":
        for obj in targets:
            def prog(sim: _Sim, obj: str = obj) -> None:
                sim.pick(obj)
                sim.run(Triplet("ToggleObject", task.toggle_target))
            yield prog
        return

    if tt == "pick_two_obj_and_place":
        for pair in itertools.permutations(targets, 2):
            def prog(sim: _Sim, pair: tuple = pair) -> None:
                for obj in pair:
                    if goal_satisfied(sim.w, task):
                        return
                    sim.pick(obj)
                    sim.run(Triplet("PutObject", target, parent))
            yield prog
        return

    if tt == "pick_and_place_with_movable_recep":
        movables = live(task.mrecep_target)
        for obj, m in itertools.product(targets, movables):
            def obj_first(sim: _Sim, obj: str = obj, m: str = m) -> None:
                held = sim.pick(obj)
                sim.run(Triplet("PutObject", target, task.mrecep_target))
                into = sim.w.objects[held].parent
                if into is None or sim.w.objects[into].type != task.mrecep_target:
                    raise _Fail("did not go into the movable receptacle")
                sim.pick(into)
                sim.run(Triplet("PutObject", task.mrecep_target, parent))

            def staged(sim: _Sim, obj: str = obj, m: str = m) -> None:
                # The movable receptacle lies in a closed one: set it on an open surface first.
                sim.pick(m)
                for site in KNIFE_DROP_SITES[:3]:
                    try:
                        sub = sim.ex.copy()
                        ok = all(sub.execute(step).ok for step in expand(Triplet("PutObject", task.mrecep_target, site)))
                    except ValueError:
                        ok = False
                    if ok:
                        sim.run(Triplet("PutObject", task.mrecep_target, site))
                        break
                else:
                    raise _Fail("nowhere to stage")
                obj_first(sim, obj, m)

            def recep_first(sim: _Sim, obj: str = obj, m: str = m) -> None:
                sim.pick(m)
                sim.run(Triplet("PutObject", task.mrecep_target, parent))
                sim.pick(obj)
                sim.run(Triplet("PutObject", target, task.mrecep_target))
            yield obj_first
            yield recep_first
            if w.closed_container(m) is not None:
                yield staged
        return

    treat = _TREAT.get(tt)
    for obj in targets:
        def prog(sim: _Sim, obj: str = obj) -> None:
            sim.pick(obj)
            if treat is not None and not getattr(sim.w.objects[obj], _MARK[treat]):
                sim.run(Triplet(treat, target))
            sim.run(Triplet("PutObject", target, parent))
        yield prog


def oracle_plan(ex: AlfredExecutor, task: TaskSpec, max_len: int = 200) -> list[str] | None:
    """The shortest simulated low-level plan (strings) reaching ``task`` from ``ex``'s
    state; ``[]`` when the goal holds already; None when no candidate works."""
    if goal_satisfied(ex.world, task):
        return []
    best: list[str] | None = None
    # Replanning mid-way can find receptacles left open, which FLARE's expansions would
    # try to open again (a failed action): also try closing them first.
    opened = [o.type for o in ex.world.objects.values() if o.openable and o.is_open and not ex.world.is_held(o.id)]
    preludes: list[list[str]] = [[]] + ([sorted(set(opened))] if opened else [])
    for prelude in preludes:
        for prog in _programs(ex, task):
            limit = max_len if best is None else min(max_len, len(best) - 1)
            if limit <= 0:
                break
            sim = _Sim(ex, task, limit)
            try:
                for t in prelude:
                    sim.run(Triplet("CloseObject", t))
                prog(sim)
            except _Fail:
                continue
            if goal_satisfied(sim.w, task) and (best is None or len(sim.plan) < len(best)):
                best = sim.plan
    return best


class AlfredOraclePlanner:
    """Privileged ALFRED planner: the oracle's expanded plan from the current true state."""

    name = "alfred_oracle"
    privileged = True
    action_kinds = frozenset({"text"})
    reads_images = False

    #: The parameter declaration (envs/alfred/plugin.py).
    Params = AlfredOracleParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        self.max_plan_length = self.params.max_plan_length

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": ORACLE_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[str]]:
        return [self._plan(r) for r in requests]

    def _plan(self, request: AgentRequest) -> list[str]:
        state = request.info.get(INFO_PRIVILEGED)
        if not isinstance(state, Mapping) or not isinstance(state.get("world"), World):
            raise ValueError("the ALFRED oracle needs info['privileged_state'] from the alfred suite "
                             "(reset with privileged=True)")
        world: World = state["world"]
        if world.task is None:
            return []  # a test-split episode has no goal: stop at once
        ex = AlfredExecutor(world.copy(), state.get("recent"), set(state.get("placed", ())))
        plan = oracle_plan(ex, world.task, max_len=self.max_plan_length)
        return list(plan) if plan else []
