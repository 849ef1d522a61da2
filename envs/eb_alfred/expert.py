"""A skill-level expert for EB-ALFRED on the household backend.

It builds plans in the skill language from the true state, trying a small set
of candidate choices (which target instance, which parent receptacle, which
knife, which movable receptacle, which order) and simulating each on a copy of
the world with the same :class:`~envs.eb_alfred.executor.SkillExecutor` the env
uses. The shortest plan that reaches the goal wins, so every returned plan is
valid by construction. It plans from any state (objects already held, sliced,
heated, placed ...), which is what an oracle needs to replan.

Its plan length from the initial state is the episode's expert length L*.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator

from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.skills import DROP, PUT_DOWN, SceneVocabulary, parse_skill, split_instance
from envs.household import TaskSpec, World, goal_satisfied
from envs.household.constants import KNIFE_TYPES

#: Candidates tried per choice (targets, parents, knives, movable receptacles).
MAX_CANDIDATES = 3

_TREATMENT = {
    "pick_clean_then_place_in_recep": "cleaned",
    "pick_heat_then_place_in_recep": "heated",
    "pick_cool_then_place_in_recep": "cooled",
}


class _Fail(Exception):
    """This candidate plan does not work."""


class _Done(Exception):
    """The goal is reached."""


class _Sim:
    """Executes skills on a private copy, recording the plan; raises on failure/success."""

    def __init__(self, executor: SkillExecutor, task: TaskSpec, max_len: int) -> None:
        self.ex = executor.copy()
        self.w: World = self.ex.world
        self.task = task
        self.max_len = max_len
        self.plan: list[str] = []

    def do(self, action: str) -> None:
        skill = parse_skill(action)
        assert skill is not None, action
        res = self.ex.execute(skill)
        self.plan.append(action)
        if not res.ok or len(self.plan) > self.max_len:
            raise _Fail(action)
        if goal_satisfied(self.w, self.task):
            raise _Done

    # --- naming -----------------------------------------------------------------
    def name(self, obj_id: str) -> str:
        return self.ex.vocab.display_name(self.w, obj_id)

    def base(self, obj_id: str) -> str:
        return split_instance(self.name(obj_id))[0]

    # --- building blocks ---------------------------------------------------------
    def goto(self, obj_id: str) -> None:
        """``find`` exactly ``obj_id`` (fails if no name addresses it)."""
        name = self.name(obj_id)
        if self.ex.resolve(name, exact_instance=True) != obj_id:
            raise _Fail(f"cannot address {obj_id}")
        self.do(f"find a {name}")

    def open_if_closed(self, obj_id: str) -> None:
        o = self.w.objects[obj_id]
        if o.openable and not o.is_open:
            name = self.name(obj_id)
            if self.ex.resolve(name, exact_instance=True) != obj_id:
                raise _Fail(f"cannot address {obj_id}")
            self.do(f"open the {name}")

    def empty_hands(self, keep: str | None = None) -> None:
        if self.w.holding is not None and self.w.holding != keep:
            self.do(DROP)

    def acquire(self, obj_id: str) -> None:
        """Hold ``obj_id``: open its closed container, go where a ``pick up`` reaches it, pick it."""
        w = self.w
        if w.holding == obj_id:
            return
        self.empty_hands()
        closed = self.ex.world.closed_container(obj_id)
        if closed is not None:
            if w.at != closed:
                self.goto(closed)
            self.open_if_closed(closed)
            if self.ex.world.closed_container(obj_id) is not None:
                raise _Fail("nested closed containers")
        base = self.base(obj_id)
        if not self._pickable_here(base, obj_id):
            name = self.name(obj_id)
            if self.ex.resolve(name, exact_instance=True) == obj_id:
                self.do(f"find a {name}")
            else:
                root = w.root(obj_id)
                if root == obj_id:
                    raise _Fail(f"cannot reach {obj_id}")
                self.goto(root)
            if not self._pickable_here(base, obj_id):
                raise _Fail(f"pick up would not take {obj_id}")
        self.do(f"pick up the {base}")
        if w.holding != obj_id:
            raise _Fail("picked the wrong object")

    def _pickable_here(self, base: str, obj_id: str) -> bool:
        """True if ``pick up the <base>`` would take ``obj_id`` now."""
        return (self.ex.resolve(base, exact_instance=False, prop="pickupable") == obj_id
                and self.w.in_reach(obj_id) and self.ex.world.closed_container(obj_id) is None)

    def place(self, recep_id: str) -> None:
        """Put the held object into ``recep_id``."""
        held = self.w.holding
        if held is None:
            raise _Fail("nothing to place")
        self.goto(recep_id)
        self.open_if_closed(recep_id)
        self.do(PUT_DOWN)
        if self.w.objects[held].parent != recep_id:
            raise _Fail("put went elsewhere")

    def toggle_on_here(self, source_type: str, name: str) -> None:
        """Turn on the reachable ``source_type`` object (off first if it is on)."""
        target = self.ex.resolve(name, exact_instance=False, prop="toggleable")
        if target is None or self.w.objects[target].type != source_type or not self.w.in_reach(target):
            raise _Fail(f"no reachable {source_type}")
        if self.w.objects[target].is_on:
            self.do(f"turn off the {name}")
        self.do(f"turn on the {name}")

    def treat(self, obj_id: str, attr: str) -> None:
        """Clean / heat / cool the held ``obj_id`` by ALFRED's wrapper rules, then hold it again."""
        w = self.w
        if attr == "cleaned":
            basins = [k for k, o in w.objects.items() if o.type == "SinkBasin"]
            for basin in basins:  # the first basin a faucet feeds
                if any(basin in w.basins_of(f) for f in w.of_type("Faucet")):
                    break
            else:
                raise _Fail("no faucet feeds a basin")
            self.place(basin)
            self.toggle_on_here("Faucet", "Faucet")
        elif attr == "heated":
            micro = self._first("Microwave")
            self.place(micro)
            # A Microwave cannot be turned on while open (AI2-THOR; ALFRED's gold plans close it first).
            self.do(f"close the {self.name(micro)}")
            self.toggle_on_here("Microwave", self.name(micro))
        else:
            fridge = self._first("Fridge")
            self.place(fridge)
            self.do(f"close the {self.name(fridge)}")
            self.do(f"open the {self.name(fridge)}")
        if not getattr(w.objects[obj_id], attr):
            raise _Fail(f"{obj_id} not {attr}")
        self.acquire(obj_id)

    def _first(self, obj_type: str) -> str:
        ids = self.w.of_type(obj_type)
        if not ids:
            raise _Fail(f"no {obj_type}")
        return ids[0]

    def slice_one(self, whole_id: str, knife_id: str) -> None:
        """Slice ``whole_id`` with ``knife_id`` in hand, then free the hand."""
        self.acquire(knife_id)
        closed = self.ex.world.closed_container(whole_id)
        if closed is not None:
            self.goto(closed)
            self.open_if_closed(closed)
        base = self.base(whole_id)
        if self.ex.resolve(base, exact_instance=False, prop="sliceable") != whole_id or not self.w.in_reach(whole_id):
            self.goto(whole_id)
        self.do(f"slice the {base}")
        if not self.w.objects[whole_id].is_sliced:
            raise _Fail("did not slice")
        self.do(DROP)


def _rank_objects(ex: SkillExecutor, ids: list[str]) -> list[str]:
    """Held first, then reachable/open, then by id; at most MAX_CANDIDATES."""
    w = ex.world

    def key(k: str) -> tuple:
        return (w.holding != k, ex.world.closed_container(k) is not None, split_instance(k))

    return sorted(ids, key=key)[:MAX_CANDIDATES]


def _parents(ex: SkillExecutor, parent_type: str) -> list[str]:
    w = ex.world
    ids = [k for k, o in w.objects.items() if o.type == parent_type and o.receptacle]
    if not ids:  # ALFRED matches names as substrings of ids
        ids = [k for k, o in w.objects.items() if parent_type in o.type and o.receptacle]
    return sorted(ids, key=lambda k: (w.objects[k].openable and not w.objects[k].is_open, split_instance(k)))


def _candidate_programs(ex: SkillExecutor, task: TaskSpec) -> Iterator[Callable[[_Sim], None]]:
    """Candidate plan builders for ``task`` from ``ex``'s state."""
    w = ex.world
    tt = task.task_type
    target = task.target_type
    whole = task.object_target
    targets = _rank_objects(ex, [k for k, o in w.objects.items()
                                 if o.type == target and o.pickupable and not o.inactive])
    wholes = _rank_objects(ex, [k for k, o in w.objects.items()
                                if o.type == whole and o.sliceable and not o.is_sliced])
    knives = _rank_objects(ex, [k for k, o in w.objects.items() if o.type in KNIFE_TYPES])
    parents = _parents(ex, task.parent_target)[:MAX_CANDIDATES] if task.parent_target else []

    # Sliced tasks whose pieces do not exist yet: slice first, then plan on pieces.
    need = 2 if tt == "pick_two_obj_and_place" else 1
    if task.object_sliced and len(targets) < need:
        for whole_id, knife in itertools.product(wholes, knives):
            def prog(sim: _Sim, whole_id: str = whole_id, knife: str = knife) -> None:
                sim.slice_one(whole_id, knife)
                _continue_with(sim, task)
            yield prog
        return

    if tt == "look_at_obj_in_light":
        lamps = [k for k, o in w.objects.items() if o.type == task.toggle_target and o.toggleable]
        for obj, lamp in itertools.product(targets, lamps):
            def prog(sim: _Sim, obj: str = obj, lamp: str = lamp) -> None:
                sim.acquire(obj)
                sim.goto(lamp)
                if not sim.w.objects[lamp].is_on:
                    sim.do(f"turn on the {sim.base(lamp)}")
            yield prog
        return

    if tt == "pick_two_obj_and_place":
        for parent in parents:
            inside = [t for t in targets if w.is_inside(t, parent)]
            rest = [t for t in targets if t not in inside]
            missing = max(0, 2 - len(inside))
            for objs in itertools.permutations(rest, missing):
                def prog(sim: _Sim, objs: tuple = objs, parent: str = parent) -> None:
                    for obj in objs:
                        sim.acquire(obj)
                        sim.place(parent)
                yield prog
        return

    if tt == "pick_and_place_with_movable_recep":
        movables = _rank_objects(ex, [k for k, o in w.objects.items() if o.type == task.mrecep_target])
        for obj, mrecep, parent in itertools.product(targets, movables, parents):
            def obj_first(sim: _Sim, obj: str = obj, m: str = mrecep, parent: str = parent) -> None:
                if not sim.w.is_inside(obj, m):
                    closed = sim.ex.world.closed_container(m)
                    if closed is not None and sim.w.holding is None:
                        sim.goto(closed)
                        sim.open_if_closed(closed)
                    sim.acquire(obj)
                    sim.place(m)
                sim.acquire(m)
                sim.place(parent)

            def recep_first(sim: _Sim, obj: str = obj, m: str = mrecep, parent: str = parent) -> None:
                if not sim.w.is_inside(m, parent):
                    sim.acquire(m)
                    sim.place(parent)
                sim.acquire(obj)
                sim.place(m)
            yield obj_first
            yield recep_first
        return

    attr = _TREATMENT.get(tt)
    for obj, parent in itertools.product(targets, parents):
        def prog(sim: _Sim, obj: str = obj, parent: str = parent) -> None:
            sim.acquire(obj)
            if attr is not None and not getattr(sim.w.objects[obj], attr):
                sim.treat(obj, attr)
            sim.place(parent)
        yield prog


def _continue_with(sim: _Sim, task: TaskSpec) -> None:
    """After slicing inside a candidate, finish with the best continuation."""
    sub = expert_plan(sim.ex, task, max_len=sim.max_len - len(sim.plan))
    if sub is None:
        raise _Fail("no continuation")
    for action in sub:
        sim.do(action)
    raise _Fail("continuation did not reach the goal")


def expert_plan(executor: SkillExecutor, task: TaskSpec, max_len: int = 60) -> list[str] | None:
    """The shortest candidate plan that satisfies ``task`` from ``executor``'s state.

    ``[]`` when the goal already holds; None when no candidate works.
    """
    if goal_satisfied(executor.world, task):
        return []
    best: list[str] | None = None
    for prog in _candidate_programs(executor, task):
        limit = max_len if best is None else min(max_len, len(best) - 1)
        if limit <= 0:
            break
        sim = _Sim(executor, task, limit)
        try:
            prog(sim)
        except _Done:
            if best is None or len(sim.plan) < len(best):
                best = list(sim.plan)
        except _Fail:
            pass
    return best


def plan_from_world(world: World, task: TaskSpec, vocab: SceneVocabulary | None = None,
                    max_len: int = 60) -> list[str] | None:
    """Convenience: an expert plan from a bare world (fresh connector memory)."""
    vocab = vocab or SceneVocabulary(world)
    return expert_plan(SkillExecutor(world, vocab, ExecutorState()), task, max_len=max_len)
