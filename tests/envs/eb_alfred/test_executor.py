"""EB-ALFRED execution semantics on the household engine."""

from __future__ import annotations

from envs.eb_alfred.executor import PUT_FAILS_BEFORE_DROP, SkillExecutor
from envs.eb_alfred.skills import SceneVocabulary, parse_skill
from envs.household import TaskSpec, World, build_world


def _executor(task: TaskSpec, floor_plan: int = 1, seed: int = 0) -> SkillExecutor:
    world = build_world(floor_plan, seed, task)
    return SkillExecutor(world, SceneVocabulary(world))


def _do(ex: SkillExecutor, action: str):
    skill = parse_skill(action)
    assert skill is not None
    return ex.execute(skill)


def test_protocol_constant_put_fails_before_drop() -> None:
    assert PUT_FAILS_BEFORE_DROP == 3  # EmbodiedBench thor_connector.py


def test_find_teleports_and_put_goes_to_last_found() -> None:
    ex = _executor(TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    w: World = ex.world
    mug = sorted(w.of_type("Mug"))[0]
    name = ex.vocab.display_name(w, mug)
    parent = w.objects[mug].parent
    if parent is not None and w.objects[parent].openable:
        assert _do(ex, f"find a {ex.vocab.display_name(w, parent)}").ok
        assert _do(ex, f"open the {ex.vocab.display_name(w, parent)}").ok
    assert _do(ex, f"find a {name}").ok
    assert w.at == mug
    assert _do(ex, "pick up the Mug").ok and w.holding == mug
    counter = ex.vocab.instance("CounterTop") or w.of_type("CounterTop")[0]
    assert _do(ex, "find a CounterTop").ok and w.at == counter
    assert _do(ex, "put down the object in hand").ok
    assert w.objects[mug].parent == counter and w.holding is None


def test_put_without_a_found_receptacle_drops() -> None:
    ex = _executor(TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    w = ex.world
    mug = sorted(w.of_type("Mug"))[0]
    w.objects[mug].parent = None  # lying on the floor, reachable once found
    assert _do(ex, f"find a {ex.vocab.display_name(w, mug)}").ok
    assert ex.state.cur_receptacle == mug
    assert _do(ex, "pick up the Mug").ok  # any skill but put down / open forgets the receptacle
    assert ex.state.cur_receptacle is None
    assert _do(ex, "put down the object in hand").ok
    assert w.holding is None and w.objects[mug].parent is None


def test_failed_puts_drop_after_three() -> None:
    ex = _executor(TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    w = ex.world
    mug = sorted(w.of_type("Mug"))[0]
    w.objects[mug].parent = None
    assert _do(ex, f"find a {ex.vocab.display_name(w, mug)}").ok and _do(ex, "pick up the Mug").ok
    fridge = w.of_type("Fridge")[0]
    assert not w.objects[fridge].is_open
    for attempt in range(1, 4):
        assert _do(ex, "find a Fridge").ok
        res = _do(ex, "put down the object in hand")
        assert not res.ok and "Putting the object on Fridge failed" in res.message
        dropped = "dropped the object instead" in res.message
        assert dropped == (attempt >= 3)
    assert w.holding is None


def test_pick_up_failures_have_reasons() -> None:
    ex = _executor(TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    res = _do(ex, "pick up the Mug")  # nothing found yet
    assert not res.ok and ("not visible" in res.message or "Find the object" in res.message)
    res = _do(ex, "pick up the Spaceship")
    assert not res.ok and "Cannot find Spaceship" in res.message
    res = _do(ex, "find a Sofa")  # not in a kitchen
    assert not res.ok and "may not exist in this scene" in res.message


def test_slicing_names_pieces_by_their_parent() -> None:
    ex = _executor(TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop", object_sliced=True))
    w = ex.world
    knife = (w.of_type("Knife") or w.of_type("ButterKnife"))[0]
    for r in (w.objects[knife].parent, w.objects[sorted(w.of_type("Apple"))[0]].parent):
        if r and w.objects[r].openable:
            w.objects[r].is_open = True
    w.objects[knife].parent = None
    assert _do(ex, f"find a {ex.vocab.display_name(w, knife)}").ok
    assert _do(ex, f"pick up the {w.objects[knife].type}").ok
    assert _do(ex, "find a Apple").ok
    assert _do(ex, "slice the Apple").ok
    assert w.of_type("AppleSliced")
    assert _do(ex, "drop the object in hand").ok
    assert _do(ex, "pick up the Apple").ok
    assert w.objects[w.holding].type == "AppleSliced"


def test_open_close_failures_name_the_type_as_embodiedbench_does() -> None:
    """EmbodiedBench thor_connector.py:451-453 / 499-501 (b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04):
    an instance name reaches ``open``/``close`` as an AI2-THOR id (EBAlfEnv.py:306-307) whose
    first field becomes the name in the message (:476-477 "Open action failed. The {type} is
    already open", :514-518 "Close action failed. The {type} is already closed"); a bare
    name passes through natural_word_to_ithor_name (utils.py:109-119), which capitalises it."""
    ex = _executor(TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    assert "Cabinet_2" in ex.vocab.instance_ids
    cases = [
        ("find a Cabinet_2", ""), ("open the Cabinet_2", ""),
        ("open the Cabinet_2", "Open action failed. The Cabinet is already open"),
        ("close the Cabinet_2", ""),
        ("close the Cabinet_2", "Close action failed. The Cabinet is already closed"),
        ("find a Fridge", ""),
        ("close the fridge", "Close action failed. The Fridge is already closed"),
        ("open the Fridge", ""),
        ("open the fridge", "Open action failed. The Fridge is already open"),
    ]
    for action, message in cases:
        assert _do(ex, action).message == message, action


def test_slice_needs_no_knife_as_embodiedbench_sends_a_bare_slice_object() -> None:
    """EmbodiedBench ``ThorConnector.slice`` (thor_connector.py:560-574) steps
    ``SliceObject`` with the object id only; AI2-THOR 2.1.0's action needs no knife. Its cases:
    a sliceable object found -> success with empty hands; an unknown name -> "Cannot find X to
    slice"; a failing SliceObject -> "Slice action failed"."""
    ex = _executor(TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop", object_sliced=True))
    w = ex.world
    apple = sorted(w.of_type("Apple"))[0]
    parent = w.objects[apple].parent
    if parent and w.objects[parent].openable:
        w.objects[parent].is_open = True
    assert w.holding is None
    assert _do(ex, f"find a {ex.vocab.display_name(w, apple)}").ok
    res = _do(ex, "slice the Apple")
    assert res.ok and w.objects[apple].is_sliced and w.of_type("AppleSliced")
    res = _do(ex, "slice the Spaceship")
    assert not res.ok and res.message == "Cannot find Spaceship to slice"
    # The held object cannot be sliced (AI2-THOR refuses it), reported as EmbodiedBench does.
    ex = _executor(TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop", object_sliced=True))
    w = ex.world
    apple = sorted(w.of_type("Apple"))[0]
    w.objects[apple].parent = None
    w.holding = apple
    res = _do(ex, "slice the Apple")
    assert not res.ok and res.message == "Slice action failed" and not w.objects[apple].is_sliced
