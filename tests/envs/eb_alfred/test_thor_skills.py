"""The thor backend's EmbodiedBench rules on real episodes, without an EmbodiedBench checkout.

Our thor backend runs over the recording stand-in (``tests/envs/thor/fake.py``, made-up
obstacles on) on real official episodes, and the calls it records are checked against
rules read from EmbodiedBench at commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04
(``embodiedbench/envs/eb_alfred/``; file:line on each test). The expected sequences are
written out here from those lines, not taken from the module under test. The same
backend against EmbodiedBench's own classes, call for call: test_thor_differential.py.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from envs.eb_alfred.suite import EBAlfredSuite
from envs.eb_alfred.thor_skills import ThorSkillExecutor
from envs.thor.restore import initialize_action
from tests.envs.thor.fake import FakeController, layouts_dir

pytest.importorskip("scipy", reason="the thor backend's find needs scipy's KDTree (extra `thor`)")
if layouts_dir() is None:  # alfworld (extra `maintainer`) or $EMBODIEDBENCH_DIR holds them
    pytest.skip("no ALFRED reachable grids (gen/layouts) for the stand-in", allow_module_level=True)

#: FloorPlan4 (a kitchen, dirty_and_empty): one Fridge, closed; the expert's Ladle.
KITCHEN = "base/00"


@lru_cache(maxsize=1)
def _suite(data_dir: Path) -> EBAlfredSuite:
    suite = EBAlfredSuite(data_dir=str(data_dir), backend="thor", render=False)
    suite.controller_factory = FakeController  # loads the episodes without ai2thor
    return suite


class Episode:
    """Our thor backend on one official episode over a fresh stand-in."""

    def __init__(self, data_dir: Path, episode_id: str) -> None:
        suite = _suite(data_dir)
        suite.controller_factory = lambda: self.made.append(FakeController(self.traj, obstacles=True)) or self.made[-1]
        split, index = episode_id.split("/")
        self.made: list[FakeController] = []
        self.spec = suite.episodes(split)[int(index)]
        self.traj = json.loads((data_dir / self.spec.metadata["trajectory"]).read_text())
        self.env = suite.make_env()
        self.env.reset(options={"episode": self.spec})

    @property
    def stand_in(self) -> FakeController:
        return self.made[-1]

    def step(self, skill: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Run ``skill``: its info, the controller steps it issued, and the metadata before each."""
        n = len(self.stand_in.calls)
        info = self.env.step(skill)[4]
        calls = [a for _, a in self.stand_in.calls[n:]]
        return info, calls, self.stand_in.events[n - 1:-1]

    def objects(self, obj_type: str) -> list[dict[str, Any]]:
        return [o for o in self.stand_in.metadata["objects"] if o["objectType"] == obj_type]


def test_restore_adds_reachable_positions_and_a_standing_start_teleport(data_dir: Path) -> None:
    """EBAlfEnv.py:255-260 (reset, restore_scene, the init_action minus rotateOnTeleport plus
    standing=True); env/thor_env.py:48-76, 95-120 (Initialize twice, dirty/empty, poses);
    thor_connector.py:34-44 (GetReachablePositions inside restore_scene)."""
    ep = Episode(data_dir, KITCHEN)
    scene = ep.traj["scene"]
    init = {k: v for k, v in scene["init_action"].items() if k != "rotateOnTeleport"}
    assert scene["dirty_and_empty"] and not scene["object_toggles"] and "rotateOnTeleport" in scene["init_action"]
    assert ep.stand_in.calls == [
        ("reset", "FloorPlan4"),
        ("step", initialize_action()), ("step", initialize_action()),
        ("step", {"action": "SetStateOfAllObjects", "StateChange": "CanBeDirty", "forceAction": True}),
        ("step", {"action": "SetStateOfAllObjects", "StateChange": "CanBeFilled", "forceAction": False}),
        ("step", {"action": "SetObjectPoses", "objectPoses": scene["object_poses"]}),
        ("step", {"action": "GetReachablePositions"}),
        ("step", {**init, "standing": True}),
    ]
    # gen/constants.py:11, 90-101: EmbodiedBench's Initialize values are ALFRED's.
    assert initialize_action() == dict(action="Initialize", gridSize=0.25, cameraY=0.75, renderImage=True,
                                       renderDepthImage=True, renderClassImage=True, renderObjectImage=True,
                                       visibility_distance=1.5, makeAgentsVisible=False)


def _look(before: dict[str, Any], delta: int) -> dict[str, Any]:
    """env/thor_env.py:145-148, 338-365: LookUp (-15) / LookDown (+15) as a TeleportFull."""
    agent = before["agent"]
    return {"action": "TeleportFull", "rotation": round(agent["rotation"]["y"], 4), "x": agent["position"]["x"],
            "z": agent["position"]["z"], "y": agent["position"]["y"],
            "horizon": round(agent["cameraHorizon"] + delta, 3), "tempRenderChange": True,
            "renderNormalsImage": False, "renderImage": True, "renderClassImage": False,
            "renderObjectImage": False, "renderDepthImage": False}


#: thor_connector.py:383-411: before the j-th PutObject of a round: nothing; LookUp x2;
#: LookDown x4; LookUp x2 + MoveBack; MoveAhead + MoveRight x4; MoveLeft x8; MoveRight x4 +
#: RotateHand(x=40). A look is one TeleportFull (env/thor_env.py:145-148).
PUT_ROUND = (["PutObject"] + ["TeleportFull"] * 2 + ["PutObject"] + ["TeleportFull"] * 4 + ["PutObject"]
             + ["TeleportFull"] * 2 + ["MoveBack", "PutObject", "MoveAhead"] + ["MoveRight"] * 4 + ["PutObject"]
             + ["MoveLeft"] * 8 + ["PutObject"] + ["MoveRight"] * 4 + ["RotateHand", "PutObject"])


def test_a_refused_put_retries_with_the_recovery_moves_and_the_third_drops(data_dir: Path) -> None:
    """thor_connector.py:338-426 (put: 7 poses; the second round looks for another Fridge,
    finds none, and its message is the "whether" one, :378); :97-109 (the third failing put
    on the same name drops, DropHandObject forceAction=True, :431-434)."""
    ep = Episode(data_dir, KITCHEN)
    for skill in ("find a Ladle", "pick up the Ladle", "find a Fridge"):
        assert ep.step(skill)[0]["action_ok"], skill
    (fridge,) = ep.objects("Fridge")
    ladle = ep.stand_in.metadata["inventoryObjects"][0]["objectId"]
    assert not fridge["isOpen"]
    for n in (1, 2, 3):
        info, calls, before = ep.step("put down the object in hand")
        names = [a["action"] for a in calls]
        assert names == PUT_ROUND + (["DropHandObject"] if n == 3 else [])
        puts = [a for a in calls if a["action"] == "PutObject"]
        assert all(a == {"action": "PutObject", "objectId": ladle, "receptacleObjectId": fridge["objectId"],
                         "forceAction": True} for a in puts)
        assert {"action": "RotateHand", "x": 40} in calls
        deltas = iter([-15, -15, 15, 15, 15, 15, -15, -15])
        looks = [(a, b) for a, b in zip(calls, before) if a.get("tempRenderChange")]
        assert len(looks) == 8 and all(a == _look(b, next(deltas)) for a, b in looks)
        message = ("Putting the object on Fridge failed. First check whether the receptacle is open or not. "
                   "Also try other instances of the receptacle")
        assert info["feedback"] == "Last action is invalid. " + message + (
            ". The robot dropped the object instead." if n == 3 else "")
    assert calls[-1] == {"action": "DropHandObject", "forceAction": True}
    assert ep.stand_in.metadata["inventoryObjects"] == []


def test_a_refused_open_moves_back_right_then_left(data_dir: Path) -> None:
    """thor_connector.py:446-494: OpenObject(objectId) only (no moveMagnitude), 4 tries with
    MoveBack / MoveBack, MoveRight / MoveLeft x2 between; "already open" when it was open.
    :496-521: one CloseObject; "already closed" when it is closed afterwards."""
    ep = Episode(data_dir, KITCHEN)
    assert ep.step("find a Fridge")[0]["action_ok"]
    (fridge,) = ep.objects("Fridge")
    opened = {"action": "OpenObject", "objectId": fridge["objectId"]}
    info, calls, _ = ep.step("open the Fridge")
    assert info["action_ok"] and calls[-1] == opened
    info, calls, _ = ep.step("open the Fridge")
    assert calls == [opened, {"action": "MoveBack"}, opened, {"action": "MoveBack"}, {"action": "MoveRight"}, opened,
                     {"action": "MoveLeft"}, {"action": "MoveLeft"}, opened]
    assert info["feedback"] == "Last action is invalid. Open action failed. The Fridge is already open"
    closed = {"action": "CloseObject", "objectId": fridge["objectId"]}
    assert ep.step("close the fridge")[1] == [closed]  # utils.py:109-119: "fridge" -> "Fridge"
    info, calls, _ = ep.step("close the Fridge")
    assert calls == [closed]
    assert info["feedback"] == "Last action is invalid. Close action failed. The Fridge is already closed"


def _grid(ep: Episode) -> list[tuple[float, float]]:
    (event,) = [e for e in ep.stand_in.events if e["lastAction"] == "GetReachablePositions"]
    return [(p["x"], p["z"]) for p in event["actionReturn"]]


def _found(ep: Episode, skill: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The last teleport of a successful find and the object it faces."""
    info, calls, _ = ep.step(skill)
    assert info["action_ok"] and calls and all(a["action"] == "TeleportFull" for a in calls)
    (obj,) = [o for o in ep.stand_in.metadata["objects"] if o["objectId"] == ep.env._executor.at]
    return calls[-1], obj


def test_find_faces_the_object_from_the_nearest_reachable_position(data_dir: Path) -> None:
    """thor_connector.py:201-233: the first try is the nearest reachable position, y=0.9,
    rotation atan2 toward the object, horizon -0.9 x the angle up to it from 0.9+0.75 m."""
    ep = Episode(data_dir, KITCHEN)
    teleport, ladle = _found(ep, "find a Ladle")
    loc = ladle["position"]
    dx, dz = loc["x"] - teleport["x"], loc["z"] - teleport["z"]
    assert teleport["y"] == 0.9
    assert math.hypot(dx, dz) == min(math.dist(p, (loc["x"], loc["z"])) for p in _grid(ep))
    assert math.isclose(teleport["rotation"], math.degrees(math.atan2(dx, dz)) % 360)
    assert math.isclose(teleport["horizon"], -0.9 * math.degrees(math.atan2(loc["y"] - 1.65, math.hypot(dx, dz))))


def _off(fridge: dict[str, Any], p: tuple[float, float]) -> float:
    """How far the facing from ``p`` toward the Fridge is from the Fridge's rotation (0-180)."""
    loc = fridge["position"]
    facing = math.degrees(math.atan2(loc["x"] - p[0], loc["z"] - p[1]))
    return abs((facing - fridge["rotation"]["y"] + 180) % 360 - 180)


def test_a_fridge_is_found_from_its_side_during_the_first_ten_tries(data_dir: Path) -> None:
    """thor_connector.py:204-221: for a Fridge the first 10 tries skip positions facing it
    other than 70-110 (or 250-290) degrees off its rotation; the 11th starts again from the
    nearest, unfiltered."""
    ep = Episode(data_dir, "visual_appearance/41")  # FloorPlan21: 8 nearer positions, 2-66 degrees off
    teleport, fridge = _found(ep, "find a Fridge")
    here = (fridge["position"]["x"], fridge["position"]["z"])
    chosen = (teleport["x"], teleport["z"])
    nearer = [p for p in _grid(ep) if math.dist(p, here) < math.dist(chosen, here)]
    assert 70 < _off(fridge, chosen) < 110
    assert len(nearer) >= 8 and not any(70 < _off(fridge, p) < 110 for p in nearer)
    ep = Episode(data_dir, "base/01")  # FloorPlan15: none of the 10 nearest is off by 70-110
    teleport, fridge = _found(ep, "find a Fridge")
    here = (fridge["position"]["x"], fridge["position"]["z"])
    chosen = (teleport["x"], teleport["z"])
    assert math.dist(chosen, here) == min(math.dist(p, here) for p in _grid(ep))
    assert not 70 < _off(fridge, chosen) < 110


def test_slicing_needs_no_knife_and_names_then_reach_the_pieces(data_dir: Path) -> None:
    """thor_connector.py:560-575: a bare SliceObject with empty hands; :126 (something was
    sliced) and :287-288 (pieces, ``_Slice`` in the name, win by 100): find and pick up
    the Apple then take a piece (:170-173: an instance id finds its nearest piece)."""
    ep = Episode(data_dir, "base/01")  # FloorPlan15
    assert ep.step("find a Apple")[0]["action_ok"]
    apple = ep.env._executor.at
    info, calls, _ = ep.step("slice the Apple")
    assert ep.stand_in.events[-2]["inventoryObjects"] == []
    assert info["action_ok"] and calls == [{"action": "SliceObject", "objectId": apple}]
    info, calls, _ = ep.step("find a Apple")
    assert info["action_ok"] and ep.env._executor.at.startswith(apple + "|AppleSliced_")
    info, calls, _ = ep.step("pick up the Apple")
    assert info["action_ok"] and calls[-1]["objectId"].startswith(apple + "|AppleSliced_")


def test_turning_a_faucet_on_cleans_what_is_dirty_in_the_basin(data_dir: Path) -> None:
    """env/thor_env.py:156-161, 465-480 (check_clean: Pass, then CleanObject for each dirty
    object in the closest visible SinkBasin) and :170-174 (the basin's contents are cleaned)."""
    ep = Episode(data_dir, "spatial/02")  # a Mug in a dirty_and_empty kitchen
    for skill in ("find a Mug", "pick up the Mug", "find a Sink", "put down the object in hand"):
        assert ep.step(skill)[0]["action_ok"], skill
    (basin,) = [o for o in ep.objects("SinkBasin") if o["receptacleObjectIds"]]
    dirty = [k for k in basin["receptacleObjectIds"]
             if next(o for o in ep.stand_in.metadata["objects"] if o["objectId"] == k)["isDirty"]]
    assert any(k.startswith("Mug|") for k in dirty)
    info, calls, _ = ep.step("turn on the Faucet")
    assert info["action_ok"] and [a["action"] for a in calls] == ["ToggleObjectOn", "Pass"] + ["CleanObject"] * len(dirty)
    assert [a["objectId"] for a in calls[2:]] == dirty
    assert set(basin["receptacleObjectIds"]) <= ep.env._executor.marks.cleaned


def test_a_hidden_object_is_still_tried_and_named_by_its_receptacle(data_dir: Path) -> None:
    """thor_connector.py:306-316 (not visible and in a receptacle: the message names the
    receptacle id and PickupObject(forceAction=False) is still sent); EBAlfEnv.py:356-362
    (the id becomes its instance name, else its type, and the advice is appended)."""
    ep = Episode(data_dir, KITCHEN)
    info, calls, _ = ep.step("pick up the Egg")
    (egg,) = [o for o in ep.stand_in.events[-2]["objects"] if o["objectId"] == calls[0]["objectId"]]
    assert calls == [{"action": "PickupObject", "objectId": egg["objectId"], "forceAction": False}]
    assert not egg["visible"] and egg["parentReceptacles"][0].startswith("DiningTable|")
    assert info["feedback"] == ("Last action is invalid. Egg is not visible because it is in DiningTable. "
                                "Go there to pick the object instead.")


def test_instance_names_follow_the_metadata_order(data_dir: Path) -> None:
    """EBAlfEnv.py:157-187, 304-307: the k-th pickupable of a type in ``metadata['objects']``
    is ``Type_k`` (the first keeps the bare name); ``find a Apple_2`` goes to exactly that object."""
    ep = Episode(data_dir, KITCHEN)
    apples = [o["objectId"] for o in ep.objects("Apple")]
    assert len(apples) == 3 and sorted(apples) != apples  # metadata order, not id order
    assert {"find a Apple_2", "find a Apple_3"} <= set(ep.env.actions) and "find a Apple_1" not in ep.env.actions
    assert ep.step("find a Apple_2")[0]["action_ok"]
    assert ep.env._executor.at == apples[1]
    assert ep.step("find a Apple")[0]["action_ok"]
    assert ep.env._executor.at == apples[0]


def _md_object(oid: str, distance: float, *, name: str = "", visible: bool = True, parents: list | None = None,
               **flags: Any) -> dict[str, Any]:
    return {"objectId": oid, "objectType": oid.split("|")[-1 if oid.count("|") == 4 else 0].split("_")[0],
            "name": name or oid.split("|")[0] + "_0a1b2c3d", "distance": distance, "visible": visible,
            "parentReceptacles": parents, "receptacleObjectIds": flags.pop("contents", None),
            "pickupable": True, "toggleable": False, "openable": False, "isOpen": False, **flags}


def test_instance_choice_is_distance_plus_embodiedbenchs_penalties() -> None:
    """thor_connector.py:247-295 (get_obj_id_from_name) on a hand-made metadata list: +100000
    inside a closed openable, +10000 an occupied StoveBurner, +1000 not visible (when asked),
    -100 ``_Slice`` in the name (once something was sliced); a strict ``<`` keeps the first of
    equals; a name with digits is matched in ``name``; basin lookups take 5-part ids only."""
    fridge = _md_object("Fridge|+01.00|+00.00|+01.00", 4.0, pickupable=False, openable=True, contents=[])
    objects = [
        fridge,
        _md_object("Apple|+01.00|+01.00|+01.00", 0.5, visible=False, parents=[fridge["objectId"]]),
        _md_object("Apple|+02.00|+01.00|+02.00", 1.0, visible=False),
        _md_object("Apple|+03.00|+01.00|+03.00", 3.0),
        _md_object("Apple|+04.00|+01.00|+04.00", 3.0),
        _md_object("Apple|+05.00|+01.00|+05.00|AppleSliced_0", 50.0, name="Apple_0a1b2c3d_Slice_1"),
        _md_object("StoveBurner|+00.10|+01.00|+00.10", 1.0, pickupable=False, contents=["Pan|+00.10|+01.10|+00.10"]),
        _md_object("StoveBurner|+00.20|+01.00|+00.20", 2.0, pickupable=False, contents=[]),
        _md_object("Sink|+00.30|+01.00|+00.30", 1.0, pickupable=False),
        _md_object("Sink|+00.30|+01.00|+00.30|SinkBasin", 1.5, pickupable=False, contents=[]),
    ]
    ex = ThorSkillExecutor.__new__(ThorSkillExecutor)
    ex.metadata = {"objects": objects}
    ids = [o["objectId"] for o in objects]

    def pick(name: str, **kw: Any) -> str | None:
        return ex._object_named(name, **kw)[0]

    assert pick("Apple") == ids[2]  # distance; the nearer one is in a closed Fridge
    assert pick("apple", visible_first=True) == ids[3]  # the first of two visible at 3.0
    assert pick("Apple", visible_first=True, sliced_first=True) == ids[3]  # 50 m: never below the best
    assert pick("Apple", exclude=ids[2]) == ids[3]
    assert pick("StoveBurner") == ids[7]
    assert pick("Sink") == ids[8] and pick("Sink", inherited=True) == ids[9]
    assert pick("Apple_0a1b") == ids[1] and pick("Apple_9") is None
    fridge["isOpen"] = True
    assert pick("Apple") == ids[1]
    # The bonus counts only for a piece nearer than the best so far (the raw distance is checked first).
    piece, whole = objects[5], objects[3]
    ex.metadata = {"objects": [dict(piece, distance=2.0), dict(whole, distance=1.9)]}
    assert pick("Apple", sliced_first=True) == piece["objectId"] and pick("Apple") == whole["objectId"]
    ex.metadata = {"objects": [dict(whole, distance=1.9), dict(piece, distance=2.0)]}
    assert pick("Apple", sliced_first=True) == whole["objectId"]
