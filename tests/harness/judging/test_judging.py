"""`harness judge`: a tiny one-step QA suite, run, then judged through a loopback
OpenAI-compatible judge server (tests/harness/judge_fixtures.py)."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.judging.agreement import agreement, krippendorff_alpha_interval, spearman_rho
from harness.judging.judges import judge_id_of
from harness.store import ResultStore
from tests.harness import judge_fixtures as fx
from tests.helpers import committed_rows

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

REPO = Path(__file__).resolve().parents[3]
KEY = ["run_id", "suite", "split", "episode_id", "seed"]


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    log = tmp_path / "judge-requests.log"
    srv = fx.serve(port, log, 0.0)
    yield f"http://127.0.0.1:{port}/v1", log
    srv.shutdown()
    srv.server_close()


def harness(*args: str) -> int:
    fx.register()
    from harness.cli.entry import main

    return main(list(args))


def judge_args(url: str, model: str, *more: str) -> list[str]:
    return ["judge=openai", f"judge.model={model}", f"judge.params.base_url={url}", *more]


def rows(out: Path) -> list[tuple]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return db.execute("SELECT * FROM judgements ORDER BY judge_id, episode_id").fetchall()
    finally:
        db.close()


# --- agreement: pure functions on hand-made cases --------------------------------------
def test_krippendorff_alpha_interval_hand_computed():
    # Two judges, three answers: (1, 1), (2, 2), (3, 4). Pairable values n = 6.
    # D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j} (v_i - v_j)^2 = (0 + 0 + 2 * 1) / 6 = 1/3.
    # D_e = sum over ordered pairs of all six values / (n (n - 1)); the unordered sum is
    # n * sum v^2 - (sum v)^2 = 6 * 35 - 13^2 = 41, so D_e = 82 / 30. alpha = 1 - (1/3) / (82/30) = 36/41.
    assert krippendorff_alpha_interval([(1, 1), (2, 2), (3, 4)]) == pytest.approx(36 / 41)
    # Perfect agreement: 1; a unit with one value is not pairable and changes nothing.
    assert krippendorff_alpha_interval([(1, 1), (5, 5), (2, None)]) == pytest.approx(1.0)
    # Three judges with a missing value: unit (1, 2, None) has m=2, unit (3, 3, 4) m=3.
    # n = 5; D_o = (2*1/1 + (0 + 1 + 1) * 2 / 2) / 5 = (2 + 2) / 5 = 0.8.
    # values 1, 2, 3, 3, 4: unordered sum = 5 * 39 - 13^2 = 26; D_e = 52 / 20 = 2.6; alpha = 1 - 0.8/2.6.
    assert krippendorff_alpha_interval([(1, 2, None), (3, 3, 4)]) == pytest.approx(1 - 0.8 / 2.6)
    assert krippendorff_alpha_interval([(3, 3), (3, 3)]) is None  # no spread: undefined
    assert krippendorff_alpha_interval([(1, None)]) is None


def test_spearman_matches_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    cases = [([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), ([3, 1, 4, 1, 5, 9], [2, 7, 1, 8, 2, 8]),
             ([0, 0, 1, 1], [1, 0, 1, 0]), ([10, 2.5, 7], [1, 3, 2])]
    for a, b in cases:
        assert spearman_rho(a, b) == pytest.approx(scipy_stats.spearmanr(a, b).statistic)
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None
    assert spearman_rho([1], [2]) is None


def test_agreement_over_a_judgements_frame():
    import pandas as pd

    def row(judge, i, value, status="ok"):
        return {"run_id": "r", "suite": "s", "split": "t", "episode_id": f"e{i}", "seed": i,
                "judge_id": judge, "status": status, "values": {"score": value} if status == "ok" else {}}

    frame = pd.DataFrame([row("A", 0, 1), row("A", 1, 2), row("A", 2, 3), row("A", 3, 0, "unreadable"),
                          row("B", 0, 1), row("B", 1, 2), row("B", 2, 4), row("B", 3, 7)])
    got = agreement(frame)["score"]
    assert got["judges"] == ["A", "B"] and got["answers"] == 3  # the unreadable verdict is missing, not 0
    assert got["alpha"] == pytest.approx(36 / 41)
    assert got["pairs"] == [{"a": "A", "b": "B", "n": 3, "rho": pytest.approx(1.0)}]
    assert agreement(frame[frame.judge_id == "A"]) == {}  # one judge: nothing to compare


# --- the stage ------------------------------------------------------------------------
def test_run_with_judge_then_a_second_judge(tmp_path, server, capsys):
    url, log = server
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false", *judge_args(url, "judge-a")) == 0
    err = capsys.readouterr().err
    assert "6 judged now" in err and "ok 5, unreadable 1, error 0" in err
    with ResultStore(out, readonly=True) as s:
        episodes_before = s.frame().to_dict("records")
        transcripts_before = s.transcripts()
        first = s.judgements()
        judges = s.judges()
    assert len(judges) == 1 and judges[0][0] == judge_id_of(judges[0][1])
    assert sorted(first.status) == ["ok"] * 5 + ["unreadable"]
    garbled = first[first.episode_id == "test/004"].iloc[0]
    assert garbled.status == "unreadable" and garbled["values"] == {} and garbled.raw_reply == "I cannot decide."
    for r in first[first.status == "ok"].itertuples():  # the scripted scores, read from the replies
        assert r.values == {"judge_score": float(len(fx.answer_of(int(r.seed))) % 11)}
        assert r.meta["prompt_tokens"] > 0 and r.meta["latency_s"] >= 0
    first_rows = rows(out)

    # A second judge later: no generation (episodes and transcripts unchanged), first judge's rows untouched.
    assert harness("judge", str(out), *judge_args(url, "judge-b", "judge.record_prompts=true")) == 0
    assert "6 judged now" in capsys.readouterr().err
    with ResultStore(out, readonly=True) as s:
        assert s.frame().to_dict("records") == episodes_before
        assert s.transcripts() == transcripts_before
        both = s.judgements()
        assert len(s.judges()) == 2
    assert [r for r in rows(out) if r[5] == judges[0][0]] == first_rows  # byte for byte
    second = both[both.judge_id != judges[0][0]]
    assert len(second) == 6 and all("ANSWER:" in p for p in second.prompt)
    agree = agreement(both)["judge_score"]
    assert agree["answers"] == 5 and agree["pairs"][0]["n"] == 5
    requests = log.read_text().splitlines()
    assert len(requests) == 12  # each answer judged once per judge

    # The same judge again: nothing judged twice.
    assert harness("judge", str(out), *judge_args(url, "judge-a")) == 0
    assert "0 answer(s) to judge, 6 already judged" in capsys.readouterr().err
    assert len(log.read_text().splitlines()) == 12

    # A judge's name is part of its identity: the same config renamed judges again under the new
    # name (never "already judged" with the old name's verdicts), and the table finds it by name.
    assert harness("judge", str(out), *judge_args(url, "judge-a", "judge.name=renamed")) == 0
    assert "6 answer(s) to judge, 0 already judged" in capsys.readouterr().err
    with ResultStore(out, readonly=True) as s:
        names = set(s.judgements()["judge"])
    assert {"judge-a", "renamed"} <= names
    assert harness("table", str(out), "--judge", "renamed") == 0
    capsys.readouterr()

    # A user's copy of a prompt (rubric param): another rubric identity, so another judge id.
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Judge it. Reply 'SCORE: N'.\nQ: {question}\nANSWER: {answer}", encoding="utf-8")
    assert harness("judge", str(out), *judge_args(url, "judge-a", f"judge.rubric.prompt_file={prompt}")) == 0
    with ResultStore(out, readonly=True) as s:
        assert len(s.judges()) == 4


def test_run_with_judge_judges_only_this_invocations_output(tmp_path, server, capsys):
    """An earlier `harness run` in the same process (another test under pytest-xdist, a
    notebook) wrote elsewhere: `run ... judge=` judges its own output folder only."""
    url, log = server
    earlier = tmp_path / "earlier"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={earlier}",
                   "progress=false") == 0
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false", *judge_args(url, "judge-a")) == 0
    assert "6 judged now" in capsys.readouterr().err
    assert len(log.read_text().splitlines()) == 6
    with ResultStore(earlier, readonly=True) as s:
        assert len(s.judgements()) == 0


def test_bad_input_one_line_exit_2_nothing_written(tmp_path, server, capsys):
    url, _ = server
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false") == 0
    capsys.readouterr()
    store = out / "results.sqlite"
    before = store.read_bytes()
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    empty = tmp_path / "empty"
    ResultStore(empty).close()
    cases = [
        ([str(out), "judge=no_such_judge"], "unknown judge 'no_such_judge'"),
        ([str(tmp_path / "nowhere"), *judge_args(url, "judge-a")], "no result store"),
        ([str(empty), *judge_args(url, "judge-a")], "no runs"),
        ([str(out), *judge_args(dead, "judge-a")], "unreachable"),
        ([str(out), "judge=openai", f"judge.params.base_url={url}"], "judge.model is required"),
        ([str(out), *judge_args(url, "judge-a", "judge.rubric.nope=1")], "unknown rubric parameter"),
        ([str(out), *judge_args(url, "judge-a", "judge.bogus=1")], "unknown key judge.bogus"),
    ]
    for args, message in cases:
        assert harness("judge", *args) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, (args, err)
        assert store.read_bytes() == before, args
    assert not (tmp_path / "nowhere").exists()
    # harness run ... judge=unknown: refused before anything runs.
    other = tmp_path / "other"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", f"out={other}", "judge=nope") == 2
    assert not other.exists()


def test_sigkill_mid_judge_then_rerun_judges_each_answer_once(tmp_path):
    port = _free_port()
    log = tmp_path / "judge-requests.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    srv = subprocess.Popen([sys.executable, "-m", "tests.harness.judge_fixtures", "serve", str(port), str(log), "0.3"],
                           cwd=REPO, env=env)
    out = tmp_path / "out"
    try:
        assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                       "progress=false", "suite.params.questions=16") == 0
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while True:  # the server is up
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        cmd = [sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "judge", str(out),
               *judge_args(url, "judge-a", "judge.params.max_concurrency=2")]
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (out / "results.sqlite").exists() or _count(out) < 4:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        kept_rows = rows(out)
        kept = {r[3] for r in kept_rows}
        assert 4 <= len(kept) < 16  # killed mid-way
        requests_before = len(log.read_text().splitlines())
        assert subprocess.run(cmd, cwd=REPO, env=env, capture_output=True).returncode == 0
    finally:
        srv.send_signal(signal.SIGKILL)
        srv.wait()
    final = rows(out)
    assert len(final) == 16 and len({r[3] for r in final}) == 16  # every answer judged, exactly once
    assert [r for r in final if r[3] in kept] == kept_rows  # the verdicts before the kill, untouched
    after = log.read_text().splitlines()[requests_before:]
    rejudged = {fx_answer for _, fx_answer in (line.split("\t", 1) for line in after)}
    assert not rejudged & {fx.answer_of(int(e.rpartition("/")[2])) for e in kept}  # nothing judged twice
    assert len(after) == 16 - len(kept)


def _count(out: Path) -> int:
    return committed_rows(out / "results.sqlite", "judgements")


def test_judgements_are_checksummed_and_repaired(tmp_path, server, capsys):
    from harness.store import DAMAGED, SOUND, inspect_store, repair_store

    url, _ = server
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false", *judge_args(url, "judge-a")) == 0
    assert inspect_store(out).kind == SOUND
    db = sqlite3.connect(out / "results.sqlite")
    with db:
        db.execute("UPDATE judgements SET vals = '{\"judge_score\": 10.0}' WHERE episode_id = 'test/001'")
    db.close()
    verdict = inspect_store(out)
    assert verdict.kind == DAMAGED and any("judgements" in p for p in verdict.problems)
    report = repair_store(out, tmp_path / "repaired")
    assert report.tables["judgements"][0] == 5  # the tampered verdict is dropped, the rest kept
    with ResultStore(tmp_path / "repaired", readonly=True) as s:
        assert len(s.judgements()) == 5


def test_hf_judge_in_process_batches_and_counts_unreadable_replies(tmp_path, capsys):
    """A tiny random-weight Qwen2.5-VL as the judge (the ``hf`` backend, in process): its
    replies are noise, so every verdict is ``unreadable`` (kept, never a 0), its raw reply
    stored; the answers go through batched generate calls of ``batch_size``."""
    pytest.importorskip("torch", reason="the hf backend needs the `models` extra")
    from tests.planners.tiny_vlm import build_base

    ckpt = build_base(tmp_path / "tiny")
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false") == 0
    assert harness("judge", str(out), "judge=hf", f"judge.model={ckpt}", "judge.max_new_tokens=4",
                   "judge.params.batch_size=4", "judge.params.num_threads=1") == 0
    assert "ok 0, unreadable 6, error 0" in capsys.readouterr().err
    with ResultStore(out, readonly=True) as s:
        got = s.judgements()
    assert list(got.status) == ["unreadable"] * 6 and all(v == {} for v in got["values"])
    assert all(isinstance(r, str) for r in got.raw_reply)
    assert sorted(m.get("batch", 1) for m in got.meta) == [2, 2, 4, 4, 4, 4]
    assert got.identity[0]["backend_identity"]["backend"] == "hf"
