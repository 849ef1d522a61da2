"""Scene facts restored from real ALFRED trajectory files (EmbodiedBench's json_2.1.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envs.household import TaskSpec, build_world, goal_conditions_met
from envs.household.restore import SceneFacts, coordinate_position, id_position, scene_facts

KEYCHAIN = "json_2.1.0/pick_two_obj_and_place-KeyChain-None-Sofa-202/trial_T20190908_102840_789300/pp/ann_0.json"


def _traj(data_dir: Path, rel: str) -> dict:
    path = data_dir / rel
    if not path.is_file():
        pytest.skip(f"{rel} not in the data folder")
    return json.loads(path.read_text())


def test_positions_from_ids_and_planner_coordinates() -> None:
    assert id_position("SideTable|+00.63|+00.00|+00.34") == (0.63, 0.0, 0.34)
    assert id_position("Sink|-00.58|+00.93|+04.87|SinkBasin") == (-0.58, 0.93, 4.87)
    assert id_position("StoveBurner") is None
    x, y, z = coordinate_position([2.508, 2.508, 1.36, 1.36, 0.008, 0.008])
    assert (round(x, 2), round(y, 2), round(z, 2)) == (0.63, 0.0, 0.34)


def test_keychain_trajectory_facts(data_dir: Path) -> None:
    traj = _traj(data_dir, KEYCHAIN)
    facts = scene_facts(traj)
    names = [p["objectName"].split("_")[0] for p in traj["scene"]["object_poses"]]
    assert facts.floor_plan == 202
    assert facts.counts["KeyChain"] == names.count("KeyChain") == 4
    assert facts.counts["RemoteControl"] == 3 and "Statue" in facts.counts
    assert "ScrubBrush" not in facts.counts  # no household counterpart
    first, second = facts.starts
    # The first key: the planner recorded its receptacle (coordinateReceptacleObjectId).
    assert first == first.__class__("KeyChain", "KeyChain|+00.63|+00.71|+00.42",
                                    "SideTable|+00.63|+00.00|+00.34", "recorded")
    # The second: none recorded; the nearest receptacle that may hold a KeyChain.
    assert second.obj_type == "KeyChain" and second.source in ("goto", "nearest")
    assert second.receptacle_id.startswith("TVStand|")
    assert facts.toggles == {} and facts.dirty_and_empty is False
    # init_action (-1.00, 1.75) is 0.25 m from the Sofa's layout pose (-1.25, 1.75).
    assert facts.start_receptacle == "Sofa|-01.16|+00.00|+00.45"
    assert SceneFacts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts


def test_restored_world_follows_the_facts(data_dir: Path) -> None:
    facts = scene_facts(_traj(data_dir, KEYCHAIN))
    task = TaskSpec("pick_two_obj_and_place", "KeyChain", "Sofa")
    w = build_world(202, 0, task, scene=facts)
    counts: dict[str, int] = {}
    for o in w.objects.values():
        if o.pickupable:
            counts[o.type] = counts.get(o.type, 0) + 1
    assert counts == facts.counts
    keys = w.of_type("KeyChain")
    parents = [w.objects[w.objects[k].parent].thor_id for k in keys[:2]]
    assert parents == ["SideTable|+00.63|+00.00|+00.34", facts.starts[1].receptacle_id]
    assert w.objects[w.at].thor_id == "Sofa|-01.16|+00.00|+00.45"
    assert goal_conditions_met(w, task) == (0, 2)
    # Deterministic; a floor-plan mismatch is refused.
    assert build_world(202, 0, task, scene=facts) == w
    with pytest.raises(ValueError, match="FloorPlan202"):
        build_world(201, 0, None, scene=facts)


def test_lamp_toggles_restored(data_dir: Path) -> None:
    root = data_dir / "json_2.1.0"
    if not root.is_dir():
        pytest.skip("json_2.1.0 not in the data folder")
    path = next(p for p in sorted(root.glob("look_at_obj_in_light-*/*/pp/ann_0.json")))
    traj = json.loads(path.read_text())
    facts = scene_facts(traj)
    assert facts.toggles and all(v is False for v in facts.toggles.values())
    on = SceneFacts.from_dict(dict(facts.to_dict(), toggles={k: True for k in facts.toggles}))
    w = build_world(facts.floor_plan, 0, None, scene=on)
    lamps = [o for o in w.objects.values() if o.type in facts.toggles]
    assert lamps and all(o.is_on for o in lamps)
