"""The fixed, versioned evaluation set: sizes, scene reuse, relations, determinism."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation import sim as S

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
    """Object counts and variations per family, from the original's task files
    (EmbodiedBench b247936 ``envs/eb_manipulation/vlm/tasks/``)."""
    for e in E.episodes("base"):
        scene, i = e.metadata["scene"], e.metadata["index"]
        objs = {o["name"]: o for o in scene["objects"]}
        shapes = [o for o in objs.values() if o["kind"] == "shape"]
        t = scene["target"]
        if scene["task_class"] == "pick":
            # pick_cube_shape.py:11-17: the target shape and 1..4 other shapes, two containers
            assert objs[t["object"]]["shape"] == E.PICK_SHAPES[i % 4]
            assert sum(o["kind"] == "container" for o in objs.values()) == 2
            assert 2 <= len(shapes) <= 5 and len({o["shape"] for o in shapes}) == len(shapes)
        elif scene["task_class"] == "stack":
            # stack_cubes.py:26-29, :89-94: four copies of one shape; stack_cubes_color.py:31-34
            assert len(shapes) == 4 and len({o["shape"] for o in shapes}) == 1
            assert objs[t["bottom"]]["color"] == E.STACK_COLORS[i % 4]
            assert len({o["color"] for o in shapes}) == 4
            assert shapes[0]["shape"] in E.STACK_SHAPES
        elif scene["task_class"] == "place":
            # place_into_shape_sorter_color.py:12: three copies of one shape, no distractors:
            # with the sorter, 4 objects
            assert len(objs) == 4 and len(shapes) == 3 and len({o["shape"] for o in shapes}) == 1
            assert objs[t["object"]]["color"] == E.PLACE_COLORS[i % 5]
        else:
            assert t["direction"] == E.DIRECTIONS[i % 2] and len(scene["spots"]) == 50
            assert objs["area0"]["pos"] != objs["area1"]["pos"]
            assert objs["area0"]["shape"] == objs["area1"]["shape"] == "rectangle"
    stack_shapes = {o["shape"] for e in E.episodes("base") if e.metadata["task_class"] == "stack"
                    for o in e.metadata["scene"]["objects"]}
    assert len(stack_shapes) >= 3  # a random shape per episode, not cubes only


def test_spatial_scenes_follow_the_original_pattern():
    """pick_cube_relative (pick_cube.py:77-88): two objects, each shape drawn on its own;
    stack_cubes_relative.py:19-33: two copies each of two shapes; place_into_shape_sorter_relative.py:14:
    two copies of one shape (3 objects with the sorter); wipe_table_relative: two areas of one shape."""
    area_shapes = set()
    for e in E.episodes("spatial"):
        scene = e.metadata["scene"]
        objs = {o["name"]: o for o in scene["objects"]}
        shapes = [o for o in objs.values() if o["kind"] == "shape"]
        t = scene["target"]
        word = e.instruction
        if scene["task_class"] == "pick":
            assert len(shapes) == 2
            assert E.relation(objs["object0"]["pos"], objs["object1"]["pos"]) == t["object_relation"]
            assert t["object_relation"] in word and t["container_relation"] in word
        elif scene["task_class"] == "stack":
            assert [o["shape"] for o in shapes][::2] == [o["shape"] for o in shapes][1::2]
            assert shapes[0]["shape"] != shapes[2]["shape"]
            assert E.relation(objs["object0"]["pos"], objs["object1"]["pos"]) == t["bottom_relation"]
            assert E.relation(objs["object2"]["pos"], objs["object3"]["pos"]) == t["top_relation"]
            # the two objects named are told apart: different shapes (not "the left cube on the left cube")
            assert E.SHAPE_WORDS[shapes[0]["shape"]] in word and E.SHAPE_WORDS[shapes[2]["shape"]] in word
        elif scene["task_class"] == "place":
            assert len(objs) == 3 and len(shapes) == 2 and shapes[0]["shape"] == shapes[1]["shape"]
            assert E.relation(objs["object0"]["pos"], objs["object1"]["pos"]) == t["object_relation"]
        else:
            assert E.relation(objs["area0"]["pos"], objs["area1"]["pos"]) == t["area_relation"]
            assert objs["area0"]["shape"] == objs["area1"]["shape"]
            area_shapes.add(objs["area0"]["shape"])
    assert area_shapes >= {"round", "star"}  # const.py seen_planes: round and star areas too


def test_dirt_spots_follow_the_area_shape():
    """wipe_table.py:161-191: on a directional area 50 spots evenly along the long axis with a
    N(0, 5 mm) offset across; on a round / star area, within half the half-extent of the centre."""
    import math
    import statistics

    seen = set()
    for subset in ("base", "spatial"):
        for e in E.episodes(subset):
            scene = e.metadata["scene"]
            if scene["task_class"] != "wipe":
                continue
            area = next(o for o in scene["objects"] if o["name"] == scene["target"]["area"])
            c, s_ = math.cos(area["yaw"]), math.sin(area["yaw"])
            local = [((x - area["pos"][0]) * c + (y - area["pos"][1]) * s_,
                      -(x - area["pos"][0]) * s_ + (y - area["pos"][1]) * c) for x, y in scene["spots"]]
            assert len(local) == 50
            seen.add(area["shape"])
            if area["shape"] == "rectangle":
                us = [u for u, _ in local]
                steps = [b - a for a, b in zip(us, us[1:])]
                assert max(steps) - min(steps) < 1e-3 and abs(steps[0] - S.AREA_SIZE[1] / 50) < 1e-3
                assert abs(us[0] + S.AREA_SIZE[1] / 2) < 1e-3
                assert statistics.pstdev([v for _, v in local]) < 0.009
            else:
                assert max(math.hypot(u, v) for u, v in local) <= S.AREA_RADIUS / 2 + 1e-3
    assert seen == {"rectangle", "round", "star"}


def test_common_sense_keeps_the_colour_word():
    """The original's common_sense rewrite keeps the colour word: every colour
    the base instruction names is in the common_sense one too."""
    base = {e.metadata["scene_id"]: e for e in E.episodes("base")}
    for e in E.episodes("common_sense"):
        b = base[e.metadata["scene_id"]]
        colours = [c for c in S.COLORS if f" {c} " in f" {b.instruction.rstrip('.')} "]
        assert all(f" {c} " in f" {e.instruction.rstrip('.')} " for c in colours), (b.instruction, e.instruction)


def test_relation_is_in_the_robot_frame():
    assert E.relation([0.2, 0.0], [0.0, 0.0]) == "front"
    assert E.relation([-0.2, 0.0], [0.0, 0.0]) == "rear"
    assert E.relation([0.0, 0.2], [0.0, 0.0]) == "left"
    assert E.relation([0.0, -0.2], [0.0, 0.0]) == "right"


def _distinct_scenes():
    return {e.metadata["scene_id"]: e.metadata["scene"] for s in ("base", "spatial") for e in E.episodes(s)}


def test_objects_spread_over_the_originals_region_within_reach():
    """Object centres spread over the extent of EmbodiedBench's example scenes (X bins 27-84,
    sd 14; Y bins 11-86, evaluator/config/eb_manipulation_example.py) as far as the twin's arm
    reaches: every centre, and every wipe area's sponge path end, inside the reach ring."""
    from envs.eb_manipulation import grammar as G

    bins = []
    for scene in _distinct_scenes().values():
        for o in scene["objects"]:
            x, y = o["pos"]
            assert E.reachable(x, y), (scene["family"], o["name"], o["pos"])
            assert E.SPAWN_X[0] <= x <= E.SPAWN_X[1] and E.SPAWN_Y[0] <= y <= E.SPAWN_Y[1]
            bins.append(G.position_to_bin([x, y, S.TABLE_Z])[:2])
            if o["kind"] == "area":
                half = (S.AREA_SIZE[1] / 2 if o["shape"] == "rectangle" else S.AREA_RADIUS / 2) + 0.01
                for t in (-half, half):
                    assert E.reachable(x + t * np.cos(o["yaw"]), y + t * np.sin(o["yaw"]))
    xs, ys = np.array(bins).T
    assert xs.min() <= 30 and xs.max() >= 75 and xs.std() >= 12.0, (xs.min(), xs.max(), xs.std())
    assert ys.min() <= 15 and ys.max() >= 82 and ys.std() >= 18.0, (ys.min(), ys.max(), ys.std())


def test_far_objects_are_reached_pointing_down():
    """The ring's far bound is the arm's: at every object centre farther than 0.6 m from the base
    (the side the original's extent widened), the IK finds the hand pointing down (the action's
    tip frame) at grasp and at approach height, at one of the object's grasp yaws (its own yaw or
    a quarter turn on). The near bound is the earlier region's (the oracle's sweeps cover it)."""
    scenes = _distinct_scenes()
    world = S.PandaTable(next(iter(scenes.values())))
    checked = 0
    for scene in scenes.values():
        for o in scene["objects"]:
            x, y = o["pos"]
            d = float(np.hypot(x - S.ROBOT_BASE[0], y - S.ROBOT_BASE[1]))
            if d <= 0.6:
                continue
            checked += 1
            for dz in (0.02, 0.11):
                p = np.array([x, y, S.TABLE_Z + dz])
                found = False
                for yaw in (o["yaw"], o["yaw"] + np.pi / 2):
                    rot = S.top_down_rotation(yaw) @ S.TIP_TO_SITE
                    for r in (rot, rot @ S.HALF_TURN_Z):
                        for seed in (S.HOME_Q, *S.IK_WRIST_SEEDS):
                            _, ep, er = world.ik(p, r, seed)
                            if ep < S.IK_POS_TOL and er < S.IK_ROT_TOL:
                                found = True
                                break
                        if found:
                            break
                    if found:
                        break
                assert found, (scene["family"], o["name"], o["pos"], dz, round(d, 3))
    assert checked >= 20


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
