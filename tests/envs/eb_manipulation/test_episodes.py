"""The fixed, versioned evaluation set: sizes, scene reuse, relations, determinism."""

from __future__ import annotations

import collections
import json
from pathlib import Path

from envs.eb_manipulation import episodes as E

GOLDEN = Path(__file__).parent / "testdata" / "eval_set_sha256.json"


def test_sizes_match_the_original():
    sizes = {s: len(E.episodes(s)) for s in E.SUBSETS}
    assert sizes == {"base": 48, "common_sense": 48, "complex": 48, "spatial": 48, "visual": 36}
    assert sum(sizes.values()) == 228
    per_class = collections.Counter(e.metadata["task_class"] for s in E.SUBSETS for e in E.episodes(s))
    assert per_class == {"pick": 60, "stack": 60, "place": 60, "wipe": 48}
    assert not [e for e in E.episodes("visual") if e.metadata["task_class"] == "wipe"]
    ids = [e.key for s in E.SUBSETS for e in E.episodes(s)]
    assert len(set(ids)) == len(ids)


def test_styled_subsets_reuse_base_scenes_with_other_instructions():
    base = {e.metadata["scene_id"]: e for e in E.episodes("base")}
    for subset in ("common_sense", "complex", "visual"):
        for e in E.episodes(subset):
            b = base[e.metadata["scene_id"]]
            assert e.metadata["scene"] == b.metadata["scene"]
            assert e.instruction != b.instruction
    scenes = {json.dumps(e.metadata["scene"], sort_keys=True) for s in E.SUBSETS for e in E.episodes(s)}
    assert len(scenes) == 96


def test_base_variations_follow_the_original_lists():
    for e in E.episodes("base"):
        scene, i = e.metadata["scene"], e.metadata["index"]
        objs = {o["name"]: o for o in scene["objects"]}
        t = scene["target"]
        if scene["task_class"] == "pick":
            assert objs[t["object"]]["shape"] == E.PICK_SHAPES[i % 4]
            assert sum(o["kind"] == "container" for o in objs.values()) == 2
            assert 2 <= sum(o["kind"] == "shape" for o in objs.values()) <= 5
        elif scene["task_class"] == "stack":
            assert objs[t["bottom"]]["color"] == E.STACK_COLORS[i % 4]
            assert len({o["color"] for o in objs.values()}) == 4
        elif scene["task_class"] == "place":
            assert objs[t["object"]]["color"] == E.PLACE_COLORS[i % 5]
        else:
            assert t["direction"] == E.DIRECTIONS[i % 2] and len(scene["spots"]) == 50
            assert objs["area0"]["pos"] != objs["area1"]["pos"]


def test_spatial_relations_hold_in_the_scenes():
    for e in E.episodes("spatial"):
        scene = e.metadata["scene"]
        objs = {o["name"]: o for o in scene["objects"]}
        t = scene["target"]
        word = e.instruction
        if scene["task_class"] == "pick":
            assert E.relation(objs["object0"]["pos"], objs["object1"]["pos"]) == t["object_relation"]
            assert t["object_relation"] in word and t["container_relation"] in word
        elif scene["task_class"] == "stack":
            cubes = {n: o["pos"] for n, o in objs.items()}
            best = max(cubes, key=lambda n: E._extreme(t["bottom_relation"], cubes[n]))
            assert best == t["bottom"]
        elif scene["task_class"] == "wipe":
            assert E.relation(objs["area0"]["pos"], objs["area1"]["pos"]) == t["area_relation"]


def test_relation_is_in_the_robot_frame():
    assert E.relation([0.2, 0.0], [0.0, 0.0]) == "front"
    assert E.relation([-0.2, 0.0], [0.0, 0.0]) == "rear"
    assert E.relation([0.0, 0.2], [0.0, 0.0]) == "left"
    assert E.relation([0.0, -0.2], [0.0, 0.0]) == "right"


def test_generation_is_deterministic_and_pinned():
    """The eval set is versioned: a change to any scene or instruction must bump
    EVAL_SET_VERSION and this golden file (python -m tests.envs.eb_manipulation.test_episodes)."""
    digests = {s: E.eval_set_digest(s) for s in E.SUBSETS}
    assert E.make_scene("pick_cube_shape", 3) == E.make_scene("pick_cube_shape", 3)
    assert E.make_scene("pick_cube_shape", 3, seed=1) != E.make_scene("pick_cube_shape", 3)
    golden = json.loads(GOLDEN.read_text())
    assert golden == {"version": E.EVAL_SET_VERSION, "sha256": digests}


if __name__ == "__main__":  # regenerate the golden digests
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps({"version": E.EVAL_SET_VERSION,
                                  "sha256": {s: E.eval_set_digest(s) for s in E.SUBSETS}}, indent=1) + "\n")
