"""One error policy for every metric (harness.scoring.policy, docs/metrics.md): an episode that errored
or gave no answer counts against a declared metric, and every reader shows the same value and n.

A real run of the stored-values QA suite of tests/harness/judge_fixtures.py with the ``crasher``
agent: of six questions, three end in an agent error (even ones), one is answered with nothing
(question 1) and two are answered right (3 and 5). Its declared metric ``exact`` comes from the
env's ``info["values"]``, so an errored episode has no value of its own: it counts as a failure.
Everything below is computed here from that script, not from the harness."""

from __future__ import annotations

import json
import math

import pytest

from tests.harness import judge_fixtures as fx

SPLIT = f"{fx.STORED_SUITE_NAME}/test"
QUESTIONS = range(6)
ERRORED = [i for i in QUESTIONS if fx.crasher_answer(i) is None]
EMPTY = [i for i in QUESTIONS if fx.crasher_answer(i) == ""]
RIGHT = [i for i in QUESTIONS if fx.crasher_answer(i) == str(2 + i)]
EXACT = len(RIGHT) / len(QUESTIONS)  # 2 of 6: errors and the empty answer count as failures


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


harness = fx.cli


@pytest.fixture
def store(tmp_path):
    out = tmp_path / "out"
    assert harness("run", f"suite={fx.STORED_SUITE_NAME}", "planner=crasher", "executor=local",
                   f"out={out}", "progress=false") == 0
    return out


def _out(capsys, *args: str) -> str:
    capsys.readouterr()
    assert harness(*args) == 0
    return capsys.readouterr().out


def test_errored_episodes_count_against_a_stored_metric_in_every_reader(store, capsys, tmp_path):
    assert (len(ERRORED), len(EMPTY), len(RIGHT)) == (3, 1, 2)
    shown = f"{100 * EXACT:.1f}"  # 33.3, never 100.0 (the right answers alone)
    md = _out(capsys, "table", str(store), "--metrics", "exact")
    row = next(line for line in md.splitlines() if line.startswith("| crasher"))
    assert shown in row and "100.0" not in row, md
    doc = json.loads(_out(capsys, "table", str(store), "--metrics", "exact", "--format", "json"))
    (cell,) = [r["cells"][SPLIT]["exact"] for r in doc["rows"]]
    assert math.isclose(cell["value"], EXACT) and cell["n"] == len(QUESTIONS)
    assert cell["coverage"] == {"n": 6, "valued": 3, "missing": 3, "unscored": 0, "missing_value": 0.0}
    assert cell["interval"][0] < EXACT < cell["interval"][1]
    csv = _out(capsys, "table", str(store), "--metrics", "exact", "--format", "csv")
    assert shown in csv and "Exact over 6 of 6 (3 without a value (errored or unanswered) count 0)" in csv
    latex = _out(capsys, "table", str(store), "--metrics", "exact", "--format", "latex")
    assert shown in latex
    assert "Exact over 6 of 6 (3 without a value (errored or unanswered) count 0)" in md
    by_type = _out(capsys, "table", str(store), "--metrics", "exact", "--by", "task_type")
    assert shown in by_type and "100.0" not in by_type.split("\n\n")[0], by_type
    by_failure = _out(capsys, "table", str(store), "--by", "failure")
    assert f"| 6 | {shown} | 50.0 |" in by_failure, by_failure  # success, then the errors' share
    export = tmp_path / "episodes.jsonl"
    assert harness("export", str(store), "--output", str(export)) == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    counted = [r["metrics"]["exact"] for r in rows]
    assert len(counted) == 6 and sum(counted) / len(counted) == EXACT  # the mean of the export is the cell
    assert harness("report", str(store)) == 0
    page = (store / "report" / "index.html").read_text(encoding="utf-8")
    assert shown in page and ">100.0<" not in page


def test_a_store_with_errored_episodes_is_judged_and_empty_answers_count(store, capsys, tmp_path):
    pytest.importorskip("openai", reason="harness judge's openai judge needs the `models` extra")
    prompt = tmp_path / "other_prompt.txt"
    prompt.write_text("Another rubric: reply 'SCORE: N', N in 0..10.\nQUESTION: {question}\nANSWER: {answer}", encoding="utf-8")
    with fx.judge_url(tmp_path / "requests.log") as url:
        capsys.readouterr()
        assert harness("judge", str(store), "judge=openai", "judge.model=judge-a", f"judge.params.base_url={url}") == 0
        err = capsys.readouterr().err
        assert f"{len(RIGHT)} judged now" in err, err  # the errored episodes do not hide the answers
        # the same model and name with another prompt: another judge, never averaged into the first
        assert harness("judge", str(store), "judge=openai", "judge.model=judge-a",
                       f"judge.rubric.prompt_file={prompt}", f"judge.params.base_url={url}") == 0
    # judge-a scores len(answer) % 11: 1 for "5" and "7"; the empty answer and the errors count 0
    want = sum(len(str(2 + i)) % 11 for i in RIGHT) / len(QUESTIONS)
    doc = json.loads(_out(capsys, "table", str(store), "--format", "json"))  # no --judge: each judge
    judges = doc["judges"]["judges"]
    assert len(judges) == 2 and [j["verdicts"]["ok"] for j in judges] == [2, 2], judges  # not one judge of 4
    first, second = (j["tag"] for j in judges)
    for tag in (first, second):
        doc = json.loads(_out(capsys, "table", str(store), "--format", "json", "--judge", tag))
        cell = doc["rows"][0]["cells"][SPLIT]["judge_score"]
        assert math.isclose(cell["value"], want) and cell["n"] == 6
        assert cell["coverage"]["missing"] == len(ERRORED) + len(EMPTY)
    md = _out(capsys, "table", str(store), "--judge", first)
    assert "Judge over 6 of 6 (4 without an answer (errored or empty) count 0)" in md, md


def test_an_unjudged_answer_is_unscored_not_zero(store, capsys):
    """No judge has run: the judged metric has no value at all (not 0 from the errored episodes)."""
    doc = json.loads(_out(capsys, "table", str(store), "--format", "json", "--metrics", "exact,judge_score"))
    cell = doc["rows"][0]["cells"][SPLIT].get("judge_score")
    assert cell is None or cell["value"] is None, cell
    md = _out(capsys, "table", str(store), "--metrics", "exact,judge_score")
    assert "0.00" not in md, md


def test_a_judged_cell_over_part_of_its_answers_is_marked_partial(store, capsys, tmp_path):
    """One judged answer's verdict removed from the store: that answer is unscored, so the cell
    is computed over 5 of 6 and marked partial, its footnote saying so."""
    pytest.importorskip("openai", reason="harness judge's openai judge needs the `models` extra")
    import sqlite3

    with fx.judge_url(tmp_path / "requests.log") as url:
        assert harness("judge", str(store), "judge=openai", "judge.model=judge-a", f"judge.params.base_url={url}") == 0
    with sqlite3.connect(store / "results.sqlite") as db:
        assert db.execute("DELETE FROM judgements WHERE episode_id = ?", (f"test/{RIGHT[0]:03d}",)).rowcount == 1
    md = _out(capsys, "table", str(store), "--metrics", "exact,judge_score")
    row = next(line for line in md.splitlines() if line.startswith("| crasher"))
    want = sum(len(str(2 + i)) % 11 for i in RIGHT[1:]) / (len(QUESTIONS) - 1)
    assert f"{want:.2f}†°" in row and f"{100 * EXACT:.1f}†°" not in row, md  # only the judged cell
    assert "Judge over 5 of 6 (4 without an answer (errored or empty) count 0; 1 not scored" in md, md
