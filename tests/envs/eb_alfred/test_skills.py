"""Skill language: the global list, parsing, scene names."""

from __future__ import annotations

import json
import re

import pytest

from envs.eb_alfred.skills import (
    DROP, FIND_OBJECTS, NUM_GLOBAL_ACTIONS, OPEN_OBJECTS, PICKUP_OBJECTS, PUT_DOWN, SLICE_OBJECTS,
    TOGGLE_OBJECTS, SceneVocabulary, Skill, global_actions, parse_skill, split_instance,
)
from envs.household import TaskSpec, build_world


def test_global_list_has_162_actions_in_embodiedbench_order() -> None:
    actions = global_actions()
    assert len(actions) == NUM_GLOBAL_ACTIONS == 162
    assert (len(FIND_OBJECTS), len(PICKUP_OBJECTS), len(OPEN_OBJECTS), len(TOGGLE_OBJECTS), len(SLICE_OBJECTS)) \
        == (80, 53, 7, 4, 5)
    assert len(set(actions)) == 162
    assert actions[0] == "find a Cart" and actions[79] == "find a Sink"
    assert actions[80] == "pick up the KeyChain"
    assert actions[133:135] == (PUT_DOWN, DROP)
    assert actions[135:137] == ("open the Safe", "close the Safe")
    assert actions[-1] == "slice the Bread"


def test_action_ids_match_embodiedbench_in_context_examples(data_dir) -> None:
    """Every (action_id, action_name) pair in EB-ALFRED's prompt examples indexes our list."""
    actions = global_actions()
    pairs = []
    for name in ("alfred_examples.json", "alfred_long_horizon_examples.json"):
        for example in json.loads((data_dir / "examples" / name).read_text()):
            pairs += re.findall(r'"action_id": (\d+), "action_name": "([^"]+)"', example)
    assert len(pairs) > 50
    for action_id, action_name in pairs:
        assert actions[int(action_id)] == action_name


@pytest.mark.parametrize("text,expected", [
    ("find a Cabinet_2", Skill("find", "Cabinet_2")),
    ("  Find an apple. ", Skill("find", "apple")),
    ("pick up the Mug", Skill("pick_up", "Mug")),
    ("put down the object in hand", Skill("put_down")),
    ("drop the object in hand", Skill("drop")),
    ("open the Fridge", Skill("open", "Fridge")),
    ("close the Drawer_3", Skill("close", "Drawer_3")),
    ("turn on the DeskLamp", Skill("turn_on", "DeskLamp")),
    ("turn off the Faucet", Skill("turn_off", "Faucet")),
    ("slice the Tomato", Skill("slice", "Tomato")),
])
def test_parse_skill(text: str, expected: Skill) -> None:
    assert parse_skill(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "fly to the moon", "find", "find a", "pick up Mug",
                                  "put down the Mug", '{"action_id": 3}', "find a Cabinet 2"])
def test_parse_rejects_non_skills(text: str) -> None:
    assert parse_skill(text) is None


def test_every_global_action_round_trips() -> None:
    for action in global_actions():
        skill = parse_skill(action)
        assert skill is not None and skill.text == action


def test_split_instance() -> None:
    assert split_instance("Cabinet_2") == ("Cabinet", 2)
    assert split_instance("Cabinet") == ("Cabinet", 1)
    assert split_instance("Glassbottle") == ("Glassbottle", 1)


def test_scene_vocabulary_instance_names_and_action_list() -> None:
    world = build_world(1, 0, TaskSpec("pick_and_place_simple", "Mug", "CounterTop"))
    vocab = SceneVocabulary(world)
    cabinets = sorted(world.of_type("Cabinet"), key=split_instance)
    assert len(cabinets) >= 2
    # The first instance keeps the bare name; the others are Type_k -> engine Type_k.
    assert vocab.instance("Cabinet") == cabinets[0]
    assert vocab.instance("Cabinet_2") == cabinets[1]
    assert vocab.instance("cabinet_2") == cabinets[1]
    assert vocab.actions[:162] == global_actions()
    extra = vocab.actions[162:]
    assert "find a Cabinet_2" in extra and "open the Cabinet_2" in extra and "close the Cabinet_2" in extra
    assert "find a Cabinet" not in extra
    # Receptacle names first (sorted as strings), then their open/close, then pickables.
    finds = [a for a in extra if a.startswith("find a ")]
    first_open = extra.index(next(a for a in extra if a.startswith("open the ")))
    recep_finds = [a for a in finds if extra.index(a) < first_open]
    assert recep_finds == sorted(recep_finds)
    assert vocab.is_listed("FIND A cabinet_2")
    assert vocab.display_name(world, cabinets[1]) == "Cabinet_2"
