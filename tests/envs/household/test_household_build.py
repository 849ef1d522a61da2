"""Scenes from ALFRED's floor plans: constants, inventories, build_world."""

from __future__ import annotations

import pickle

import pytest

from envs.household import (
    TASK_TYPES, Inventory, SceneError, TaskSpec, alfred_constants, all_floor_plans, build_world, check_task,
    floor_plan_inventory,
    goal_conditions_met, room_type,
)
from envs.household.constants import KNIFE_TYPES, SLICE_PIECES, SLICED_TYPE
from envs.household.scene import thor_id_type


# --- constants ---------------------------------------------------------------------------
def test_alfred_constants_from_package():
    c = alfred_constants()
    assert len(c.objects) == 108 and len(c.receptacles) == 37  # ALFRED gen/constants.py
    assert c.movable_receptacles == {"Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot"}
    assert c.openable == {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"}
    assert set(TASK_TYPES) == set(c.goals_valid)
    assert c.goals_valid["pick_heat_then_place_in_recep"] == {"Kitchen"}
    assert {"DeskLamp", "FloorLamp", "Faucet", "Microwave"} <= c.toggleable
    assert "Spoon" in c.val_receptacle_objects["Cup"]
    assert c.max_num_of_obj_instances == 3 and c.pickup_repeat_max == 4
    assert alfred_constants() is c  # cached


def test_slicing_constants_cover_alfred_sliceables():
    c = alfred_constants()
    assert set(SLICED_TYPE) == set(c.sliceable) == set(SLICE_PIECES)
    for parent, piece in SLICED_TYPE.items():
        if parent != "Egg":
            assert piece == parent + "Sliced"
            # ALFRED lets the pieces be placed somewhere (e.g. the Fridge).
            assert any(piece in allowed for allowed in c.val_receptacle_objects.values())
    assert min(n for t, n in SLICE_PIECES.items() if t != "Egg") >= 2  # pick_two of sliced objects
    assert KNIFE_TYPES == {"Knife", "ButterKnife"}


# --- inventories ---------------------------------------------------------------------------
def test_floor_plan_1_inventory():
    inv = floor_plan_inventory(1)
    assert inv.room_type == "Kitchen"
    assert inv.receptacle_count("Cabinet") == 8 and inv.receptacle_count("Drawer") == 8
    assert ("SinkBasin", "Sink|-01.90|+00.97|-01.50|SinkBasin") in inv.receptacles
    assert inv.has("Apple") and inv.has("StoveBurner") and not inv.has("Bed")
    assert inv.receptacle_count("StoveBurner") == 1  # listed type without a layout pose


def test_room_types_and_floor_plans():
    plans = all_floor_plans()
    assert len(plans) == 120
    assert room_type(1) == "Kitchen" and room_type(230) == "LivingRoom"
    assert room_type(301) == "Bedroom" and room_type(430) == "Bathroom"
    with pytest.raises(ValueError, match="FloorPlan31"):
        room_type(31)
    assert thor_id_type("Bathtub|-00.21|+00.36|+00.92|BathtubBasin") == "BathtubBasin"
    assert thor_id_type("Cabinet|+00.68|+00.50|-02.20") == "Cabinet"


# --- build_world ----------------------------------------------------------------------------
def _check_valid(world) -> None:
    c = alfred_constants()
    counters: dict[str, list[int]] = {}
    for k, o in world.objects.items():
        t, n = k.rsplit("_", 1)
        assert t == o.type and o.id == k
        counters.setdefault(t, []).append(int(n))
        if o.parent is not None:
            assert o.type in c.val_receptacle_objects[world.objects[o.parent].type], (k, o.parent)
            assert o.pickupable
        if o.openable:
            assert not o.is_open
        assert not o.is_on and not (o.cleaned or o.heated or o.cooled)
    for t, ns in counters.items():
        assert sorted(ns) == list(range(1, len(ns) + 1)), t
    assert world.holding is None


def test_all_120_floor_plans_build():
    for fp in all_floor_plans():
        world = build_world(fp, seed=0)
        inv = floor_plan_inventory(fp)
        _check_valid(world)
        assert sum(o.thor_id is not None for o in world.objects.values()) == len(inv.receptacles)
        present = {o.type for o in world.objects.values()}
        assert present == set(inv.object_types), fp


def test_build_is_deterministic_and_seeded():
    task = TaskSpec("pick_clean_then_place_in_recep", "Mug", "CoffeeMachine")
    a, b = build_world(5, 3, task), build_world(5, 3, task)
    assert a == b and a is not b
    assert pickle.loads(pickle.dumps(a)) == a
    layouts = {tuple((k, o.parent) for k, o in build_world(5, s, task).objects.items()) for s in range(6)}
    assert len(layouts) > 1


def test_copy_is_independent():
    w = build_world(1, 0)
    c = w.copy()
    assert c == w
    apple = c.of_type("Apple")[0]
    c.objects[apple].parent = None
    c.holding = apple
    assert w.objects[apple].parent is not None and w.holding is None


def test_scene_error_names_missing_type_and_floor_plan():
    with pytest.raises(SceneError, match=r"FloorPlan401.*Microwave"):
        build_world(401, 0, TaskSpec("pick_heat_then_place_in_recep", "SoapBar", "Cart"))
    with pytest.raises(SceneError, match=r"FloorPlan1\b.*Bed"):
        build_world(1, 0, TaskSpec("pick_and_place_simple", "Apple", "Bed"))
    with pytest.raises(SceneError, match="Pillow"):
        build_world(1, 0, TaskSpec("pick_and_place_simple", "Pillow", "CounterTop"))
    with pytest.raises(SceneError, match="DeskLamp"):
        build_world(1, 0, TaskSpec("look_at_obj_in_light", "Apple", "", toggle_target="DeskLamp"))
    assert issubclass(SceneError, ValueError)


def test_scene_error_for_missing_knife():
    """Every real floor plan with a sliceable type also has a knife, so the check is
    exercised on an inventory without one."""
    task = TaskSpec("pick_and_place_simple", "Apple", "CounterTop", object_sliced=True)
    inv = Inventory(1, "Kitchen", ("Apple", "CounterTop"), (("CounterTop", "CounterTop"),))
    with pytest.raises(SceneError, match="ButterKnife or Knife"):
        check_task(inv, task)
    check_task(inv, TaskSpec("pick_and_place_simple", "Apple", "CounterTop"))
    check_task(floor_plan_inventory(1), task)
    with pytest.raises(SceneError, match="not sliceable"):
        check_task(floor_plan_inventory(1), TaskSpec("pick_and_place_simple", "Mug", "CounterTop",
                                                     object_sliced=True))


def test_task_objects_exist_and_start_outside_the_parent():
    task = TaskSpec("pick_two_obj_and_place", "Apple", "CounterTop")
    for seed in range(10):
        w = build_world(1, seed, task)
        apples = w.of_type("Apple")
        assert 2 <= len(apples) <= alfred_constants().pickup_repeat_max
        assert all("CounterTop" not in w.objects[w.objects[a].parent].type for a in apples)
        assert goal_conditions_met(w, task) == (0, 2)
