"""EB-ALFRED's put retry and pick/put failure messages, case by case from the original.

Source: EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04,
embodiedbench/envs/eb_alfred/thor_connector.py:

- :87-109 ``llm_skill_interact``: a put counts one put on the remembered receptacle
  *before* trying; a failure message (``len(ret) > 16``) with 3 or more puts on it
  drops the object and appends ". The robot dropped the object instead.";
- :338-426 ``put``: round k=0 tries the receptacle found; round k=1 excludes it and
  takes the closest other instance of the same type (``exclude_obj_id``), with
  ``forceAction=True``; no other instance leaves the message "First check *whether*
  the receptacle is open or not" (:378), a refused one "First check the receptacle is
  open or not" (:416); the name is the AI2-THOR id's first field (``Sink`` for a basin);
- :297-336 ``pick``: an object that is not visible and has a parent receptacle gives
  "... is not visible because it is in <recep>" (EBAlfEnv.py:356-362 rewrites the id to
  the instance name and appends "Go there to pick the object instead."), whatever the
  hand holds; otherwise the pickup is tried and its failure says "Robot is not holding
  any object" (empty hand) or "Robot is currently holding <type>".
"""

from __future__ import annotations

from envs.eb_alfred.executor import SkillExecutor
from envs.eb_alfred.skills import SceneVocabulary, parse_skill
from envs.household import World


def _ex(world: World) -> SkillExecutor:
    return SkillExecutor(world, SceneVocabulary(world))


def _do(ex: SkillExecutor, action: str):
    skill = parse_skill(action)
    assert skill is not None, action
    return ex.execute(skill)


def _kitchen(world_of, *, second_open: bool, holding: str | None = "Mug_1") -> SkillExecutor:
    return _ex(world_of(("Cabinet_1", None), ("Cabinet_2", None, {"is_open": second_open}),
                        ("CounterTop_1", None), ("Mug_1", None), ("Fridge_1", None),
                        ("SinkBasin_1", None), ("Apple_1", "Fridge_1"), ("Plate_1", "CounterTop_1"),
                        holding=holding))


def test_refused_put_goes_to_the_next_closest_instance(world_of) -> None:
    ex = _kitchen(world_of, second_open=True)
    assert _do(ex, "find a Cabinet").ok and ex.world.at == "Cabinet_1"  # closed
    res = _do(ex, "put down the object in hand")
    assert res.ok and ex.world.objects["Mug_1"].parent == "Cabinet_2"


def test_refused_by_every_instance_says_check_the_receptacle(world_of) -> None:
    ex = _kitchen(world_of, second_open=False)
    assert _do(ex, "find a Cabinet_2").ok
    res = _do(ex, "put down the object in hand")
    assert not res.ok
    assert res.message == ("Putting the object on Cabinet failed. First check the receptacle is open or not. "
                           "Also try other instances of the receptacle")
    assert ex.world.holding == "Mug_1"


def test_single_instance_says_check_whether(world_of) -> None:
    ex = _kitchen(world_of, second_open=False)
    assert _do(ex, "find a Fridge").ok
    res = _do(ex, "put down the object in hand")
    assert res.message == ("Putting the object on Fridge failed. First check whether the receptacle is open or "
                           "not. Also try other instances of the receptacle")


def test_a_basin_is_named_sink(world_of) -> None:
    ex = _kitchen(world_of, second_open=False, holding="Plate_1")
    ex.world.objects["Plate_1"].parent = None
    ex.world.objects["SinkBasin_1"].receptacle = False  # make it refuse: the message is the point
    assert _do(ex, "find a Sink").ok
    res = _do(ex, "put down the object in hand")
    assert res.message.startswith("Putting the object on Sink failed. First check whether")


def test_third_failed_put_drops_even_with_an_empty_hand(world_of) -> None:
    ex = _kitchen(world_of, second_open=False)
    for attempt in (1, 2, 3):
        assert _do(ex, "find a Fridge").ok
        res = _do(ex, "put down the object in hand")
        assert not res.ok and res.message.endswith("The robot dropped the object instead.") == (attempt == 3)
    assert ex.world.holding is None and ex.world.objects["Mug_1"].parent is None
    assert _do(ex, "find a Fridge").ok
    res = _do(ex, "put down the object in hand")  # 4th put on the Fridge, nothing held
    assert res.message == "Robot is not holding any object. The robot dropped the object instead."


def test_not_visible_comes_before_holding(world_of) -> None:
    ex = _kitchen(world_of, second_open=False)
    assert _do(ex, "find a CounterTop").ok
    res = _do(ex, "pick up the Apple")  # in the closed Fridge, while holding a Mug
    assert res.message == "Apple is not visible because it is in Fridge. Go there to pick the object instead."
    res = _do(ex, "pick up the Plate")  # visible, but the hand is full
    assert res.message == "Robot is currently holding Mug"


def test_out_of_sight_on_the_floor_reports_the_empty_hand(world_of) -> None:
    ex = _ex(world_of(("CounterTop_1", None), ("Mug_1", None), at="CounterTop_1"))
    res = _do(ex, "pick up the Mug")  # no parent receptacle: the pickup is tried and fails
    assert res.message == "Robot is not holding any object"
    res = _do(ex, "pick up the Spaceship")
    assert res.message == "Cannot find Spaceship to pick up. Find the object before picking up it"
