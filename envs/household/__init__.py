"""The household engine (backend ``household``): ALFRED's task logic without a renderer.

World state from ALFRED's real floor plans (package data generated from alfworld's files,
see envs/household/constants.py), the transition rules ALFRED's wrapper applies, ALFRED's goal
conditions, and cheap text/image observations.

Typical use::

    world = build_world(1, seed=0, task=TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop"))
    engine = HouseholdEngine(world)
    engine.goto("Apple_1"); engine.pickup("Apple_1")
    s, ts = goal_conditions_met(engine.world, world.task)
"""

# Names load on first use (PEP 562), so that light modules of this package (its failure
# declarations, read by the suites' plugin declarations) import nothing heavy.
_WHERE = {
    "SceneError": "build", "build_world": "build", "check_task": "build", "required_types": "build",
    "TASK_TYPES": "constants", "AlfredConstants": "constants", "alfred_constants": "constants",
    "PRIMITIVES": "engine", "ActionResult": "engine", "HouseholdEngine": "engine",
    "goal_condition_total": "goals", "goal_conditions_met": "goals", "goal_satisfied": "goals",
    "describe": "observe", "render": "observe",
    "Inventory": "scene", "all_floor_plans": "scene", "floor_plan_inventory": "scene", "room_type": "scene",
    "Obj": "world", "TaskSpec": "world", "World": "world",
}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'envs.household' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"envs.household.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "TASK_TYPES", "PRIMITIVES", "ActionResult", "AlfredConstants", "HouseholdEngine", "Inventory", "Obj",
    "SceneError", "TaskSpec", "World", "alfred_constants", "all_floor_plans", "build_world", "check_task",
    "describe", "floor_plan_inventory", "goal_condition_total", "goal_conditions_met", "goal_satisfied", "render", "required_types",
    "room_type",
]
