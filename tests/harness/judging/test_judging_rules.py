"""The judging stage's verdict rules (harness/judging/stage.py, the store's ``judgements`` table):

- a failed judge call is an ``error`` row, and a rerun judges exactly those answers again,
  replacing the error rows and nothing else;
- a verdict (``ok`` or ``unreadable``) is never overwritten, neither by a rerun nor by a
  second write of the same key;
- a rubric that raises (or returns something that is not a Verdict) makes the reply
  ``unreadable``: the run goes on, the raw reply is kept, and no value is stored.

A real run of the one-step QA suite of tests/harness/judge_fixtures.py, judged through the
real ``openai`` backend against a loopback server that answers like the fixtures' judge server
but fails (HTTP 503, no retries) the answers it is told to.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.cli.entry import main
from harness.judging.verdicts import Verdict
from harness.store import ResultStore
from tests.harness import judge_fixtures as fx
from tests.helpers import chat_completion, send_json

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")


@pytest.fixture(autouse=True)
def _qa_suite_registered():
    with fx.registered_only_here():
        fx.register()
        yield


def harness(*args: str) -> int:
    return main(list(args))


class FlakyJudge:
    """A loopback judge server: fx.judge_reply's replies, HTTP 503 for an answer in ``failing``;
    ``answers`` lists the answers it was asked about, in order."""

    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.answers: list[str] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                answer = str(body["messages"][-1]["content"]).rpartition("ANSWER: ")[2]
                judge.answers.append(answer)
                if answer in judge.failing:
                    self.send_error(503, "judge overloaded")
                    return
                send_json(self, chat_completion(body["model"], fx.judge_reply(body["model"], answer),
                                                usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def args(self) -> list[str]:
        # no retries: a 503 is an error row at once
        return ["judge=openai", "judge.model=judge-a", f"judge.params.base_url={self.url}",
                "judge.params.max_retries=0"]


@pytest.fixture
def judge():
    server = FlakyJudge()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def run_answers(out: Path) -> None:
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false") == 0


def verdict_rows(out: Path) -> dict[str, dict]:
    """episode_id -> the whole judgements row, as stored."""
    db = sqlite3.connect(out / "results.sqlite")
    try:
        db.row_factory = sqlite3.Row
        return {r["episode_id"]: dict(r) for r in db.execute("SELECT * FROM judgements")}
    finally:
        db.close()


def statuses(out: Path) -> dict[str, str]:
    return {e: r["status"] for e, r in verdict_rows(out).items()}


# --- 1. an error verdict is judged again by a rerun, and only it -------------------------
def test_a_rerun_judges_the_failed_calls_again_and_nothing_else(tmp_path, judge, capsys):
    out = tmp_path / "out"
    run_answers(out)
    judge.failing = {fx.answer_of(1), fx.answer_of(2)}
    capsys.readouterr()
    assert harness("judge", str(out), *judge.args()) == 1  # 1: some calls failed
    assert "ok 3, unreadable 1, error 2" in capsys.readouterr().err
    first = verdict_rows(out)
    assert statuses(out) == {"test/000": "ok", "test/001": "error", "test/002": "error", "test/003": "ok",
                             "test/004": "unreadable", "test/005": "ok"}
    failed = first["test/001"]
    assert "503" in failed["reason"] and failed["vals"] == "{}" and failed["raw_reply"] is None

    # The server is back: the rerun asks about the two failed answers only.
    judge.failing = set()
    asked = len(judge.answers)
    assert harness("judge", str(out), *judge.args()) == 0
    err = capsys.readouterr().err
    assert "2 answer(s) to judge, 4 already judged" in err and "ok 2, unreadable 0, error 0" in err
    assert sorted(judge.answers[asked:]) == sorted([fx.answer_of(1), fx.answer_of(2)])
    assert set(statuses(out).values()) == {"ok", "unreadable"}
    again = verdict_rows(out)
    for episode in ("test/000", "test/003", "test/004", "test/005"):  # the verdicts, byte for byte
        assert again[episode] == first[episode]
    for i in (1, 2):  # the error rows were replaced by the new verdicts
        row = again[f"test/00{i}"]
        assert row["status"] == "ok" and row["reason"] is None and row["raw_reply"]
        assert json.loads(row["vals"]) == {"judge_score": float(len(fx.answer_of(i)) % 11)}

    # Everything has a verdict now: a third run asks nothing.
    asked = len(judge.answers)
    assert harness("judge", str(out), *judge.args()) == 0
    assert "0 answer(s) to judge, 6 already judged" in capsys.readouterr().err
    assert len(judge.answers) == asked and verdict_rows(out) == again


# --- 2. a verdict is never overwritten ----------------------------------------------------
def _row(status: str, values: dict, reason: str | None = None, raw: str | None = "r") -> dict:
    return {"run_id": "run", "suite": "s", "split": "t", "episode_id": "e1", "seed": 0, "judge_id": "j1",
            "judge": "j", "identity": "{}", "status": status, "vals": json.dumps(values), "reason": reason,
            "raw_reply": raw, "prompt": None, "meta": "{}", "judged_at": 1.0}


@pytest.mark.parametrize("first", ["ok", "unreadable"])
def test_a_verdict_is_never_overwritten_but_an_error_row_is(tmp_path, first):
    key = ("run", "s", "t", "e1", 0)
    with ResultStore(tmp_path / "store") as s:
        assert s.add_judgement(_row(first, {"score": 3.0} if first == "ok" else {})) is True
        kept = s.judgements().to_dict("records")
        assert s.judged_keys("j1") == {key}
        for later in (_row("ok", {"score": 9.0}), _row("unreadable", {}), _row("error", {}, "down", None)):
            assert s.add_judgement(later) is False, later["status"]
        assert s.judgements().to_dict("records") == kept

        other = {**_row("error", {}, "server down", None), "episode_id": "e2"}
        assert s.add_judgement(other) is True
        assert s.judged_keys("j1") == {key}  # an error row is no verdict: judged again
        assert s.add_judgement({**_row("ok", {"score": 5.0}), "episode_id": "e2"}) is True
        got = s.judgements().set_index("episode_id").loc["e2"]
        assert got.status == "ok" and got["values"] == {"score": 5.0} and got.reason is None
        assert s.judged_keys("j1") == {key, ("run", "s", "t", "e2", 0)}
        assert s.judged_keys("another judge") == set()


# --- 3. a rubric that raises: the reply is unreadable ------------------------------------
def test_a_rubric_that_raises_or_returns_no_verdict_makes_the_reply_unreadable(tmp_path, judge, capsys,
                                                                             monkeypatch):
    read = fx.QARubric.read
    raising, no_verdict, half_read = fx.answer_of(1), fx.answer_of(2), fx.answer_of(3)

    def faulty_read(self, text, episode):
        answer = fx.answer_of(int(episode.seed))
        if answer == raising:
            raise RuntimeError("the rubric tripped\nover two lines")
        if answer == no_verdict:
            return 7.0  # a bare number is not a Verdict: no value is taken from it
        if answer == half_read:  # values beside an unreadable status are not stored either
            return Verdict({"judge_score": 10.0}, "unreadable", "a score, but no reason read")
        return read(self, text, episode)

    monkeypatch.setattr(fx.QARubric, "read", faulty_read)
    out = tmp_path / "out"
    run_answers(out)
    capsys.readouterr()
    assert harness("judge", str(out), *judge.args()) == 0
    assert "ok 2, unreadable 4, error 0" in capsys.readouterr().err
    got = verdict_rows(out)
    raised, returned = got["test/001"], got["test/002"]
    assert raised["status"] == "unreadable" and raised["vals"] == "{}"
    assert raised["reason"] == "rubric raised RuntimeError: the rubric tripped"
    assert raised["raw_reply"] == fx.judge_reply("judge-a", raising)  # the reply is kept as evidence
    assert returned["status"] == "unreadable" and returned["vals"] == "{}"
    assert returned["reason"] == "rubric returned float"
    assert got["test/003"]["status"] == "unreadable" and got["test/003"]["vals"] == "{}"
    assert json.loads(got["test/000"]["vals"]) == {"judge_score": float(len(fx.answer_of(0)) % 11)}

    # Unreadable is a verdict: a rerun (the rubric still faulty) asks nothing again.
    asked = len(judge.answers)
    assert harness("judge", str(out), *judge.args()) == 0
    assert "0 answer(s) to judge, 6 already judged" in capsys.readouterr().err
    assert len(judge.answers) == asked
