"""The AI2-THOR backends through a FAKE controller that replays payloads built from the real
json_2.1.0 trajectory files (AI2-THOR cannot start here or in CI), and a real-simulator
check that skips with its reason when no ai2thor build can start."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from envs.alfred.agents import AlfredOraclePlanner
from envs.alfred.suite import AlfredSuite
from envs.eb_alfred.suite import EBAlfredSuite
from envs.household import TaskSpec, goal_conditions_met
from tests.envs.thor.fake import FakeController
from envs.thor.restore import initialize_action, restore, restore_calls
from envs.thor.session import SimulatorCrash, ThorSession
from envs.thor.state import StateMarks, world_from_metadata
from harness.interfaces import AgentRequest
from harness.run.runner import Runner
from harness.types import RunSpec

KEYCHAIN = "pick_two_obj_and_place-KeyChain-None-Sofa-202/trial_T20190908_102840_789300"


def _files(data_dir: Path) -> list[Path]:
    files = sorted((data_dir / "json_2.1.0").glob("*/*/pp/ann_*.json"))
    if not files:
        pytest.skip("json_2.1.0 not in the data folder")
    return files


def test_restore_calls_from_every_real_trajectory(data_dir: Path) -> None:
    """ALFRED's restore order and arguments, for all 213 files."""
    init = initialize_action()
    assert init == dict(action="Initialize", gridSize=0.25, cameraY=0.75, renderImage=True, renderDepthImage=True,
                        renderClassImage=True, renderObjectImage=True, visibility_distance=1.5,
                        makeAgentsVisible=False)
    dirty = toggled = 0
    for path in _files(data_dir):
        traj = json.loads(path.read_text())
        scene = traj["scene"]
        calls = restore_calls(traj)
        assert calls[0] == ("reset", f"FloorPlan{scene['scene_num']}")
        assert calls[1] == calls[2] == ("step", init)
        names = [a["action"] for k, a in calls[3:]]
        expect = (["SetObjectToggles"] if scene["object_toggles"] else []) + (
            ["SetStateOfAllObjects"] * 2 if scene["dirty_and_empty"] else []) + ["SetObjectPoses", "TeleportFull"]
        assert names == expect, path
        assert calls[-2][1]["objectPoses"] == scene["object_poses"]
        assert calls[-1][1] == scene["init_action"]
        dirty += scene["dirty_and_empty"]
        toggled += bool(scene["object_toggles"])
    assert dirty == 31 and toggled == 23
    # The fake receives exactly these calls through a session.
    traj = json.loads(_files(data_dir)[0].read_text())
    fake = FakeController(traj)
    session = ThorSession(lambda: fake)
    restore(session, traj)
    assert fake.calls == [(k, a) for k, a in restore_calls(traj)]


def _thor_alfred(data_dir: Path, factory) -> tuple[AlfredSuite, object]:
    suite = AlfredSuite(eb_data_dir=str(data_dir), backend="thor", render=False)
    suite.controller_factory = factory
    ep = next(e for e in suite.episodes("eb_valid_seen") if e.episode_id == f"{KEYCHAIN}/0")
    return suite, ep


def test_goal_conditions_and_marks_from_a_metadata_payload() -> None:
    def obj(oid, t, parents=None, **kw):
        base = dict(objectId=oid, objectType=t, position={"x": 0.0, "y": 0.0, "z": 0.0}, visible=True,
                    receptacle=False, openable=False, isOpen=False, toggleable=False, isToggled=False,
                    sliceable=False, isSliced=False, pickupable=False, parentReceptacles=parents,
                    receptacleObjectIds=None)
        base.update(kw)
        return base
    md = {"lastActionSuccess": True, "inventoryObjects": [], "objects": [
        obj("Microwave|1|1|1", "Microwave", receptacle=True, openable=True, toggleable=True,
            receptacleObjectIds=["Apple|0|0|0"]),
        obj("CounterTop|2|1|2", "CounterTop", receptacle=True, receptacleObjectIds=["Bowl|3|1|3", "Apple|9|9|9"]),
        obj("Bowl|3|1|3", "Bowl", ["CounterTop|2|1|2"], receptacle=True, pickupable=True,
            receptacleObjectIds=["Apple|9|9|9"]),
        obj("Apple|0|0|0", "Apple", ["Microwave|1|1|1"], pickupable=True, sliceable=True),
        obj("Apple|9|9|9", "Apple", ["Bowl|3|1|3", "CounterTop|2|1|2"], pickupable=True, sliceable=True),
    ]}
    marks = StateMarks()
    marks.update({"action": "ToggleObjectOn", "objectId": "Microwave|1|1|1"}, md)
    assert marks.heated == {"Apple|0|0|0"}
    task = TaskSpec("pick_heat_then_place_in_recep", "Apple", "CounterTop")
    w = world_from_metadata(md, 1, task, marks)
    assert w.objects["Apple|9|9|9"].parent == "Bowl|3|1|3"  # innermost of parentReceptacles
    assert goal_conditions_met(w, task) == (2, 3)  # one in place, one heated, not the same one
    md["objects"][3]["parentReceptacles"] = ["CounterTop|2|1|2"]
    assert goal_conditions_met(world_from_metadata(md, 1, task, marks), task) == (3, 3)
    marks.update({"action": "ToggleObjectOn", "objectId": "Microwave|1|1|1"}, dict(md, lastActionSuccess=False))
    assert marks.heated == {"Apple|0|0|0"}


def test_crash_restart_and_hang_detection(data_dir: Path) -> None:
    traj = json.loads((data_dir / "json_2.1.0" / KEYCHAIN / "pp" / "ann_0.json").read_text())
    made: list[FakeController] = []

    def factory():
        # The first process dies on its 4th call; later ones are healthy.
        made.append(FakeController(traj, crash_on={3} if not made else ()))
        return made[-1]

    session = ThorSession(factory, max_restarts=2)
    session.run_with_restarts(lambda: restore(session, traj))
    assert len(made) == 2 and session.crashes == 1 and made[0].stopped
    assert made[1].calls == list(restore_calls(traj))

    hung = ThorSession(lambda: FakeController(traj, hang_on={1}, hang_s=5), step_timeout_s=0.3, max_restarts=1)
    with pytest.raises(SimulatorCrash, match="hung"):
        hung.run_with_restarts(lambda: restore(hung, traj))
    assert hung.crashes == 2


def test_runner_records_a_simulator_that_keeps_crashing_as_an_env_error(data_dir: Path) -> None:
    suite, ep = _thor_alfred(data_dir, lambda: FakeController(crash_on={6}))  # 0-4 restore, 5 GetReachablePositions, 6 the walk
    suite.max_restarts = 1

    class OneEpisode:
        name, privileged = "alfred_oracle", True

        def identity(self):
            return {"name": "x"}

        def reset(self, episode):
            pass

        def act(self, requests):
            return [["GotoLocation Sofa"] for _ in requests]

    from harness.run import identity as identity_mod
    orig = identity_mod.select_episodes
    identity_mod.select_episodes = lambda s, sp: [ep]
    try:
        records = Runner(RunSpec(suite="alfred", split="eb_valid_seen", agent="x", variant="v", max_retries=1),
                         suite, OneEpisode(), None).run().records
    finally:
        identity_mod.select_episodes = orig
    (record,) = records
    assert record.error_kind == "env" and record.attempts == 2 and "died" in record.error_message


def _can_start_real_thor() -> str | None:
    try:
        import ai2thor  # noqa: F401
    except ImportError:
        return "ai2thor is not installed (pip install -e '.[thor]')"
    if not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None:
        return "no X display and no Xvfb: ai2thor 2.1.0 needs an X server"
    if not (Path.home() / ".ai2thor" / "releases").is_dir() and not os.environ.get("AI2THOR_ALLOW_DOWNLOAD"):
        return "no ai2thor 2.1.0 Unity build in ~/.ai2thor/releases (set AI2THOR_ALLOW_DOWNLOAD=1 to fetch one)"
    return None


@pytest.mark.slow
def test_real_simulator_restores_and_scores_an_episode(data_dir: Path) -> None:
    reason = _can_start_real_thor()
    if reason:
        pytest.skip(f"real AI2-THOR cannot start: {reason}")
    suite = AlfredSuite(eb_data_dir=str(data_dir), backend="thor", render=False)
    ep = next(e for e in suite.episodes("eb_valid_seen") if e.episode_id == f"{KEYCHAIN}/0")
    env = suite.make_env()
    try:
        obs, info = env.reset(seed=0, options={"episode": ep, "privileged": True})
        assert info["gc_total"] == 2
        (plan,) = AlfredOraclePlanner().act([AgentRequest(ep, obs, info)])
        for action in plan:
            obs, _, _, _, info = env.step(action)
        print("real AI2-THOR oracle result:", info["success"], info["gc_satisfied"], info["gc_total"])
    finally:
        env.close()


def test_calls_fit_the_real_ai2thor_2_1_0_api() -> None:
    """The session's controller calls bind to ai2thor 2.1.0's real signatures (no Unity needed)."""
    ai2thor = pytest.importorskip("ai2thor", reason="ai2thor is not installed (pip install -e '.[thor]')")
    import inspect

    from ai2thor.controller import Controller
    from envs.thor.session import DEFAULT_QUALITY, SCREEN_SIZE, THOR_VERSION, default_controller_factory

    assert ai2thor.__version__ == THOR_VERSION
    controller = default_controller_factory()
    assert isinstance(controller, Controller) and controller.quality == DEFAULT_QUALITY
    inspect.signature(Controller.start).bind(controller, player_screen_width=SCREEN_SIZE,
                                             player_screen_height=SCREEN_SIZE, x_display="99")
    inspect.signature(Controller.reset).bind(controller, "FloorPlan1")
    inspect.signature(Controller.step).bind(controller, {"action": "Pass"})
    for name in ("stop", "last_event", "unity_pid"):
        assert hasattr(controller, name)


def test_missing_ai2thor_is_one_line_before_any_episode(data_dir: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("ai2thor") is not None:
        pytest.skip("ai2thor is installed here")
    with pytest.raises(ValueError, match=r"pip install -e '\.\[thor\]'"):
        AlfredSuite(eb_data_dir=str(data_dir), backend="thor").episodes("eb_valid_seen")
    with pytest.raises(ValueError, match="ai2thor==2.1.0"):
        EBAlfredSuite(data_dir=str(data_dir), backend="thor").episodes("base")
    with pytest.raises(ValueError, match="^backend must be one of 'household', 'thor', got 'unity'$"):
        AlfredSuite(backend="unity")
