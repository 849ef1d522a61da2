"""The bad-input contract (docs/reliability.md), invocation by invocation: every bad
value on the command line gives exactly one line on stderr (``harness: error: ...``),
exit status 2, no traceback, nothing written (no output folder).

Real subprocesses of the CLI, as a user types them. Each refusal must come before any
environment is built, so every case takes about a second of CPU.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import require_extras

REPO = Path(__file__).resolve().parents[2]

LIBERO = ["suite=libero", "split=libero_spatial"]
EB_MANIPULATION = ["suite=eb_manipulation", "split=base"]
EB_ALFRED = ["suite=eb_alfred", "suite.params.render=false", "suite.params.generated_per_split=40"]
OPENAI = ["planner=vlm", "planner.params.backend=openai", "planner.params.base_url=http://127.0.0.1:9/v1",
          "planner.params.model=x"]


#: (id, command, arguments). ``run`` cases get ``out=<tmp>/out``; the folder must not appear.
CASES = [
    # --- the run's own settings and malformed overrides ---
    pytest.param("run", [*EB_ALFRED, "planner=oracle", "record_images=2"], id="record_images=2"),
    pytest.param("run", ["=3"], id="run =3"),
    pytest.param("run", ["~suite"], id="run ~suite"),
    # --- nested configs given a value of the wrong shape ---
    pytest.param("run", ["suite.params=5"], id="suite.params=5"),
    pytest.param("run", ["planner=[1]"], id="planner=[1]"),
    pytest.param("run", ["planner.params=[1]"], id="planner.params=[1]"),
    pytest.param("run", ["variant.params=x"], id="variant.params=x"),
    pytest.param("run", ["executor=3"], id="executor=3"),
    # --- counts of 0: a split with no episode is refused, never run as an empty success ---
    pytest.param("run", [*EB_ALFRED, "planner=oracle", "suite.params.generated_per_split=0"],
                 id="eb_alfred generated_per_split=0"),
    pytest.param("run", ["suite=alfred", "split=seen", "planner=oracle", "suite.params.generated_per_split=0"],
                 id="alfred generated_per_split=0"),
    # --- suites ---
    pytest.param("run", ["suite=eb_alfred", "suite.params.render=maybe", "planner=oracle"], id="eb_alfred render=maybe"),
    pytest.param("run", [*LIBERO, "policy=zero", "suite.params.tasks=[-1]"], id="libero tasks=[-1]"),
    pytest.param("run", [*LIBERO, "policy=zero", "suite.params.trials=51"], id="libero trials=51"),
    pytest.param("run", [*EB_MANIPULATION, "planner=oracle", "suite.params.generator_seed=-1"],
                 id="eb_manipulation generator_seed=-1"),
    # --- the vlm planner ---
    pytest.param("run", [*EB_ALFRED, *OPENAI, "planner.params.feedback=maybe"], id="vlm feedback=maybe"),
    *[pytest.param("run", [*EB_ALFRED, *OPENAI, f"planner.params.request_timeout_s={v}"],
                   id=f"vlm request_timeout_s={v}") for v in ("-1", "nan", "0")],
    pytest.param("run", [*EB_ALFRED, *OPENAI, "planner.params.base_url=notaurl"], id="vlm base_url=notaurl"),
    pytest.param("run", [*EB_ALFRED, *OPENAI, "planner.params.on_bad_output=nope"],
                 id="vlm prompt key of another suite"),
    pytest.param("run", [*EB_ALFRED, *OPENAI, "planner.params.dtype=nope"], id="vlm openai dtype=nope"),
    pytest.param("run", [*EB_ALFRED, *OPENAI, "planner.params.num_threads=abc"], id="vlm openai num_threads=abc"),
    # --- policies (refused by their declarations before anything connects or loads) ---
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.protocol=nope"], id="remote protocol=nope"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.url=notaurl"], id="remote url=notaurl"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.url=http://127.0.0.1:9"], id="remote url=http"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.timeout_s=nan"], id="remote timeout_s=nan"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.timeout_s=0"], id="remote timeout_s=0"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.connect_retries=0"], id="remote connect_retries=0"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.send_state=maybe"], id="remote send_state=maybe"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.norm_mode=q99"], id="remote openpi norm_mode=q99"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.protocol=starvla",
                         "policy.params.stats_path=/nonexistent/stats.json"], id="remote starvla stats_path missing"),
    pytest.param("run", [*LIBERO, "policy=remote", "policy.params.protocol=starvla", "policy.params.norm_mode=q98"],
                 id="remote starvla norm_mode=q98"),
    pytest.param("run", [*LIBERO, "policy=zero", "policy.params.chunk=0"], id="zero chunk=0"),
    pytest.param("run", [*LIBERO, "policy=zero", "policy.params.chunk=1.5"], id="zero chunk=1.5"),
    pytest.param("run", [*LIBERO, "policy=replay"], id="replay without path"),
    pytest.param("run", [*LIBERO, "policy=replay", "policy.params.path=/nonexistent/demos"], id="replay path missing"),
    pytest.param("run", [*LIBERO, "policy=replay", "policy.params.path=.", "policy.params.after=maybe"],
                 id="replay after=maybe"),
    pytest.param("run", [*LIBERO, "policy=vla"], id="vla without checkpoint"),
    pytest.param("run", [*LIBERO, "policy=vla", "policy.params.checkpoint=/nonexistent/ckpt"],
                 id="vla checkpoint missing"),
    pytest.param("run", [*LIBERO, "policy=vla", "policy.params.checkpoint=.", "policy.params.dtype=nope"],
                 id="vla dtype=nope"),
    pytest.param("run", [*LIBERO, "policy=vla", "policy.params.checkpoint=.", "policy.params.max_batch=0"],
                 id="vla max_batch=0"),
    pytest.param("run", [*LIBERO, "policy=lerobot", "policy.params.policy=x", "policy.params.device=gpu"],
                 id="lerobot device=gpu"),
    # --- harness serve-policy ---
    pytest.param("serve-policy", ["policy=zero", "port=0", "max_batch=0"], id="serve max_batch=0"),
    pytest.param("serve-policy", ["policy=zero", "port=70000"], id="serve port=70000"),
    pytest.param("serve-policy", ["policy=zero", "max_wait_s=-1"], id="serve max_wait_s=-1"),
    pytest.param("serve-policy", ["policy=zero", "norm_mode=nope"], id="serve norm_mode=nope"),
    pytest.param("serve-policy", ["policy=zero", "stats_path=/nonexistent"], id="serve stats_path missing"),
    pytest.param("serve-policy", ["policy=zero", "max_bach=3"], id="serve max_bach (typo)"),
    pytest.param("serve-policy", ["policy=zero", "policy.params.chunk=0"], id="serve zero chunk=0"),
    pytest.param("serve-policy", ["policy=zero", "policy.params.bogus=1"], id="serve zero bogus key"),
    pytest.param("serve-policy", ["policy=remote", "policy.params.protocol=nope"], id="serve remote protocol=nope"),
    pytest.param("serve-policy", ["policy=zero", "host=999.1.1.1", "port=0"], id="serve host=999.1.1.1"),
    # --- harness table (refused while parsing, before any store is read) ---
    pytest.param("table", ["o", "--metrics", ""], id="table --metrics ''"),
    pytest.param("table", ["o", "--metrics", "sr,,gc"], id="table --metrics sr,,gc"),
    # --- harness judge (tests/harness/judging/test_judging.py: the cases that need a store or a server) ---
    pytest.param("judge", ["out"], id="judge without judge="),
    pytest.param("judge", ["out", "judge=no_such_judge"], id="judge unknown judge"),
    pytest.param("judge", ["out", "judge=openai"], id="judge without judge.model"),
    pytest.param("judge", ["out", "judge=openai", "judge.model=m", "judge.bogus=1"], id="judge bogus key"),
    pytest.param("judge", ["out", "judge=openai", "judge.model=m"], id="judge no store"),
    pytest.param("run", [*EB_ALFRED, "planner=oracle", "judge=no_such_judge"], id="run judge=unknown"),
]


def _cli(command: str, args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    return subprocess.run([sys.executable, "-m", "harness.cli", command, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command, args", CASES)
def test_bad_invocation_is_one_line_exit_2_nothing_written(tmp_path, command, args):
    out = tmp_path / "out"
    # limit=1: a refusal comes before any episode, so it changes nothing; a value wrongly
    # accepted then runs one episode (and creates the output folder) instead of a whole split
    extra = [f"out={out}", "progress=false", "limit=1"] if command == "run" and args[0][0] not in "=~" else []
    res = _cli(command, [*args, *extra], cwd=tmp_path)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr
    assert not out.exists(), f"{out} was created"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "something was written in the working folder"


def test_a_prompt_key_is_kept_when_a_job_of_the_sweep_uses_it(tmp_path):
    """``-m suite=eb_alfred,eb_manipulation`` with an eb_manipulation prompt setting: its
    eb_manipulation job uses it, so it is not refused (the eb_alfred job ignores it)."""
    require_extras("models", "eb_manipulation")
    res = _cli("run", ["-m", "--dry-run", "suite=eb_alfred,eb_manipulation", *OPENAI[:1], *OPENAI[1:],
                       "planner.params.on_bad_output=invalid", f"out={tmp_path / 'out'}"], cwd=tmp_path)
    assert "on_bad_output" not in res.stderr and "no server answers" in res.stderr, res.stderr[-2000:]


@pytest.mark.parametrize("args, key", [
    pytest.param([*LIBERO, "policy=zero", "suite.params.fast_render='false'", "suite.params.max_steps=1"],
                 "fast_render", id="libero fast_render"),
    pytest.param(["suite=eb_alfred", "planner=oracle", "suite.params.render='false'"], "render", id="eb_alfred render"),
])
def test_quoted_false_for_a_bool_is_false(tmp_path, args, key):
    """``suite.params.fast_render='false'`` (a string for a bool) is False in the run, as the
    stored run identity shows (``limit=1``: one short episode)."""
    if args[0] == "suite=libero":
        from tests.envs.libero.conftest import require_libero

        require_libero()
    out = tmp_path / "out"
    res = _cli("run", [*args, "limit=1", f"out={out}", "progress=false"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    with sqlite3.connect(out / "results.sqlite") as db:
        (identity,), = db.execute("SELECT identity FROM runs").fetchall()
    assert json.loads(identity)["suite_params"][key] is False
