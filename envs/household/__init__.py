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

from envs.household.build import SceneError, build_world, check_task, required_types
from envs.household.constants import TASK_TYPES, AlfredConstants, alfred_constants
from envs.household.engine import PRIMITIVES, ActionResult, HouseholdEngine
from envs.household.goals import goal_condition_total, goal_conditions_met, goal_satisfied
from envs.household.observe import describe, render
from envs.household.scene import Inventory, all_floor_plans, floor_plan_inventory, room_type
from envs.household.world import Obj, TaskSpec, World

__all__ = [
    "TASK_TYPES", "PRIMITIVES", "ActionResult", "AlfredConstants", "HouseholdEngine", "Inventory", "Obj",
    "SceneError", "TaskSpec", "World", "alfred_constants", "all_floor_plans", "build_world", "check_task",
    "describe", "floor_plan_inventory", "goal_condition_total", "goal_conditions_met", "goal_satisfied", "render", "required_types",
    "room_type",
]
