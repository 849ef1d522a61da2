"""Seeded generator of EB-ALFRED-style episodes on ALFRED floor plans.

``seen`` draws from ALFRED's training floor plans, ``unseen`` from ALFRED's
valid_unseen floor plans (:data:`~envs.eb_alfred.protocol.VALID_UNSEEN_FLOOR_PLANS`).
A task is only proposed where the floor plan can host it: the task type is in
ALFRED's ``GOALS_VALID`` for the room type, every type it needs is in the floor
plan's inventory, the object may go in the parent (and movable receptacle) per
``VAL_RECEPTACLE_OBJECTS``, clean/heat/cool targets are ``Cleanable`` /
``Heatable`` / ``Coolable``, and every object is nameable in EB-ALFRED's skill
language. The built world is then checked with the skill-level expert
(solvable within the step limit); a proposal that fails is redrawn, so the
same (split, count, seed) always gives the same episodes.
"""

from __future__ import annotations

import functools
import random
from functools import lru_cache

from envs.eb_alfred.expert import plan_from_world
from envs.eb_alfred.language import make_instruction
from envs.eb_alfred.protocol import (
    LONG_HORIZON_TASK_TYPES, MAX_STEPS, STYLES, TEST_UNSEEN_FLOOR_PLANS, VALID_UNSEEN_FLOOR_PLANS,
)
from envs.eb_alfred.skills import BASIN_ALIASES, FIND_OBJECTS, PICKUP_OBJECTS, SLICE_OBJECTS, TOGGLE_OBJECTS
from envs.eb_alfred.episodes import SUITE_NAME
from envs.household import (
    SceneError, TaskSpec, alfred_constants, all_floor_plans, build_world, floor_plan_inventory, goal_condition_total,
)
from envs.household.constants import TASK_TYPES
from harness.types import EpisodeSpec, LazyEpisodes

#: Share of proposals that use a sliced target where one is possible.
SLICED_SHARE = 0.3
#: Proposals tried per episode before giving up (a bug, not a data condition).
MAX_TRIES = 200

_TREATMENT_CLASS = {
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}
#: Skill-language names of the types a parent may be (basins via their aliases).
_FINDABLE = frozenset(FIND_OBJECTS) | frozenset(BASIN_ALIASES.values())


def floor_plans(split: str) -> tuple[int, ...]:
    """Floor plans of a generated split (KeyError for another name)."""
    if split == "unseen":
        return VALID_UNSEEN_FLOOR_PLANS
    if split == "seen":
        held_out = set(VALID_UNSEEN_FLOOR_PLANS) | set(TEST_UNSEEN_FLOOR_PLANS)
        return tuple(n for n in all_floor_plans() if n not in held_out)
    raise KeyError(split)


def _propose(rng: random.Random, plans: tuple[int, ...], task_type: str) -> tuple[int, TaskSpec] | None:
    """One candidate (floor plan, task) of ``task_type``, or None if the draw cannot host it."""
    consts = alfred_constants()
    vro = consts.val_receptacle_objects
    rooms = consts.goals_valid[task_type]
    fp = rng.choice([n for n in plans if floor_plan_inventory(n).room_type in rooms] or [None])
    if fp is None:
        return None
    inv = floor_plan_inventory(fp)
    present = set(inv.object_types)
    pickables = sorted(t for t in present if t in PICKUP_OBJECTS and t in consts.pickupable)
    statics = sorted({t for t, _ in inv.receptacles} & _FINDABLE)
    if task_type in _TREATMENT_CLASS:
        allowed = consts.val_action_objects[_TREATMENT_CLASS[task_type]]
        pickables = [t for t in pickables if t in allowed]
    sliced = False
    can_slice = (task_type != "look_at_obj_in_light" and ({"Knife", "ButterKnife"} & present))
    sliceables = [t for t in pickables if t in SLICE_OBJECTS]
    if can_slice and sliceables and rng.random() < SLICED_SHARE:
        pickables, sliced = sliceables, True
    if not pickables:
        return None
    obj = rng.choice(pickables)
    goal_type = obj + "Sliced" if sliced else obj
    if task_type == "look_at_obj_in_light":
        lamps = sorted(t for t in present if t in ("DeskLamp", "FloorLamp") and t in TOGGLE_OBJECTS)
        if not lamps:
            return None
        return fp, TaskSpec(task_type, obj, "", toggle_target=rng.choice(lamps))
    if task_type == "pick_and_place_with_movable_recep":
        movables = sorted(m for m in consts.movable_receptacles
                          if m in present and m in PICKUP_OBJECTS and goal_type in vro.get(m, ()) and m != obj)
        if not movables:
            return None
        mrecep = rng.choice(movables)
        parents = [p for p in statics if mrecep in vro.get(p, ())]
        if not parents:
            return None
        return fp, TaskSpec(task_type, obj, rng.choice(parents), mrecep_target=mrecep, object_sliced=sliced)
    parents = [p for p in statics if goal_type in vro.get(p, ())]
    if task_type == "pick_heat_then_place_in_recep":
        parents = [p for p in parents if p != "Microwave"]
    if task_type == "pick_cool_then_place_in_recep":
        parents = [p for p in parents if p != "Fridge"]
    if task_type == "pick_clean_then_place_in_recep":
        parents = [p for p in parents if p != "SinkBasin"]
    if not parents:
        return None
    return fp, TaskSpec(task_type, obj, rng.choice(parents), object_sliced=sliced)


def generate(split: str, count: int, seed: int = 0) -> list[EpisodeSpec]:
    """``count`` episodes of ``split`` ('seen' / 'unseen'), identical for the same arguments."""
    return [generate_one(split, index, seed) for index in range(count)]


@lru_cache(maxsize=8192)
def generate_one(split: str, index: int, seed: int = 0) -> EpisodeSpec:
    """Episode ``index`` of ``split``: depends only on (split, index, seed), memoised per process."""
    plans = floor_plans(split)
    rng = random.Random(f"eb_alfred-generated|{split}|{seed}|{index}")
    style = STYLES[index % len(STYLES)]
    types = LONG_HORIZON_TASK_TYPES if style == "long_horizon" else TASK_TYPES
    task_type = rng.choice(types)
    for _attempt in range(MAX_TRIES):
        proposal = _propose(rng, plans, task_type)
        if proposal is None:
            continue
        fp, task = proposal
        world_seed = rng.randrange(2**31)
        try:
            world = build_world(fp, world_seed, task)
        except SceneError:
            continue
        plan = plan_from_world(world, task, max_len=MAX_STEPS)
        if not plan:
            continue
        instruction = make_instruction(task, style, world, rng)
        metadata = {
            "style": style,
            "floor_plan": fp,
            "task_type": task.task_type,
            "pddl_params": {
                "object_target": task.object_target, "parent_target": task.parent_target,
                "mrecep_target": task.mrecep_target, "toggle_target": task.toggle_target,
                "object_sliced": task.object_sliced,
            },
            "pddl_source": "generated",
            "generator_seed": seed,
            # The expert plan was just computed for this world: the env reuses
            # its length instead of planning again at reset.
            "expert_length": len(plan),
            "expert_length_seed": world_seed,
            "gc_total": goal_condition_total(task),
        }
        return EpisodeSpec(SUITE_NAME, split, generated_id(split, index), world_seed, instruction, metadata)
    raise RuntimeError(f"could not generate episode {index} of split {split!r}")  # pragma: no cover - a generator bug


def generated_episodes(split: str, count: int, seed: int = 0) -> LazyEpisodes:
    """The first ``count`` episodes of ``split``, each built when read (:func:`generate_one`)."""
    return LazyEpisodes(functools.partial(generate_one, split, seed=seed), count,
                        episode_id=functools.partial(generated_id, split))


def generated_id(split: str, index: int) -> str:
    """Episode ``index``'s id (as :func:`generate_one` names it), without building it."""
    return f"{split}/{index:03d}"
