"""``harness run suite=eb_manipulation planner=vlm`` with a model that only answers garbage (a
tiny random-weight checkpoint): by default every unusable output becomes EmbodiedBench's random
action, executed and added to the history (``planner/manip_planner.py:328-343``;
``evaluator/eb_manipulation_evaluator.py:141-146``), so an episode runs its 15 steps on 15 calls,
each prompt longer than the last; ``on_bad_output=invalid`` keeps the earlier rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.store import ResultStore
from tests.conftest import REPO_ROOT

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.planners.tiny_vlm import build_base

    return build_base(tmp_path_factory.mktemp("tiny_vlm") / "base")


def _run(model: Path, out: Path, *extra: str) -> None:
    cmd = [sys.executable, "-m", "harness.cli", "run", "suite=eb_manipulation", "planner=vlm", "split=base",
           "limit=1", f"planner.params.model={model}", "planner.params.max_new_tokens=6",
           "planner.params.manipulation_shots=0", "planner.params.image_size=64", "suite.params.image_size=64",
           "record_prompts=true", f"out={out}", "progress=false", *extra]
    run = subprocess.run(cmd, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.ci
def test_garbage_model_executes_15_random_actions_by_default(tiny_base: Path, tmp_path: Path) -> None:
    _run(tiny_base, tmp_path / "out")
    with ResultStore(tmp_path / "out") as store:
        (rec,), transcripts = store.records(), store.transcripts()
    assert rec.error_kind is None and not rec.success
    assert rec.steps == 15 and rec.agent_calls == 15 and rec.planner_output_errors == 15
    assert rec.termination == "max_steps"
    assert len(transcripts) == 15 and all(t["output_error"] for t in transcripts)
    prompts = [json.loads(t["prompt"])[0]["content"][0]["text"] for t in transcripts]
    assert len(set(prompts)) == 15  # each random action entered the history: the next prompt differs
    # the 14 earlier [action, feedback] pairs after the cue (manip_planner.py:62-63)
    history = prompts[-1].split("Output gripper actions: ", 1)[1]
    assert history.startswith("[[") and history.endswith("], ") and "Steps executed so far: 14." in history
    assert "Steps executed so far: 15." not in history


@pytest.mark.slow
def test_the_invalid_option_keeps_the_earlier_rule(tiny_base: Path, tmp_path: Path) -> None:
    _run(tiny_base, tmp_path / "out", "planner.params.on_bad_output=invalid")
    with ResultStore(tmp_path / "out") as store:
        (rec,), transcripts = store.records(), store.transcripts()
    assert rec.steps == 0 and rec.agent_calls == 15 and rec.invalid_actions == 15
    assert len({t["prompt"] for t in transcripts}) == 1  # the same prompt 15 times


def test_settings_the_suite_ignores_stay_out_of_its_run_identity(tiny_base: Path) -> None:
    """``parser`` (and the other EB-ALFRED / ALFRED prompt settings) do not
    change an EB-Manipulation run's identity; what the suite uses does."""
    from envs.eb_manipulation.suite import EBManipulationSuite
    from harness.run.identity import run_id_of, run_identity
    from harness.types import RunSpec
    from planners.vlm.planner import VLMPlanner

    suite = EBManipulationSuite(render=False)
    spec = RunSpec(suite="eb_manipulation", split="base", agent="vlm", variant="base")

    def rid(**kw):
        return run_id_of(run_identity(spec, suite, VLMPlanner(suite="eb_manipulation", model=str(tiny_base), **kw)))

    base = rid()
    assert rid(parser="lenient") == base and rid(num_examples=3) == base and rid(alfred_k=2) == base
    assert rid(on_bad_output="invalid") != base and rid(manipulation_shots=1) != base and rid(image_size=64) != base
