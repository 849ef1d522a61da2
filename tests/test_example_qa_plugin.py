"""The example plugin's one-step suite ``example_qa`` (examples/plugin_suite): one multiple-choice
question per episode, an ``accuracy`` metric and a judged 0-10 ``judge_score`` declared by the
suite. It runs through ``harness run``, ``harness judge`` (a loopback judge server),
``harness table`` (--by task_type, --metrics), the report and ``harness export``, and passes
check_suite.

The package is registered here through its entry points as an installed copy would be: a
distribution record (dist-info) written from examples/plugin_suite/pyproject.toml, put first on
the path of each subprocess, so the test sees this checkout's example, not another install's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.store import ResultStore
from tests.harness import judge_fixtures as fx

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "plugin_suite"


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = tmp_path_factory.mktemp("site")
    info = site / "embodied_transfer_example_suite-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT), str(EXAMPLE)])}


def harness(env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_check_suite_passes(env):
    code = ("from harness.check.conformance import check_suite, SUITE_CHECKS; r = check_suite('example_qa');"
            "assert r.passed == list(SUITE_CHECKS), r; print('ok')")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


def test_run_table_report_export(env, tmp_path):
    out = tmp_path / "out"
    run = harness(env, "run", "suite=example_qa", "planner=oracle", f"out={out}", "progress=false")
    assert run.returncode == 0, run.stderr[-3000:]
    with ResultStore(out) as store:
        records = store.records()
    assert len(records) == 12 and all(r.steps == 1 and r.agent_calls == 1 for r in records)
    assert all(r.values == {"correct": 1} and r.extra["answer"] in "ABCD" for r in records)

    table = harness(env, "table", str(out))
    assert table.returncode == 0, table.stderr
    assert "Acc" in table.stdout and "100.0" in table.stdout and "SR" not in table.stdout
    by_type = harness(env, "table", str(out), "--by", "task_type")
    assert by_type.returncode == 0, by_type.stderr
    assert "sum" in by_type.stdout and "larger" in by_type.stdout and "Acc" in by_type.stdout
    judged = harness(env, "table", str(out), "--metrics", "accuracy,judge_score")
    assert judged.returncode == 0, judged.stderr
    # Declared, so accepted; no judge has scored the run yet: the column stays, with no value
    # ("–", as in every other view of the store), and a note says why.
    assert "Acc" in judged.stdout and "example_qa/test Judge |" in judged.stdout
    assert "judged metrics (Judge) have no values: no judge has scored these answers" in judged.stdout
    bad = harness(env, "table", str(out), "--metrics", "sr")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "accuracy" in bad.stderr and "judge_score" in bad.stderr

    pytest.importorskip("openai", reason="harness judge's openai judge needs the `models` extra")
    # A judge through a loopback OpenAI-compatible server (tests/harness/judge_fixtures.py: model
    # judge-a scores an answer len(answer) % 11, so each one-letter answer gets 1).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = fx.serve(port, tmp_path / "judge.log", 0.0)
    try:
        judge = harness(env, "judge", str(out), "judge=openai", "judge.model=judge-a",
                        f"judge.params.base_url=http://127.0.0.1:{port}/v1")
    finally:
        server.shutdown()
        server.server_close()
    assert judge.returncode == 0, judge.stderr[-3000:]
    assert "12 judged now" in judge.stderr and "ok 12, unreadable 0, error 0" in judge.stderr
    assert len((tmp_path / "judge.log").read_text().splitlines()) == 12
    judged = harness(env, "table", str(out), "--by", "task_type", "--metrics", "accuracy,judge_score")
    assert judged.returncode == 0, judged.stderr
    assert "Judge" in judged.stdout and "1.00" in judged.stdout
    assert "judge judge-a: 12 readable verdicts, 0 unreadable, 0 failed calls" in judged.stdout

    report = harness(env, "report", str(out), "--dest", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-3000:]
    export = harness(env, "export", str(out))
    assert export.returncode == 0, export.stderr
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(rows) == 12 and all(row["values"] == {"correct": 1, "judge_score": 1.0} for row in rows)
