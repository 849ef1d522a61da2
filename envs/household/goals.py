"""Goal conditions, counted as ALFRED's env/tasks.py counts them.

ALFRED selects objects with ``get_objects_with_name_and_prop(name, prop)``:
every object whose AI2-THOR id *contains* ``name`` as a substring and has
``prop`` (``receptacle`` / ``pickupable`` / ``toggleable``). AI2-THOR ids are
``<Type>|x|y|z`` (sliced pieces ``<Type>|x|y|z|<Type>Sliced_k``, basins
``Sink|x|y|z|SinkBasin``), so a substring of an id's letters is a substring of
our ``type`` (``AppleSliced`` contains ``Apple``; ``SinkBasin`` contains
``Sink``); we match on ``type`` to the same effect, pitfalls included (a
"Pot" target also matches a Potato, as in ALFRED).

"Inside" is transitive (``World.is_inside``), as AI2-THOR's
``receptacleObjectIds`` / ``parentReceptacles`` report physical containment.
"""

from __future__ import annotations

from envs.household.world import Obj, TaskSpec, World


def _select(world: World, name: str, prop: str) -> list[Obj]:
    """ALFRED ``get_objects_with_name_and_prop`` on our state."""
    if not name:
        return []
    return [o for o in world.objects.values() if name in o.type and getattr(o, prop)]


def _sliced_count(pickupables: list[Obj]) -> int:
    return sum(1 for p in pickupables if "Sliced" in p.type)


def goal_conditions_met(world: World, task: TaskSpec) -> tuple[int, int]:
    """``(s, ts)``: goal conditions satisfied and in total (ALFRED env/tasks.py).

    - pick_and_place_simple: ts=1, a target inside a parent-type receptacle.
    - pick_two_obj_and_place: ts=2, min(2, most targets inside one parent receptacle).
    - look_at_obj_in_light: ts=2, a target in hand; a toggle-type lamp on and visible.
    - clean / heat / cool: ts=3, a target in place; some target cleaned/heated/cooled;
      one target both.
    - pick_and_place_with_movable_recep: ts=3, a target in a movable receptacle; a
      movable receptacle in the parent; one movable receptacle holding a target
      while in the parent.
    - sliced variants: ts += 1 (pick_two: += 2); s += 1 if any sliced target exists
      (pick_two: min(2, number of sliced targets)).
    """
    target = task.target_type
    tt = task.task_type
    pickupables = _select(world, target, "pickupable")
    s, ts = 0, 0
    sliced = "Sliced" in target

    if tt == "pick_and_place_simple":
        ts = 1
        if sliced:
            ts += 1
            s += _sliced_count(pickupables) >= 1
        receptacles = _select(world, task.parent_target, "receptacle")
        s += any(world.is_inside(p.id, r.id) for p in pickupables for r in receptacles)

    elif tt == "pick_two_obj_and_place":
        ts = 2
        if sliced:
            ts += 2
            s += min(_sliced_count(pickupables), 2)
        receptacles = _select(world, task.parent_target, "receptacle")
        best = max((sum(world.is_inside(p.id, r.id) for p in pickupables) for r in receptacles), default=0)
        s += min(best, 2)

    elif tt == "look_at_obj_in_light":
        ts = 2
        if sliced:
            ts += 1
            s += _sliced_count(pickupables) >= 1
        if world.holding is not None and any(p.id == world.holding for p in pickupables):
            s += 1
        toggleables = _select(world, task.toggle_target, "toggleable")
        s += any(t.is_on and world.in_reach(t.id) for t in toggleables)

    elif tt in _STATE_ATTR:
        ts = 3
        if sliced:
            ts += 1
            s += _sliced_count(pickupables) >= 1
        attr = _STATE_ATTR[tt]
        receptacles = _select(world, task.parent_target, "receptacle")
        in_place = {p.id for p in pickupables for r in receptacles if world.is_inside(p.id, r.id)}
        changed = {p.id for p in pickupables if getattr(p, attr)}
        s += bool(in_place)
        s += bool(changed)
        s += bool(in_place & changed)

    elif tt == "pick_and_place_with_movable_recep":
        ts = 3
        if sliced:
            ts += 1
            s += _sliced_count(pickupables) >= 1
        receptacles = _select(world, task.parent_target, "receptacle")
        movables = _select(world, task.mrecep_target, "pickupable")
        holds_target = {m.id for m in movables if any(world.is_inside(p.id, m.id) for p in pickupables)}
        placed = {m.id for m in movables if any(world.is_inside(m.id, r.id) for r in receptacles)}
        s += bool(holds_target)
        s += bool(placed)
        s += bool(holds_target & placed)

    else:  # pragma: no cover - TaskSpec validates task_type
        raise ValueError(f"unknown task type {tt!r}")
    return int(s), ts


#: Which wrapper-set flag each state-change task checks (ALFRED env/tasks.py:
#: ``env.cleaned_objects`` / ``heated_objects`` / ``cooled_objects``).
_STATE_ATTR = {
    "pick_clean_then_place_in_recep": "cleaned",
    "pick_heat_then_place_in_recep": "heated",
    "pick_cool_then_place_in_recep": "cooled",
}


def goal_satisfied(world: World, task: TaskSpec) -> bool:
    """ALFRED ``goal_satisfied``: every goal condition met (``s == ts``)."""
    s, ts = goal_conditions_met(world, task)
    return s == ts


#: ``ts`` of each task type before slicing (ALFRED env/tasks.py, see goal_conditions_met).
_BASE_TOTALS = {
    "pick_and_place_simple": 1,
    "pick_two_obj_and_place": 2,
    "look_at_obj_in_light": 2,
    "pick_clean_then_place_in_recep": 3,
    "pick_heat_then_place_in_recep": 3,
    "pick_cool_then_place_in_recep": 3,
    "pick_and_place_with_movable_recep": 3,
}


def goal_condition_total(task: TaskSpec) -> int:
    """``ts`` of a task without a world: what :func:`goal_conditions_met` reports as
    its second value (error records use it so an episode that never started
    still counts its goal conditions as unmet)."""
    sliced = "Sliced" in task.target_type
    return _BASE_TOTALS[task.task_type] + ((2 if task.task_type == "pick_two_obj_and_place" else 1) if sliced else 0)
