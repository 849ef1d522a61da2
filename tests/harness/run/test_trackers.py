"""Experiment trackers, for real and offline: `harness run ... tracker=wandb` (W&B offline mode)
and `tracker=mlflow` (a local MLflow file store), read back from what each package wrote -- W&B's
run files record by record, MLflow through its own client -- and compared with the store and
with `harness table`. Each test skips, saying why, when its package (the `trackers` extra) is
not installed."""

from __future__ import annotations

import glob
import json
import sqlite3
import struct
import sys
from pathlib import Path

import pytest

from harness.cli.entry import main


@pytest.fixture(autouse=True)
def _example_plugin():
    from tests.helpers import require_example_plugin

    require_example_plugin()


RUN = ["suite=example", "limit=4", "progress=false"]


def _need(module: str) -> None:
    """Skip, saying why, without the package; fail instead where CI requires it (REQUIRE_TRACKERS=1)."""
    import importlib.util
    import os

    if importlib.util.find_spec(module) is None:
        reason = f"{module} is not installed (pip install -e '.[trackers]')"
        if os.environ.get("REQUIRE_TRACKERS") == "1":
            pytest.fail(f"{reason}; REQUIRE_TRACKERS=1: the tracker tests must not be skipped", pytrace=False)
        pytest.skip(reason)


def _store_runs(out: Path) -> dict[str, tuple[str, float]]:
    """run id -> (variant, SR over its stored episodes), from the SQLite store itself."""
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT r.run_id, r.variant, AVG(e.success) FROM runs r JOIN episodes e "
                          "ON e.run_id = r.run_id GROUP BY r.run_id").fetchall()
    return {r: (v, float(sr)) for r, v, sr in rows}


def _table(capsys, out: Path, fmt: str) -> str:
    capsys.readouterr()
    assert main(["table", str(out), "--format", fmt]) == 0
    return capsys.readouterr().out


# --- W&B -------------------------------------------------------------------------------


def _wandb_records(path: str):
    """The protobuf records of a W&B run file (``run-ID.wandb``): a 7-byte header (':W&B', magic,
    version), then LevelDB-log framing -- 32 KiB blocks of chunks, each a 7-byte header (crc32,
    length, type: 1 full, 2 first, 3 middle, 4 last) and its bytes."""
    from wandb.proto import wandb_internal_pb2 as pb

    raw = Path(path).read_bytes()
    assert raw[:4] == b":W&B"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        if kind == 0:  # block padding
            pos += left
            continue
        data, pos = raw[pos + 7:pos + 7 + length], pos + 7 + length
        pending = data if kind in (1, 2) else pending + data
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            yield record


def _key(item) -> str:
    """A history / summary item's key (``key``, or the path ``nested_key``)."""
    return item.key or "/".join(item.nested_key)


def _wandb_runs(folder: Path) -> list[dict]:
    runs = []
    for path in sorted(glob.glob(str(folder / "wandb" / "offline-run-*" / "run-*.wandb"))):
        run: dict = {"history": [], "summary": {}, "config": {}, "artifacts": [], "name": None}
        for r in _wandb_records(path):
            kind = r.WhichOneof("record_type")
            if kind == "run":
                run["name"] = r.run.display_name
                run["job_type"] = r.run.job_type
                run["config"] = {i.key: json.loads(i.value_json) for i in r.run.config.update}
            elif kind == "history":
                run["history"].append({_key(i): json.loads(i.value_json) for i in r.history.item})
            elif kind == "summary":
                run["summary"].update({_key(i): json.loads(i.value_json) for i in r.summary.update})
            elif kind == "artifact":
                run["artifacts"].append([m.path for m in r.artifact.manifest.contents])
        runs.append(run)
    return runs


def test_wandb_offline_run_metrics_table_and_report(tmp_path, capsys):
    _need("wandb")
    out = tmp_path / "o"
    assert main(["run", "-m", *RUN, "planner=random,oracle", "tracker=wandb", f"out={out}"]) == 0
    stored = _store_runs(out)
    runs = _wandb_runs(out)
    assert len(runs) == 3  # one per harness run, one for the table and report
    per_run = [r for r in runs if r["job_type"] == "run"]
    assert {r["config"]["run_id"] for r in per_run} == set(stored)
    for run in per_run:
        variant, sr = stored[run["config"]["run_id"]]
        assert run["config"]["variant"] == variant and run["name"].startswith(f"{variant} example/test")
        steps = [h["_step"] for h in run["history"]]
        assert steps == [1, 2, 3, 4]  # one entry per episode as it finished
        assert run["history"][-1]["sr"] == pytest.approx(sr) and run["history"][-1]["episodes"] == 4
        assert sum(h["success"] for h in run["history"]) == round(4 * sr)
        assert run["summary"]["final_sr"] == pytest.approx(sr) and run["summary"]["final_episodes"] == 4
    table = next(r for r in runs if r["job_type"] == "table")
    (files,) = table["artifacts"]
    assert {"table.md", "table.json", "report/index.html"} <= set(files)
    assert (out / "tracker" / "table.md").read_text() == _table(capsys, out, "markdown")
    assert json.loads((out / "tracker" / "table.json").read_text()) == json.loads(_table(capsys, out, "json"))


# --- MLflow ------------------------------------------------------------------------------


def test_mlflow_file_store_run_metrics_table_and_report(tmp_path, capsys, monkeypatch):
    _need("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    out = tmp_path / "o"
    assert main(["run", "-m", *RUN, "planner=random,oracle", "tracker=mlflow", "tracker.experiment=t", f"out={out}"]) == 0
    stored = _store_runs(out)
    client = MlflowClient(tracking_uri=(out / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("t")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 3
    per_run = [r for r in runs if r.data.tags.get("kind") == "run"]
    assert {r.data.tags["harness.run_id"] for r in per_run} == set(stored)
    for run in per_run:
        variant, sr = stored[run.data.tags["harness.run_id"]]
        assert run.data.params["variant"] == variant and run.info.status == "FINISHED"
        history = client.get_metric_history(run.info.run_id, "sr")
        assert sorted(m.step for m in history) == [1, 2, 3, 4]
        assert max(history, key=lambda m: m.step).value == pytest.approx(sr)
        assert run.data.metrics["final_sr"] == pytest.approx(sr) and run.data.metrics["final_episodes"] == 4
        assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["run.json"]
    (table,) = [r for r in runs if r.data.tags.get("kind") == "table"]
    paths = {a.path for a in client.list_artifacts(table.info.run_id)}
    assert {"table.md", "table.json", "report"} <= paths
    assert "report/index.html" in {a.path for a in client.list_artifacts(table.info.run_id, "report")}
    local = Path(client.download_artifacts(table.info.run_id, "table.md", str(tmp_path / "dl")))
    assert local.read_text() == _table(capsys, out, "markdown")


# --- failures ------------------------------------------------------------------------------


def test_missing_package_is_one_line_and_nothing_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if the extra were not installed
    out = tmp_path / "o"
    assert main(["run", *RUN, "planner=oracle", "tracker=wandb", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("harness: error: tracker 'wandb' needs the package 'wandb', which is not installed "
                   "(pip install -e '.[trackers]')")
    assert not out.exists()


def test_bad_tracker_setting_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", *RUN, "planner=oracle", "tracker=wandb", "tracker.mode=sometimes", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "mode" in err and not out.exists()
    assert main(["run", *RUN, "planner=oracle", "tracker=nope", f"out={out}"]) == 2


def test_a_failing_tracker_never_stops_the_run(tmp_path, capsys):
    _need("mlflow")
    out = tmp_path / "o"
    bad = tmp_path / "file-not-folder"
    bad.write_text("x")
    assert main(["run", *RUN, "planner=oracle", "tracker=mlflow", f"tracker.tracking_uri={bad.as_uri()}",
                 f"out={out}"]) == 0
    err = capsys.readouterr().err
    assert "harness: warning: tracker mlflow: start failed" in err
    assert list(_store_runs(out).values()) == [("oracle", 1.0)]


# --- a tracker that is not there, or does not answer, never slows the run ----------------------


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("harness: warning: tracker")]


def test_an_unreachable_tracker_costs_one_warning_and_no_time(tmp_path, capsys):
    _need("mlflow")
    out = tmp_path / "o"
    t0 = __import__("time").monotonic()
    assert main(["run", "-m", *RUN, "planner=oracle,random", "tracker=mlflow",
                 "tracker.tracking_uri=http://127.0.0.1:9", f"out={out}"]) == 0
    elapsed = __import__("time").monotonic() - t0
    err = capsys.readouterr().err
    lines = _warnings(err)
    assert len(lines) == 1 and "tracker mlflow" in lines[0] and "http://127.0.0.1:9" in lines[0], err
    # MLflow's own retries against a server that is not there take minutes (7, with exponential
    # backoff); the bound is far from both that and the run's few seconds, so load cannot decide it.
    assert "Traceback" not in err and elapsed < 60, elapsed
    assert sorted(v for v, _ in _store_runs(out).values()) == ["oracle", "random"]
    assert "tracker mlflow: off" in err  # the end lines say it wrote nothing


def test_a_tracker_that_never_answers_is_left_behind(tmp_path, capsys, monkeypatch):
    import socket
    import time

    _need("mlflow")
    from harness.run import trackers

    monkeypatch.setattr(trackers, "TRACKER_CALL_TIMEOUT_S", 1.0)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "300")  # the server holds each request this long
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete in the kernel; nothing ever answers
    try:
        out = tmp_path / "o"
        t0 = time.monotonic()
        assert main(["run", *RUN, "planner=oracle", "tracker=mlflow",
                     f"tracker.tracking_uri=http://127.0.0.1:{silent.getsockname()[1]}", f"out={out}"]) == 0
        elapsed = time.monotonic() - t0
    finally:
        silent.close()
    err = capsys.readouterr().err
    lines = _warnings(err)
    assert len(lines) == 1 and "did not answer within 1 s" in lines[0], err
    assert elapsed < 120, elapsed  # not the 300 s of a held request, whatever the load
    assert list(_store_runs(out).values()) == [("oracle", 1.0)]


def test_the_end_line_says_where_the_tracker_wrote(tmp_path, capsys):
    _need("mlflow")
    out = tmp_path / "o"
    assert main(["run", *RUN, "planner=oracle", "tracker=mlflow", f"out={out}"]) == 0
    err = capsys.readouterr().err
    end = [line for line in err.splitlines() if "episodes run" in line]
    assert len(end) == 1 and "tracker mlflow -> file:" in end[0] and "mlruns" in end[0], err


def test_an_unreachable_tracker_is_known_before_mlflow_loads(tmp_path):
    """Nothing listening at the tracking URI: the tracker is off without importing MLflow's
    client (about 2 s of CPU on the tracker's thread beside the run: the cost that made a short
    run with an unreachable tracker take 3x as long, benchmarks/tracker_overhead.py)."""
    import subprocess
    import sys

    _need("mlflow")
    out = tmp_path / "o"
    code = ("import sys; from harness.cli.entry import main; "
            f"rc = main(['run', *{RUN!r}, 'planner=oracle', 'tracker=mlflow', "
            f"'tracker.tracking_uri=http://127.0.0.1:9', 'out={out}']); "
            "print('RC', rc, 'MLFLOW', 'mlflow.tracking' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RC 0 MLFLOW False" in done.stdout, done.stdout + done.stderr
    lines = _warnings(done.stderr)
    assert len(lines) == 1 and "cannot connect to 127.0.0.1:9" in lines[0], done.stderr
