"""The ``thor`` backend against EmbodiedBench's own code, controller call for controller call.

EmbodiedBench's ``EBAlfEnv`` (with its ``ThorConnector`` and ``ThorEnv``, and ALFRED's
goal code in ``env/tasks.py``) is imported from a checkout (``$EMBODIEDBENCH_DIR``, at
commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04) with the recording stand-in of
``tests/envs/thor/fake.py`` as ``ai2thor.controller.Controller``; our thor backend runs
over a second, fresh stand-in through the suite's ``controller_factory``. Both get the
same skill strings: the plan our ``oracle`` makes for the episode on the household
backend, fed one skill at a time and stopped where EmbodiedBench's evaluator stops
(success, 30 steps, 10 invalid actions). Compared: every ``reset`` / ``step`` call with
its arguments, the scene's action list, and per step the success flag, the feedback
text, goal conditions (ALFRED's ``goal_conditions_met`` on the stand-in's metadata vs
the household goal code on the world rebuilt from it) and the end of the episode.

Only what cannot import here is stubbed, for the duration of the test module:
``embodiedbench.main`` (its import makes a symlink in the working directory),
``data/preprocess.py`` (revtok, torch, vocab), ``gym`` (gymnasium stands in when gym is
absent), and the Ubuntu font ``ThorConnector`` loads (Pillow's default font when the
file is missing). The checkout's data paths point at ``$EB_ALFRED_DATA_DIR``; nothing
is copied.

The full run (300 episodes, ``-m slow``) writes its summary to the terminal; the
result is in docs/eb_alfred.md ("AI2-THOR backend").
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

from envs.eb_alfred.agents import OraclePlanner
from envs.eb_alfred.protocol import OFFICIAL_SPLITS
from envs.eb_alfred.suite import EBAlfredSuite
from harness.interfaces import AgentRequest
from harness.types import EpisodeSpec
from tests.conftest import REQUIRE_DATA_ENV, eb_alfred_data_or_none
from tests.envs.thor.fake import FakeController, layouts_dir

pytest.importorskip("scipy", reason="the thor backend and ThorConnector need scipy's KDTree")

#: A checkout's EB-ALFRED package (EmbodiedBench's layout at b247936).
EB_ALFRED = Path("embodiedbench") / "envs" / "eb_alfred"
#: ``tasks.py`` reads these sections of ``models/config/rewards.json`` (env/reward.py); used
#: only when a checkout lacks the file. The values move EmbodiedBench's reward, which is not compared.
MINIMAL_REWARDS = {
    "Generic": {"success": 2, "failure": -0.05, "step_penalty": -0.01, "goal_reward": 5},
    **{name: {"positive": 1, "negative": 0, "neutral": 0, "invalid_action": -0.1, "min_reach_distance": 3}
       for name in ("BaseAction", "GotoLocationAction", "PickupObjectAction", "PutObjectAction",
                    "OpenObjectAction", "CloseObjectAction", "ToggleObjectAction", "SliceObjectAction",
                    "CleanObjectAction", "HeatObjectAction", "CoolObjectAction")},
}


class RecordingController(FakeController):
    """The stand-in with its made-up obstacles on, so retries and recovery moves happen."""

    obstacles = True


def _checkout() -> Path:
    root = os.environ.get("EMBODIEDBENCH_DIR")
    if not root or not (Path(root) / EB_ALFRED / "EBAlfEnv.py").is_file():
        pytest.skip("set EMBODIEDBENCH_DIR to an EmbodiedBench checkout (commit b247936) to run its EBAlfEnv "
                    "side by side with the thor backend")
    return Path(root)


def _data() -> Path:
    data = eb_alfred_data_or_none()
    if data is None:
        reason = "EB-ALFRED data not found: set EB_ALFRED_DATA_DIR"
        if os.environ.get(REQUIRE_DATA_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_DATA_ENV}=1: the data tests must not be skipped)", pytrace=False)
        pytest.skip(reason)
    return data


@contextlib.contextmanager
def _original_modules(root: Path, data: Path, tmp: Path) -> Iterator[types.ModuleType]:
    """Import ``EBAlfEnv`` from the checkout over the stand-in; undo every stub afterwards."""
    import PIL.ImageFont

    before = set(sys.modules)
    saved = {k: sys.modules[k] for k in ("gym", "ai2thor", "ai2thor.controller") if k in sys.modules}
    ai2thor = types.ModuleType("ai2thor")
    controller = types.ModuleType("ai2thor.controller")
    controller.Controller = RecordingController  # type: ignore[attr-defined]
    ai2thor.controller = controller  # type: ignore[attr-defined]
    sys.modules.update({"ai2thor": ai2thor, "ai2thor.controller": controller})
    try:
        import gym  # noqa: F401
    except ImportError:
        import gymnasium

        sys.modules["gym"] = gymnasium
    main = types.ModuleType("embodiedbench.main")
    main.logger = logging.getLogger("EB_logger")  # type: ignore[attr-defined]
    preprocess = types.ModuleType("embodiedbench.envs.eb_alfred.data.preprocess")
    preprocess.Dataset = object  # type: ignore[attr-defined]
    sys.modules.update({main.__name__: main, preprocess.__name__: preprocess})
    truetype = PIL.ImageFont.truetype

    def font(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, str) and not Path(path).is_file():
            return PIL.ImageFont.load_default()
        return truetype(path, *args, **kwargs)

    PIL.ImageFont.truetype = font
    sys.path.insert(0, str(root))
    try:
        import embodiedbench.envs.eb_alfred.EBAlfEnv as eb_env
        import embodiedbench.envs.eb_alfred.utils as eb_utils

        def load_task_json(task: dict) -> dict:
            path = data / "json_2.1.0" / task["task"] / "pp" / f"ann_{task['repeat_idx']}.json"
            return json.loads(path.read_text())

        eb_utils.load_task_json = load_task_json
        eb_env.ALFRED_SPLIT_PATH = str(data / "splits" / "splits.json")
        if not Path(eb_env.ALFRED_REWARD_PATH).is_file():
            (tmp / "rewards.json").write_text(json.dumps(MINIMAL_REWARDS))
            eb_env.ALFRED_REWARD_PATH = str(tmp / "rewards.json")
        yield eb_env
    finally:
        sys.path.remove(str(root))
        PIL.ImageFont.truetype = truetype
        for name in set(sys.modules) - before:
            if name in ("gym", "ai2thor", "embodiedbench") or name.startswith(("gym.", "ai2thor.", "embodiedbench.")):
                del sys.modules[name]
        for name in ("ai2thor", "ai2thor.controller", "gym"):
            sys.modules.pop(name, None)
        sys.modules.update(saved)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Iterator[types.ModuleType]:
    root, data = _checkout(), _data()
    if layouts_dir() is None:
        pytest.skip("no ALFRED reachable grids (gen/layouts) for the stand-in")
    with _original_modules(root, data, tmp_path_factory.mktemp("eb")) as eb_env:
        yield eb_env


@dataclass
class Run:
    """What one side did in one episode."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    #: per step: (success of the action, feedback, (gc satisfied, gc total), task success, episode over)
    steps: list[tuple[bool, str, tuple[int, int], bool, bool]] = field(default_factory=list)
    error: str | None = None


@lru_cache(maxsize=1)
def _episodes() -> dict[str, list[EpisodeSpec]]:
    suite = EBAlfredSuite(data_dir=str(_data()), render=False)
    return {split: list(suite.episodes(split)) for split in OFFICIAL_SPLITS}


@lru_cache(maxsize=None)
def oracle_plan(episode_id: str) -> tuple[str, ...]:
    """Our oracle's plan for the episode on the household backend, from its start state."""
    split, index = episode_id.split("/")
    spec = _episodes()[split][int(index)]
    env = EBAlfredSuite(data_dir=str(_data()), render=False).make_env()
    obs, info = env.reset(options={"episode": spec, "privileged": True})
    (plan,) = OraclePlanner().act([AgentRequest(spec, obs, info)])
    return tuple(plan)


def _traj(spec: EpisodeSpec) -> dict:
    return json.loads((_data() / spec.metadata["trajectory"]).read_text())


def run_original(eb_env: types.ModuleType, spec: EpisodeSpec, plan: tuple[str, ...]) -> Run:
    split, index = spec.episode_id.split("/")
    run = Run()
    with contextlib.redirect_stdout(io.StringIO()):
        env = eb_env.EBAlfEnv(eval_set=split, selected_indexes=[int(index)], resolution=500)
        env.env.traj = _traj(spec)  # the stand-in reads the episode's scene facts from it
        try:
            env.reset()
            run.actions = list(env.language_skill_set)
            for action in plan:
                _, _, done, info = env.step(action)
                s, ts = env.env.get_goal_conditions_met()
                run.steps.append((bool(info["last_action_success"]), info["env_feedback"], (int(s), int(ts)),
                                  bool(info["task_success"]), bool(done)))
                if done:
                    break
        except Exception as exc:  # noqa: BLE001 - recorded as a difference
            run.error = f"{type(exc).__name__}: {exc}"
        run.calls = list(env.env.calls)
    return run


def run_ours(spec: EpisodeSpec, plan: tuple[str, ...]) -> Run:
    suite = EBAlfredSuite(data_dir=str(_data()), backend="thor", render=False)
    made: list[FakeController] = []
    traj = _traj(spec)
    suite.controller_factory = lambda: made.append(RecordingController(traj)) or made[-1]
    env = suite.make_env()
    run = Run()
    try:
        _, info = env.reset(options={"episode": spec})
        run.actions = list(env.actions)
        for action in plan:
            _, _, terminated, truncated, info = env.step(action)
            run.steps.append((bool(info["action_ok"]), info["feedback"], (info["gc_satisfied"], info["gc_total"]),
                              bool(info["success"]), terminated or truncated))
            if terminated or truncated:
                break
    except Exception as exc:  # noqa: BLE001 - recorded as a difference
        run.error = f"{type(exc).__name__}: {exc}"
    run.calls = list(made[-1].calls) if made else []
    env.close()
    return run


def differences(theirs: Run, ours: Run) -> list[str]:
    """Every way the two runs differ, first difference of each kind."""
    out = []
    if theirs.error or ours.error:
        out.append(f"error: EmbodiedBench {theirs.error!r}, ours {ours.error!r}")
    if theirs.actions != ours.actions:
        out.append(f"action list: {sorted(set(theirs.actions) ^ set(ours.actions))[:6]}")
    for i, (a, b) in enumerate(zip(theirs.calls, ours.calls)):
        if a != b:
            out.append(f"call {i}: EmbodiedBench {a!r} != ours {b!r}")
            break
    if len(theirs.calls) != len(ours.calls):
        out.append(f"calls: EmbodiedBench {len(theirs.calls)}, ours {len(ours.calls)}")
    for i, (a, b) in enumerate(zip(theirs.steps, ours.steps)):
        if a != b:
            out.append(f"step {i}: EmbodiedBench {a!r} != ours {b!r}")
            break
    if len(theirs.steps) != len(ours.steps):
        out.append(f"steps: EmbodiedBench {len(theirs.steps)}, ours {len(ours.steps)}")
    return out


#: A fixed plan for every scene that walks the paths an oracle rarely takes: failures with
#: empty hands, a name with digits no instance has, lower-case names, open/close twice,
#: picking what is already held, three puts into a closed Fridge (the third drops the
#: object), slicing twice, a sliced name, faucet and microwave toggles. In a scene without
#: the object each step is the "Cannot find" path; the 10-invalid / 30-step limits cut it.
PROBE_PLAN = (
    "drop the object in hand", "put down the object in hand", "find a Cabinet_99", "find a fridge",
    "open the fridge", "open the Fridge", "close the Fridge", "close the fridge", "find a Apple",
    "pick up the Apple", "pick up the Apple", "put down the object in hand", "pick up the Apple", "find a Fridge",
    "put down the object in hand", "put down the object in hand", "put down the object in hand",
    "slice the Apple", "slice the Apple", "find a Apple", "pick up the Apple", "find a Sink",
    "put down the object in hand", "turn on the Faucet", "turn off the Faucet", "find a Microwave",
    "open the Microwave", "turn on the Microwave", "close the Microwave", "turn on the Microwave",
)


def compare(eb_env: types.ModuleType, episode_id: str, plan: tuple[str, ...] | None = None
            ) -> tuple[Run, Run, list[str]]:
    """Both sides on one episode with ``plan`` (default: our oracle's)."""
    split, index = episode_id.split("/")
    spec = _episodes()[split][int(index)]
    plan = oracle_plan(episode_id) if plan is None else plan
    theirs, ours = run_original(eb_env, spec, plan), run_ours(spec, plan)
    return theirs, ours, differences(theirs, ours)


#: The subset the default run (and CI) compares: the first episode of each subset, and one
#: whose Fridge is found from a position the facing rule skips first (thor_connector.py:214-218).
CI_EPISODES = (*(f"{split}/00" for split in OFFICIAL_SPLITS), "long_horizon/41")


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("episode_id", CI_EPISODES)
def test_thor_backend_issues_embodiedbenchs_calls(original: types.ModuleType, episode_id: str) -> None:
    theirs, ours, diff = compare(original, episode_id)
    assert not diff, "\n".join(diff)
    assert len(theirs.calls) > 8 and theirs.steps  # the plan ran, beyond the restore


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("episode_id", CI_EPISODES)
def test_thor_backend_matches_embodiedbench_on_the_probe_plan(original: types.ModuleType, episode_id: str) -> None:
    theirs, ours, diff = compare(original, episode_id, PROBE_PLAN)
    assert not diff, "\n".join(diff)
    assert any(not ok for ok, *_ in theirs.steps)  # the probe reaches failure paths


def _census(runs: list[Run]) -> str:
    calls = [a for run in runs for kind, a in run.calls if kind == "step"]

    def count(*names: str) -> int:
        return sum(1 for a in calls if a["action"] in names)

    looks = sum(1 for a in calls if a.get("tempRenderChange"))
    feedback = [fb for run in runs for ok, fb, *_ in run.steps if not ok]
    return (f"{len(calls)} steps: {count('TeleportFull') - looks} teleports, {looks} looks, "
            f"{count('MoveAhead', 'MoveBack', 'MoveLeft', 'MoveRight')} moves, {count('PutObject')} puts, "
            f"{count('OpenObject')} opens, {count('CleanObject')} cleans, {count('SliceObject')} slices; "
            f"{len(feedback)} failed skills, {sum('is not visible' in fb for fb in feedback)} not-visible messages, "
            f"{sum('dropped the object instead' in fb for fb in feedback)} drops after a third put")


@pytest.mark.slow
@pytest.mark.parametrize("plan_name", ["oracle", "probe"])
def test_thor_backend_on_all_300_official_episodes(original: types.ModuleType, plan_name: str) -> None:
    """The numbers docs/eb_alfred.md reports: episodes identical call for call."""
    runs: list[Run] = []
    differing: list[str] = []
    for specs in _episodes().values():
        for spec in specs:
            theirs, ours, diff = compare(original, spec.episode_id, PROBE_PLAN if plan_name == "probe" else None)
            runs.append(theirs)
            if diff:
                differing.append(f"{spec.episode_id}: " + "; ".join(diff))
    successes = sum(1 for run in runs if run.steps and run.steps[-1][3])
    summary = (f"{plan_name} plans: {len(runs) - len(differing)} of {len(runs)} episodes identical call for call; "
               f"{successes} successes; " + _census(runs))
    print(summary, *differing, sep="\n")
    assert not differing, summary + "\n" + "\n".join(differing)
