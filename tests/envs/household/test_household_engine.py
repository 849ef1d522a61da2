"""Transition rules of the household engine: each failure reason and each wrapper rule."""

from __future__ import annotations

import pickle

import pytest

from envs.household import PRIMITIVES, HouseholdEngine, TaskSpec, build_world, goal_conditions_met

KITCHEN = [("CounterTop_1", None), ("DiningTable_1", None), ("Fridge_1", None), ("Microwave_1", None),
           ("SinkBasin_1", None), ("Faucet_1", None), ("Cabinet_1", None), ("Toaster_1", None)]


def engine_of(world_of, *extra, **kw) -> HouseholdEngine:
    return HouseholdEngine(world_of(*KITCHEN, *extra, **kw))


def test_pickup_success_and_facing(world_of):
    e = engine_of(world_of, ("Apple_1", "CounterTop_1"))
    assert e.goto("Apple_1").ok
    r = e.pickup("Apple_1")
    assert r.ok and r.message == ""
    assert e.world.holding == "Apple_1" and e.world.objects["Apple_1"].parent is None
    assert e.world.at == "CounterTop_1"  # still faces where the apple was


def test_pickup_with_full_hands(world_of):
    e = engine_of(world_of, ("Apple_1", "CounterTop_1"), ("Egg_1", None), holding="Egg_1", at="CounterTop_1")
    r = e.pickup("Apple_1")
    assert not r.ok and "hands are full" in r.message and "Egg_1" in r.message
    assert e.world.objects["Apple_1"].parent == "CounterTop_1"


def test_pickup_not_pickupable_and_not_in_reach(world_of):
    e = engine_of(world_of, ("Apple_1", "CounterTop_1"), at="DiningTable_1")
    r = e.pickup("Fridge_1")
    assert not r.ok and "cannot be picked up" in r.message
    r = e.pickup("Apple_1")
    assert not r.ok and "not in reach" in r.message
    # Facing the counter reaches what is on it, also inside a Bowl there.
    e2 = engine_of(world_of, ("Bowl_1", "CounterTop_1"), ("Apple_1", "Bowl_1"), at="CounterTop_1")
    assert e2.pickup("Apple_1").ok


def test_pickup_from_closed_receptacle(world_of):
    e = engine_of(world_of, ("Apple_1", "Fridge_1"), at="Fridge_1")
    r = e.pickup("Apple_1")
    assert not r.ok and "Fridge_1" in r.message and "closed" in r.message
    assert e.open("Fridge_1").ok
    assert e.pickup("Apple_1").ok


def test_put_rules(world_of):
    e = engine_of(world_of, ("Apple_1", None), holding="Apple_1", at="Fridge_1")
    r = e.put("Fridge_1")
    assert not r.ok and "closed" in r.message
    e.world.at = "Toaster_1"
    r = e.put("Toaster_1")  # ALFRED allows only BreadSliced in a Toaster
    assert not r.ok and "cannot be put in a Toaster" in r.message
    r = e.put("Faucet_1")
    assert not r.ok and "not a receptacle" in r.message
    r = e.put("CounterTop_1")
    assert not r.ok and "not in reach" in r.message
    e.world.at = "Fridge_1"
    assert e.open("Fridge_1").ok
    assert e.put("Fridge_1").ok
    assert e.world.holding is None and e.world.objects["Apple_1"].parent == "Fridge_1"
    r = e.put("Fridge_1")
    assert not r.ok and "not holding" in r.message


def test_put_into_movable_receptacle(world_of):
    """A Spoon may go into a Cup (ALFRED VAL_RECEPTACLE_OBJECTS['Cup'])."""
    e = engine_of(world_of, ("Cup_1", "CounterTop_1"), ("Spoon_1", None), holding="Spoon_1", at="CounterTop_1")
    assert e.put("Cup_1").ok
    assert e.world.objects["Spoon_1"].parent == "Cup_1"


def test_put_into_the_held_receptacle_fails(world_of):
    e = engine_of(world_of, ("Bowl_1", None), holding="Bowl_1", at="CounterTop_1")
    r = e.put("Bowl_1")
    assert not r.ok and "in your hand" in r.message


def test_movable_receptacle_contents_move_with_it(world_of):
    e = engine_of(world_of, ("Bowl_1", "CounterTop_1"), ("Apple_1", "Bowl_1"), at="CounterTop_1")
    assert e.pickup("Bowl_1").ok
    w = e.world
    assert w.objects["Apple_1"].parent == "Bowl_1" and w.is_held("Apple_1")
    assert not w.is_inside("Apple_1", "CounterTop_1")
    assert e.goto("Fridge_1").ok and e.open("Fridge_1").ok and e.put("Fridge_1").ok
    assert w.is_inside("Apple_1", "Fridge_1")
    task = TaskSpec("pick_and_place_with_movable_recep", "Apple", "Fridge", mrecep_target="Bowl")
    assert goal_conditions_met(w, task) == (3, 3)


def test_drop(world_of):
    e = engine_of(world_of, ("Apple_1", None), holding="Apple_1", at="CounterTop_1")
    assert e.drop().ok
    assert e.world.holding is None and e.world.objects["Apple_1"].parent is None
    r = e.drop()
    assert not r.ok and "not holding" in r.message


def test_open_close_rules(world_of):
    e = engine_of(world_of, at="CounterTop_1")
    assert "not in reach" in e.open("Fridge_1").message
    assert "cannot be opened" in e.open("CounterTop_1").message
    e.world.at = "Fridge_1"
    assert "already closed" in e.close("Fridge_1").message
    assert e.open("Fridge_1").ok
    assert "already open" in e.open("Fridge_1").message


def test_slice_requires_knife_and_replaces_object(world_of):
    e = engine_of(world_of, ("Apple_1", "CounterTop_1", {"heated": True}), ("Knife_1", "CounterTop_1"),
                  at="Apple_1")
    r = e.slice("Apple_1")
    assert not r.ok and "Knife" in r.message
    assert e.pickup("Knife_1").ok
    e.world.at = "Apple_1"
    assert "cannot be sliced" in e.slice("CounterTop_1").message
    assert e.slice("Apple_1").ok
    w = e.world
    # AI2-THOR 2.x keeps the whole object (isSliced) beside the pieces, with its marks and parent.
    whole = w.objects["Apple_1"]
    assert whole.is_sliced and whole.inactive and whole.heated and whole.parent == "CounterTop_1"
    pieces = w.of_type("AppleSliced")
    assert len(pieces) >= 2 and all(w.objects[p].parent == "CounterTop_1" for p in pieces)
    assert all(w.objects[p].is_piece and not w.objects[p].inactive for p in pieces)
    # New object ids: not heated (ALFRED tracks heated objects by id).
    assert not any(w.objects[p].heated for p in pieces)
    assert w.at in pieces
    # The sliced whole can no longer be acted on.
    assert "has been sliced" in e.slice("Apple_1").message
    assert e.drop().ok
    assert "has been sliced" in e.goto("Apple_1").message
    assert "has been sliced" in e.pickup("Apple_1").message


def test_ai2thor_slice_needs_no_knife_but_not_the_held_object(world_of):
    """AI2-THOR 2.1.0's own SliceObject (PhysicsRemoteFPSAgentController.cs ``SliceObject``)
    checks visibility, "not in the agent's hand" and CanBeSliced, no knife: ``knife_required=False``.
    ALFRED's wrapper adds the knife check (the default, previous test)."""
    e = engine_of(world_of, ("Apple_1", "CounterTop_1"), ("Tomato_1", "CounterTop_1"), ("Egg_1", None),
                  holding="Egg_1", at="CounterTop_1")
    assert "Knife" in e.slice("Apple_1").message  # ALFRED's rule
    assert e.slice("Apple_1", knife_required=False).ok  # holding an Egg, no knife
    assert e.world.of_type("AppleSliced") and e.world.objects["Apple_1"].is_sliced
    assert e.drop().ok
    assert e.slice("Tomato_1", knife_required=False).ok  # empty hands
    # The held object itself cannot be sliced (either rule).
    e = engine_of(world_of, ("Apple_1", None), holding="Apple_1", at="CounterTop_1")
    for knife_required in (True, False):
        r = e.slice("Apple_1", knife_required=knife_required)
        assert not r.ok and "in your hand" in r.message and not e.world.objects["Apple_1"].is_sliced


def test_sliced_whole_stays_listed_in_its_receptacle_for_goal_checks(world_of):
    """After SliceObject the whole object stays in AI2-THOR 2.1.0's metadata (only its
    children are deactivated, SliceObject.cs ``Slice``) and in its receptacle's
    receptacleObjectIds (the trigger box is not told of a deactivated collider): ALFRED's
    substring selection (``Apple`` matches the whole and its pieces) still counts it in place."""
    task = TaskSpec("pick_and_place_simple", "Apple", "Fridge")
    e = engine_of(world_of, ("Apple_1", "Fridge_1"), ("Knife_1", None), holding="Knife_1", at="Fridge_1",
                  task=task)
    e.world.objects["Fridge_1"].is_open = True
    assert goal_conditions_met(e.world, task) == (1, 1)
    assert e.slice("Apple_1").ok
    whole = e.world.objects["Apple_1"]
    assert whole.is_sliced and whole.parent == "Fridge_1" and e.world.is_inside("Apple_1", "Fridge_1")
    assert goal_conditions_met(e.world, task) == (1, 1)
    # Pieces moved away leave the whole in place: still satisfied through the whole.
    for piece in e.world.of_type("AppleSliced"):
        e.world.objects[piece].parent = "CounterTop_1"
    assert goal_conditions_met(e.world, task) == (1, 1)
    # A sliced task counts pieces only ("AppleSliced" is not a substring of the whole's id).
    sliced_task = TaskSpec("pick_and_place_simple", "Apple", "Fridge", object_sliced=True)
    assert goal_conditions_met(e.world, sliced_task) == (1, 2)


def test_heat_then_slice_keeps_the_heated_goal_condition(world_of):
    """Heating a non-sliced-task target and then slicing it keeps ALFRED's 'heated'
    condition (the whole's id stays in heated_objects), as in AI2-THOR 2.x."""
    from envs.household import goal_conditions_met
    task = TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop")
    e = engine_of(world_of, ("Apple_1", "CounterTop_1", {"heated": True}), ("Knife_1", None),
                  holding="Knife_1", at="CounterTop_1", task=task)
    assert goal_conditions_met(e.world, task) == (3, 3)
    assert e.slice("Apple_1").ok
    assert goal_conditions_met(e.world, task) == (3, 3)


def test_microwave_cannot_be_turned_on_while_open(world_of):
    e = engine_of(world_of, ("Microwave_1", None), ("Apple_1", "Microwave_1"), at="Microwave_1")
    assert e.open("Microwave_1").ok
    r = e.toggle_on("Microwave_1")
    assert not r.ok and "close it" in r.message
    assert not e.world.objects["Apple_1"].heated and not e.world.objects["Microwave_1"].is_on
    assert e.close("Microwave_1").ok and e.toggle_on("Microwave_1").ok
    assert e.world.objects["Apple_1"].heated
    # Other toggleables are unaffected by the rule.
    e2 = engine_of(world_of, ("DeskLamp_1", None), at="DeskLamp_1")
    assert e2.toggle_on("DeskLamp_1").ok


def test_faucets_feed_basins_by_id_order(world_of):
    w = world_of(("SinkBasin_1", None), ("SinkBasin_2", None), ("SinkBasin_3", None),
                 ("Faucet_1", None), ("Faucet_2", None))
    assert w.basins_of("Faucet_1") == ["SinkBasin_1"]
    assert w.basins_of("Faucet_2") == ["SinkBasin_2"]
    w = world_of(("SinkBasin_1", None), ("Faucet_1", None), ("Faucet_2", None))
    assert w.basins_of("Faucet_1") == w.basins_of("Faucet_2") == ["SinkBasin_1"]
    assert w.basins_of("SinkBasin_1") == []


def test_double_sink_floor_plans_exist_in_alfred():
    """The layouts really have two-basin floor plans; each basin gets its own faucet."""
    from envs.household import all_floor_plans, floor_plan_inventory
    double = [n for n in all_floor_plans() if floor_plan_inventory(n).receptacle_count("SinkBasin") == 2]
    assert len(double) == 14, double
    # Two of them (412, 417) list no Faucet in alfworld's objects.json: no cleaning there at all.
    with_faucet = [n for n in double if floor_plan_inventory(n).has("Faucet")]
    assert sorted(set(double) - set(with_faucet)) == [412, 417]
    for n in with_faucet:
        w = build_world(n, seed=0)
        assert [w.basins_of(f) for f in w.of_type("Faucet")] == [[b] for b in w.of_type("SinkBasin")]


def test_butterknife_slices_too(world_of):
    e = engine_of(world_of, ("Bread_1", "CounterTop_1"), ("ButterKnife_1", None), holding="ButterKnife_1",
                  at="CounterTop_1")
    assert e.slice("Bread_1").ok
    assert e.world.of_type("BreadSliced")


def test_clean_rule(world_of):
    e = engine_of(world_of, ("Apple_1", "SinkBasin_1"), ("Mug_1", "SinkBasin_1"), ("Fork_1", "Mug_1"),
                  ("Egg_1", "CounterTop_1"), at="SinkBasin_1")
    assert e.toggle_on("Faucet_1").ok  # the faucet is in reach of its basin
    o = e.world.objects
    assert o["Apple_1"].cleaned and o["Mug_1"].cleaned and o["Fork_1"].cleaned
    assert not o["Egg_1"].cleaned
    assert "already on" in e.toggle_on("Faucet_1").message
    # Put into the running sink: not cleaned (the rule fires on toggling on only).
    e.world.at = "CounterTop_1"
    assert e.pickup("Egg_1").ok
    e.world.at = "SinkBasin_1"
    assert e.put("SinkBasin_1").ok
    assert not o["Egg_1"].cleaned
    assert e.toggle_off("Faucet_1").ok and e.toggle_on("Faucet_1").ok
    assert o["Egg_1"].cleaned


def test_heat_rule(world_of):
    e = engine_of(world_of, ("Mug_1", "Microwave_1"), ("Apple_1", "Mug_1"), ("Egg_1", "CounterTop_1"),
                  at="Microwave_1")
    assert e.toggle_on("Microwave_1").ok
    o = e.world.objects
    assert o["Mug_1"].heated and o["Apple_1"].heated and not o["Egg_1"].heated
    assert e.toggle_off("Microwave_1").ok
    assert "already off" in e.toggle_off("Microwave_1").message
    assert "cannot be turned on" in e.toggle_on("CounterTop_1").message


def test_cool_rule(world_of):
    e = engine_of(world_of, ("Apple_1", None), holding="Apple_1", at="Fridge_1")
    assert e.open("Fridge_1").ok and e.put("Fridge_1").ok
    assert not e.world.objects["Apple_1"].cooled  # opening/putting does not cool
    assert e.close("Fridge_1").ok
    assert e.world.objects["Apple_1"].cooled


def test_unknown_ids_never_raise(world_of):
    e = engine_of(world_of, at="CounterTop_1")
    for name in PRIMITIVES:
        if name == "drop":
            continue
        r = getattr(e, name)("Unicorn_7")
        assert not r.ok and "Unicorn_7" in r.message
    assert not e.execute("fly", "Apple_1").ok
    assert not e.execute("pickup").ok
    assert not e.goto("Unicorn_7").ok


def test_execute_dispatches(world_of):
    e = engine_of(world_of, ("Apple_1", "CounterTop_1"))
    assert e.execute("goto", "Apple_1").ok and e.execute("pickup", "Apple_1").ok
    assert e.execute("drop").ok


# --- end to end on built scenes: a scripted solver ------------------------------------
def _fetch(e: HouseholdEngine, obj_id: str) -> None:
    w = e.world
    assert e.goto(obj_id).ok
    box = next((a for a in w.ancestors(obj_id) if w.objects[a].openable and not w.objects[a].is_open), None)
    if box:
        assert e.open(box).ok
    r = e.pickup(obj_id)
    assert r.ok, r.message


def _place(e: HouseholdEngine, recep_id: str) -> None:
    w = e.world
    assert e.goto(recep_id).ok
    for r in [recep_id, *w.ancestors(recep_id)]:
        if w.objects[r].openable and not w.objects[r].is_open:
            assert e.open(r).ok
    r = e.put(recep_id)
    assert r.ok, r.message


def solve(e: HouseholdEngine, task: TaskSpec) -> None:
    """A scripted expert for the seven ALFRED task types (tests the engine end to end)."""
    w = e.world
    target = w.of_type(task.object_target)[0]
    if task.object_sliced:
        knife = (w.of_type("Knife") or w.of_type("ButterKnife"))[0]
        _fetch(e, knife)
        assert e.goto(target).ok
        box = next((a for a in w.ancestors(target) if w.objects[a].openable and not w.objects[a].is_open), None)
        if box:
            assert e.open(box).ok
        assert e.slice(target).ok
        target = w.of_type(task.target_type)[0]
        _place(e, w.of_type("CounterTop")[0] if w.of_type("CounterTop") else w.objects[target].parent)
    tt = task.task_type
    if tt == "pick_and_place_with_movable_recep":
        mrecep = w.of_type(task.mrecep_target)[0]
        _fetch(e, target)
        _place(e, mrecep)
        _fetch(e, mrecep)
        _place(e, w.of_type(task.parent_target)[0])
        return
    if tt == "look_at_obj_in_light":
        _fetch(e, target)
        lamp = w.of_type(task.toggle_target)[0]
        assert e.goto(lamp).ok and e.toggle_on(lamp).ok
        return
    targets = [target] + ([w.of_type(task.target_type)[1]] if tt == "pick_two_obj_and_place" else [])
    parent = w.of_type(task.parent_target)[0]
    for t in targets:
        _fetch(e, t)
        if tt == "pick_clean_then_place_in_recep":
            _place(e, w.of_type("SinkBasin")[0])
            assert e.toggle_on(w.of_type("Faucet")[0]).ok and e.toggle_off(w.of_type("Faucet")[0]).ok
            assert e.pickup(t).ok
        elif tt == "pick_heat_then_place_in_recep":
            _place(e, "Microwave_1")
            assert e.close("Microwave_1").ok and e.toggle_on("Microwave_1").ok and e.toggle_off("Microwave_1").ok
            assert e.open("Microwave_1").ok and e.pickup(t).ok
        elif tt == "pick_cool_then_place_in_recep":
            _place(e, "Fridge_1")
            assert e.close("Fridge_1").ok and e.open("Fridge_1").ok and e.pickup(t).ok
        _place(e, parent)


SOLVABLE = [
    (1, TaskSpec("pick_and_place_simple", "Apple", "Fridge")),
    (1, TaskSpec("pick_two_obj_and_place", "Egg", "Fridge")),
    (303, TaskSpec("look_at_obj_in_light", "BaseballBat", "", toggle_target="DeskLamp")),
    (1, TaskSpec("pick_clean_then_place_in_recep", "Mug", "CoffeeMachine")),
    (1, TaskSpec("pick_heat_then_place_in_recep", "Potato", "CounterTop")),
    (1, TaskSpec("pick_cool_then_place_in_recep", "Tomato", "CounterTop")),
    (6, TaskSpec("pick_and_place_with_movable_recep", "Spoon", "SinkBasin", mrecep_target="Cup")),
    (1, TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop", object_sliced=True)),
    (1, TaskSpec("pick_two_obj_and_place", "Bread", "CounterTop", object_sliced=True)),
    (1, TaskSpec("pick_and_place_with_movable_recep", "Potato", "CounterTop", mrecep_target="Pot",
                 object_sliced=True)),
]


@pytest.mark.parametrize("floor_plan,task", SOLVABLE, ids=lambda v: getattr(v, "task_type", str(v)))
@pytest.mark.parametrize("seed", [0, 1])
def test_scripted_expert_solves_built_scenes(floor_plan, task, seed):
    world = build_world(floor_plan, seed, task)
    s0, ts = goal_conditions_met(world, task)
    assert s0 == 0
    e = HouseholdEngine(world)
    solve(e, task)
    assert goal_conditions_met(e.world, task) == (ts, ts)


def test_engine_state_is_picklable_midway():
    task = TaskSpec("pick_cool_then_place_in_recep", "Tomato", "CounterTop")
    e = HouseholdEngine(build_world(1, 0, task))
    _fetch(e, e.world.of_type("Tomato")[0])
    clone = pickle.loads(pickle.dumps(e.world))
    assert clone == e.world and clone is not e.world
