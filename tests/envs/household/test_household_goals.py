"""Goal conditions against hand-built states, as ALFRED env/tasks.py counts them."""

from __future__ import annotations

import pytest

from envs.household import TaskSpec, goal_conditions_met, goal_satisfied

ROOM = [("CounterTop_1", None), ("DiningTable_1", None), ("DiningTable_2", None), ("Fridge_1", None),
        ("DeskLamp_1", None), ("SinkBasin_1", None), ("Faucet_1", None), ("Microwave_1", None)]


def gc(world, task):
    return goal_conditions_met(world, task)


# --- pick_and_place_simple -------------------------------------------------------
SIMPLE = TaskSpec("pick_and_place_simple", "Apple", "DiningTable")


def test_simple_unmet_met_and_transitive(world_of):
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1")), SIMPLE) == (0, 1)
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_2")), SIMPLE) == (1, 1)
    # Inside a Bowl on the table counts (AI2-THOR containment is physical).
    w = world_of(*ROOM, ("Bowl_1", "DiningTable_1"), ("Apple_1", "Bowl_1"))
    assert gc(w, SIMPLE) == (1, 1) and goal_satisfied(w, SIMPLE)
    # Held objects are in no receptacle.
    assert gc(world_of(*ROOM, ("Apple_1", None), holding="Apple_1"), SIMPLE) == (0, 1)


def test_simple_sliced_needs_pieces(world_of):
    task = TaskSpec("pick_and_place_simple", "Apple", "DiningTable", object_sliced=True)
    # A whole apple on the table does not match 'AppleSliced'.
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1")), task) == (0, 2)
    assert gc(world_of(*ROOM, ("AppleSliced_1", "CounterTop_1")), task) == (1, 2)
    w = world_of(*ROOM, ("AppleSliced_1", "CounterTop_1"), ("AppleSliced_2", "DiningTable_1"))
    assert gc(w, task) == (2, 2) and goal_satisfied(w, task)


def test_substring_matching_like_alfred(world_of):
    """ALFRED matches names as substrings of object ids: a 'Pot' target matches a Potato."""
    task = TaskSpec("pick_and_place_simple", "Pot", "CounterTop")
    assert gc(world_of(*ROOM, ("Potato_1", "CounterTop_1")), task) == (1, 1)


# --- pick_two_obj_and_place -------------------------------------------------------
TWO = TaskSpec("pick_two_obj_and_place", "Apple", "DiningTable")


def test_pick_two_counts_best_single_receptacle(world_of):
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1"), ("Apple_2", "CounterTop_1")), TWO) == (0, 2)
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1"), ("Apple_2", "CounterTop_1")), TWO) == (1, 2)
    # One in each table: the best single table holds one.
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1"), ("Apple_2", "DiningTable_2")), TWO) == (1, 2)
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1"), ("Apple_2", "DiningTable_1")), TWO) == (2, 2)
    three = world_of(*ROOM, ("Apple_1", "DiningTable_1"), ("Apple_2", "DiningTable_1"), ("Apple_3", "DiningTable_1"))
    assert gc(three, TWO) == (2, 2)


def test_pick_two_sliced_adds_two(world_of):
    task = TaskSpec("pick_two_obj_and_place", "Apple", "DiningTable", object_sliced=True)
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1")), task) == (0, 4)
    assert gc(world_of(*ROOM, ("AppleSliced_1", "DiningTable_1")), task) == (2, 4)
    w = world_of(*ROOM, *[(f"AppleSliced_{i}", "DiningTable_1") for i in (1, 2, 3)])
    assert gc(w, task) == (4, 4)


def test_pick_two_without_parent_instances_is_zero(world_of):
    task = TaskSpec("pick_two_obj_and_place", "Apple", "Sofa")
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1")), task) == (0, 2)


# --- look_at_obj_in_light ---------------------------------------------------------
LOOK = TaskSpec("look_at_obj_in_light", "Book", "", toggle_target="DeskLamp")


def test_look_at_partial_and_full(world_of):
    assert gc(world_of(*ROOM, ("Book_1", "CounterTop_1")), LOOK) == (0, 2)
    held = world_of(*ROOM, ("Book_1", None), holding="Book_1", at="DeskLamp_1")
    assert gc(held, LOOK) == (1, 2)
    held.objects["DeskLamp_1"].is_on = True
    assert gc(held, LOOK) == (2, 2) and goal_satisfied(held, LOOK)
    # The lamp must be visible: on, but the agent faces elsewhere.
    held.at = "CounterTop_1"
    assert gc(held, LOOK) == (1, 2)
    wrong = world_of(*ROOM, ("Book_1", "CounterTop_1"), ("Pen_1", None), holding="Pen_1", at="DeskLamp_1")
    wrong.objects["DeskLamp_1"].is_on = True
    assert gc(wrong, LOOK) == (1, 2)


def test_look_at_sliced(world_of):
    """The sliced look-at branch (ALFRED env/tasks.py counts it; the generator makes no
    such tasks, so it is tested here directly): ts = 3; a slice exists; a *slice* in
    hand; a lit lamp in view. Mutations caught: dropping the branch's ``ts += 1`` or its
    slice condition, or counting a whole Apple in hand for an AppleSliced target."""
    task = TaskSpec("look_at_obj_in_light", "Apple", "", toggle_target="DeskLamp", object_sliced=True)
    lit = ("DeskLamp_1", None, {"is_on": True})
    room = [r for r in ROOM if r[0] != "DeskLamp_1"]
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1")), task) == (0, 3)
    # A whole apple in hand under a lit lamp: only the lamp counts.
    whole = world_of(*room, lit, ("Apple_1", None), holding="Apple_1", at="DeskLamp_1")
    assert gc(whole, task) == (1, 3)
    # A slice exists (not in hand), lamp off: 1 of 3.
    assert gc(world_of(*ROOM, ("AppleSliced_1", "CounterTop_1"), at="DeskLamp_1"), task) == (1, 3)
    # A slice in hand, the lit lamp out of view: 2 of 3.
    away = world_of(*room, lit, ("AppleSliced_1", None), ("AppleSliced_2", "CounterTop_1"),
                    holding="AppleSliced_1", at="CounterTop_1")
    assert gc(away, task) == (2, 3) and not goal_satisfied(away, task)
    away.at = "DeskLamp_1"
    assert gc(away, task) == (3, 3) and goal_satisfied(away, task)


# --- clean / heat / cool ------------------------------------------------------------
STATE_TASKS = [
    ("pick_clean_then_place_in_recep", "cleaned"),
    ("pick_heat_then_place_in_recep", "heated"),
    ("pick_cool_then_place_in_recep", "cooled"),
]


@pytest.mark.parametrize("task_type,flag", STATE_TASKS)
def test_state_tasks_partial_credit(world_of, task_type, flag):
    task = TaskSpec(task_type, "Apple", "DiningTable")
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1")), task) == (0, 3)
    # Changed but not placed: 1 of 3.
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1", {flag: True})), task) == (1, 3)
    # Placed but not changed: 1 of 3.
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1")), task) == (1, 3)
    # One placed, another changed: 2 of 3.
    w = world_of(*ROOM, ("Apple_1", "DiningTable_1"), ("Apple_2", "CounterTop_1", {flag: True}))
    assert gc(w, task) == (2, 3) and not goal_satisfied(w, task)
    # The same object changed and placed: 3 of 3.
    w = world_of(*ROOM, ("Apple_1", "DiningTable_1", {flag: True}))
    assert gc(w, task) == (3, 3) and goal_satisfied(w, task)


@pytest.mark.parametrize("task_type,flag", STATE_TASKS)
def test_state_tasks_sliced(world_of, task_type, flag):
    task = TaskSpec(task_type, "Apple", "DiningTable", object_sliced=True)
    # A changed whole apple does not count for an AppleSliced target.
    assert gc(world_of(*ROOM, ("Apple_1", "DiningTable_1", {flag: True})), task) == (0, 4)
    assert gc(world_of(*ROOM, ("AppleSliced_1", "CounterTop_1")), task) == (1, 4)
    w = world_of(*ROOM, ("AppleSliced_1", "DiningTable_1", {flag: True}), ("AppleSliced_2", "CounterTop_1"))
    assert gc(w, task) == (4, 4)


# --- pick_and_place_with_movable_recep ------------------------------------------------
MOVABLE = TaskSpec("pick_and_place_with_movable_recep", "Apple", "DiningTable", mrecep_target="Bowl")


def test_movable_partial_and_full(world_of):
    assert gc(world_of(*ROOM, ("Apple_1", "CounterTop_1"), ("Bowl_1", "CounterTop_1")), MOVABLE) == (0, 3)
    # Object in the movable receptacle, not yet in the parent: 1 of 3.
    assert gc(world_of(*ROOM, ("Bowl_1", "CounterTop_1"), ("Apple_1", "Bowl_1")), MOVABLE) == (1, 3)
    # Empty movable receptacle in the parent: 1 of 3.
    assert gc(world_of(*ROOM, ("Bowl_1", "DiningTable_1"), ("Apple_1", "CounterTop_1")), MOVABLE) == (1, 3)
    # Two bowls: one holds the apple elsewhere, the other sits empty in the parent: 2 of 3.
    w = world_of(*ROOM, ("Bowl_1", "CounterTop_1"), ("Apple_1", "Bowl_1"), ("Bowl_2", "DiningTable_1"))
    assert gc(w, MOVABLE) == (2, 3)
    w = world_of(*ROOM, ("Bowl_1", "DiningTable_1"), ("Apple_1", "Bowl_1"))
    assert gc(w, MOVABLE) == (3, 3) and goal_satisfied(w, MOVABLE)
    # The stack held in hand is in no receptacle.
    held = world_of(*ROOM, ("Bowl_1", None), ("Apple_1", "Bowl_1"), holding="Bowl_1")
    assert gc(held, MOVABLE) == (1, 3)


def test_movable_sliced(world_of):
    task = TaskSpec("pick_and_place_with_movable_recep", "Potato", "DiningTable", mrecep_target="Pot",
                    object_sliced=True)
    w = world_of(*ROOM, ("Pot_1", "DiningTable_1"), ("PotatoSliced_1", "Pot_1"))
    assert gc(w, task) == (4, 4)
    w = world_of(*ROOM, ("Pot_1", "DiningTable_1"), ("Potato_1", "Pot_1"))
    # 'Pot' matches the Potato as a movable (ALFRED substring rule), but the whole
    # Potato is no PotatoSliced: only "movable in parent" holds.
    assert gc(w, task) == (1, 4)


def test_taskspec_validation():
    with pytest.raises(ValueError, match="unknown ALFRED task type"):
        TaskSpec("pick_and_juggle", "Apple", "Fridge")
    with pytest.raises(ValueError, match="toggle_target"):
        TaskSpec("look_at_obj_in_light", "Book", "")
    with pytest.raises(ValueError, match="mrecep_target"):
        TaskSpec("pick_and_place_with_movable_recep", "Apple", "DiningTable")
    assert TaskSpec("pick_and_place_simple", "Apple", "Fridge", object_sliced=True).target_type == "AppleSliced"
