"""Deterministic scene construction from a real ALFRED floor plan.

Static receptacles come from the floor plan's layout (instances as the floor
plan has them); every other listed type gets one static instance; each
pickupable type gets 1..``MAX_NUM_OF_OBJ_INSTANCES`` instances (the task's
target 1..``PICKUP_REPEAT_MAX``, ALFRED gen/constants.py), each placed in a
static receptacle instance that ALFRED's ``VAL_RECEPTACLE_OBJECTS`` allows for
its type. A pickupable type that no receptacle of the floor plan accepts (a
Plunger in a bathroom without a Cabinet) lies on the floor (``parent=None``),
as in AI2-THOR. Openables start closed (restored scenes: as the trajectory
found them), toggleables off.

With :class:`~envs.household.restore.SceneFacts` from the episode's ALFRED
trajectory, the instance count of every pickupable type, the start receptacle
of each task object, the lamps' on/off state and the receptacle the agent
starts facing come from the trajectory; the remaining choices stay seeded.
"""

from __future__ import annotations

import random

from envs.household.constants import (
    CLEAN_BASIN, CLEAN_SOURCE, COOL_SOURCE, HEAT_SOURCE, KNIFE_TYPES, alfred_constants,
)
from envs.household.restore import SceneFacts
from envs.household.scene import Inventory, floor_plan_inventory
from envs.household.world import Obj, TaskSpec, World


class SceneError(ValueError):
    """A floor plan cannot host a task (a needed object type is missing)."""


def required_types(task: TaskSpec) -> list[tuple[str, ...]]:
    """The object types a task needs, as alternatives (any one of each tuple suffices)."""
    needs: list[tuple[str, ...]] = [(task.object_target,)]
    for name in (task.parent_target, task.mrecep_target, task.toggle_target):
        if name:
            needs.append((name,))
    if task.object_sliced:
        needs.append(tuple(sorted(KNIFE_TYPES)))
    extra = {
        "pick_clean_then_place_in_recep": (CLEAN_BASIN, CLEAN_SOURCE),
        "pick_heat_then_place_in_recep": (HEAT_SOURCE,),
        "pick_cool_then_place_in_recep": (COOL_SOURCE,),
    }.get(task.task_type, ())
    needs.extend((t,) for t in extra)
    return needs


def check_task(inventory: Inventory, task: TaskSpec) -> None:
    """Raise :class:`SceneError` unless the floor plan has every type ``task`` needs."""
    for alternatives in required_types(task):
        if not any(inventory.has(t) for t in alternatives):
            missing = " or ".join(alternatives)
            raise SceneError(
                f"FloorPlan{inventory.floor_plan} ({inventory.room_type}) has no {missing}, "
                f"which the {task.task_type} task for {task.target_type} needs"
            )
    if task.object_sliced and task.object_target not in alfred_constants().sliceable:
        raise SceneError(f"{task.object_target} is not sliceable (ALFRED VAL_ACTION_OBJECTS['Sliceable'])")


def _goal_relevant(obj_type: str, task: TaskSpec | None) -> bool:
    """Types ALFRED's substring matching (``name in objectId``) would count as the
    task's object or movable receptacle; they must not start inside the parent."""
    if task is None:
        return False
    return task.object_target in obj_type or bool(task.mrecep_target and task.mrecep_target in obj_type)


def _min_count(obj_type: str, task: TaskSpec | None) -> int:
    """Instances a task needs of ``obj_type`` (a restored count never goes below it)."""
    if task is None:
        return 0
    if obj_type == task.object_target:
        return 2 if task.task_type == "pick_two_obj_and_place" else 1
    return 1 if obj_type == task.mrecep_target else 0


def build_world(floor_plan: int, seed: int, task: TaskSpec | None = None,
                scene: SceneFacts | None = None) -> World:
    """A world for ``FloorPlan<floor_plan>``, deterministic for (floor_plan, seed, task, scene).

    With a task, the floor plan must have every type the task needs
    (:func:`required_types`), else :class:`SceneError`; the task's objects are
    placed outside any receptacle of the parent type (on the floor when no
    other receptacle allows them), so the goal is unmet at reset. With
    ``scene`` (restored from a trajectory), instance counts, the task objects'
    start receptacles, lamp states and the faced receptacle follow it.
    """
    if scene is not None and scene.floor_plan != floor_plan:
        raise SceneError(f"scene facts of FloorPlan{scene.floor_plan} used for FloorPlan{floor_plan}")
    consts = alfred_constants()
    inv = floor_plan_inventory(floor_plan)
    if task is not None:
        check_task(inv, task)
    rng = random.Random(f"household|{floor_plan}|{seed}|{task!r}")
    vro = consts.val_receptacle_objects
    pickupable = consts.pickupable
    openable = consts.openable
    toggleable = consts.toggleable
    sliceable = consts.sliceable

    objects: dict[str, Obj] = {}
    counters: dict[str, int] = {}

    def new_id(obj_type: str) -> str:
        counters[obj_type] = counters.get(obj_type, 0) + 1
        return f"{obj_type}_{counters[obj_type]}"

    # Static receptacles, as the floor plan has them.
    statics: list[Obj] = []
    for rtype, thor_id in inv.receptacles:
        o = Obj(new_id(rtype), rtype, receptacle=True, openable=rtype in openable,
                toggleable=rtype in toggleable, thor_id=thor_id)
        objects[o.id] = o
        statics.append(o)
    static_types = {o.type for o in statics}
    # Other static objects (lamps, Window, ...): one instance each; a Faucet per SinkBasin
    # (``-objects.json`` lists types, not instances: a double sink has two faucets).
    for t in inv.object_types:
        if t in static_types or t in pickupable:
            continue
        copies = max(1, inv.receptacle_count(CLEAN_BASIN)) if t == CLEAN_SOURCE else 1
        for _ in range(copies):
            o = Obj(new_id(t), t, receptacle=t in vro, openable=t in openable, toggleable=t in toggleable)
            objects[o.id] = o

    # Pickupable objects, placed in receptacles ALFRED allows.
    placed_types = [t for t in inv.object_types if t in pickupable]
    by_thor_id = {o.thor_id: o.id for o in statics}
    starts: dict[str, list[tuple[str, str]]] = {}
    fixed_ids: set[str] = set()
    if scene is not None:
        placed_types = sorted(set(placed_types) | {t for t, n in scene.counts.items() if n > 0})
        for st in scene.starts:
            if st.receptacle_id in by_thor_id:
                starts.setdefault(st.obj_type, []).append((by_thor_id[st.receptacle_id], st.thor_id))
    for t in placed_types:
        if scene is not None:
            n = max(scene.counts.get(t, 0), len(starts.get(t, ())), _min_count(t, task))
        elif task is not None and t == task.object_target:
            n = rng.randint(2 if task.task_type == "pick_two_obj_and_place" else 1, consts.pickup_repeat_max)
        else:
            n = rng.randint(1, consts.max_num_of_obj_instances)
        candidates = [r for r in statics if t in vro[r.type]]
        if task is not None and task.parent_target and _goal_relevant(t, task):
            # Outside the parent; with no other allowed receptacle (a Plunger whose only
            # allowed receptacle is the task's Cabinet) it starts on the floor.
            candidates = [r for r in candidates if task.parent_target not in r.type]
        fixed = starts.get(t, [])
        for i in range(n):
            thor_id = None
            if i < len(fixed):
                parent, thor_id = fixed[i]  # the start receptacle the trajectory shows
            else:
                parent = rng.choice(candidates).id if candidates else None
            o = Obj(new_id(t), t, parent, receptacle=t in vro, openable=t in openable,
                    toggleable=t in toggleable, sliceable=t in sliceable, pickupable=True, thor_id=thor_id)
            objects[o.id] = o
            if i < len(fixed):
                fixed_ids.add(o.id)
    at = None
    if scene is not None:
        for obj_type, container_type in scene.nested:
            containers = [o for o in objects.values() if o.type == container_type]
            movers = [o for o in objects.values() if o.type == obj_type and o.id not in fixed_ids]
            if containers and movers:
                movers[0].parent = containers[0].id
        opened = set(scene.open_ids)
        for o in objects.values():
            if o.toggleable and o.type in scene.toggles:
                o.is_on = scene.toggles[o.type]
            if o.openable and o.thor_id in opened:
                o.is_open = True
        at = by_thor_id.get(scene.start_receptacle) if scene.start_receptacle else None
    return World(floor_plan, seed, task, objects, at=at)
