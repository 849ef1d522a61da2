"""`harness table/report --judge`: the judged metric's cells come from the chosen judge's
readable verdicts (one judge, the mean of several, or each side by side); unreadable and
failed verdicts are counted in the footnotes, never scored 0; agreement is in the JSON.

A real run of the one-step QA suite of tests/harness/judge_fixtures.py, judged by two models
of a loopback judge server whose scores are scripted from the answer's length, so every cell
is computed here independently of the harness."""

from __future__ import annotations

import json
import math
import socket
import statistics

import pytest

from harness.judging.agreement import krippendorff_alpha_interval, spearman_rho
from tests.harness import judge_fixtures as fx

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

QUESTIONS = range(6)
READABLE = [i for i in QUESTIONS if "garble" not in fx.answer_of(i)]  # question 4's reply is unreadable


def score(model: str, i: int) -> float:
    answer = fx.answer_of(i)
    return float(len(answer) % 11 if model == "judge-a" else (2 * len(answer)) % 11)


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


harness = fx.cli


@pytest.fixture
def judged(tmp_path):
    """A store with the answers judged by judge-a and judge-b."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = fx.serve(port, tmp_path / "requests.log", 0.0)
    url = f"http://127.0.0.1:{port}/v1"
    out = tmp_path / "out"
    try:
        assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                       "progress=false") == 0
        for model in ("judge-a", "judge-b"):
            assert harness("judge", str(out), "judge=openai", f"judge.model={model}",
                           f"judge.params.base_url={url}") == 0
    finally:
        srv.shutdown()
        srv.server_close()
    return out


def table_json(out, capsys, *flags: str) -> dict:
    capsys.readouterr()
    assert harness("table", str(out), "--format", "json", *flags) == 0
    return json.loads(capsys.readouterr().out)


def cell(doc: dict, metric: str) -> float:
    (row,) = doc["rows"]
    return row["cells"]["qa_judge_test/test"][metric]["value"]


def test_one_judge_mean_of_judges_and_each_side_by_side(judged, capsys):
    a = [score("judge-a", i) for i in READABLE]
    b = [score("judge-b", i) for i in READABLE]
    accuracy = sum(fx.answer_of(i) == str(2 + i) for i in QUESTIONS) / len(QUESTIONS)

    one = table_json(judged, capsys, "--judge", "judge-a")
    assert cell(one, "judge_score") == pytest.approx(statistics.mean(a))  # the unreadable verdict: no value, not 0
    assert cell(one, "accuracy") == pytest.approx(accuracy)
    assert one["judges"]["mode"] == "one" and one["judges"]["chosen"] == ["judge-a"]
    verdicts = {j["tag"]: j["verdicts"] for j in one["judges"]["judges"]}
    assert verdicts["judge-a"] == {"ok": 5, "unreadable": 1, "error": 0}
    assert any("judge-a: 5 readable verdicts, 1 unreadable, 0 failed calls" in n for n in one["notes"])

    mean = table_json(judged, capsys, "--judge", "judge-a,judge-b")
    assert cell(mean, "judge_score") == pytest.approx(statistics.mean((x + y) / 2 for x, y in zip(a, b)))

    each = table_json(judged, capsys)  # two judges and no --judge: each in its own column
    assert each["judges"]["mode"] == "each"
    assert cell(each, "judge_score@judge-a") == pytest.approx(statistics.mean(a))
    assert cell(each, "judge_score@judge-b") == pytest.approx(statistics.mean(b))
    agree = each["judges"]["agreement"]["judge_score"]
    assert agree["answers"] == len(READABLE)
    assert agree["alpha"] == pytest.approx(krippendorff_alpha_interval(list(zip(a, b))))
    assert agree["pairs"][0]["rho"] == pytest.approx(spearman_rho(a, b))

    assert harness("table", str(judged), "--judge", "all") == 0
    text = capsys.readouterr().out
    assert "Judge [judge-a]" in text and "Judge [judge-b]" in text
    assert "judge agreement on judge_score: Krippendorff's alpha" in text
    assert f"{statistics.mean(b):.2f}" in text


def test_no_judge_yet_and_bad_judge_names(tmp_path, judged, capsys):
    out = tmp_path / "unjudged"
    assert harness("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                   "progress=false") == 0
    doc = table_json(out, capsys)
    (row,) = doc["rows"]
    cells = row["cells"]["qa_judge_test/test"]
    assert "judge_score" not in cells or cells["judge_score"]["value"] is None  # empty, never 0
    assert any("no judge has scored these answers" in n for n in doc["notes"])

    for bad, why in (("nope", "no such judge"), ("judge-a,", "empty name"), (" ", "needs a judge name")):
        capsys.readouterr()
        assert harness("table", str(judged), "--judge", bad) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0], err


def test_report_shows_the_chosen_judge_and_agreement(judged, tmp_path, capsys):
    dest = tmp_path / "report" / "index.html"
    assert harness("report", str(judged), "--dest", str(dest), "--judge", "judge-b") == 0
    html = dest.read_text(encoding="utf-8")
    b = statistics.mean(score("judge-b", i) for i in READABLE)
    assert "judge judge-b" in html and "1 unreadable" in html
    assert "Krippendorff" in html
    assert f"{b:.2f}" in html
    assert not math.isnan(b)


def test_each_judge_splits_only_the_values_several_judges_gave():
    """Side by side, a value that one judge alone gives (a local scorer's similarity) keeps its
    plain name; the value two judges gave is split per judge."""
    import pandas as pd

    from harness.judging import views as judge_views

    key = {"run_id": "r", "suite": "s", "split": "t", "episode_id": "e0", "seed": 0}
    df = pd.DataFrame([{**key, "values": {"correct": 1}}])

    def verdict(name, model, values, t):
        identity = {"backend": "x", "model": model}
        return {**key, "judge_id": model, "judge": name, "identity": identity, "status": "ok", "values": values,
                "judged_at": t}

    verdicts = pd.DataFrame([verdict("a", "ma", {"score": 4.0}, 1), verdict("b", "mb", {"score": 6.0}, 2),
                             verdict("sim", "ms", {"similarity": 0.5}, 3)])
    out, view = judge_views.apply(df, verdicts, None, ["Score", "Sim"])
    assert view.mode == "each" and view.shared_values == {"score"}
    assert out["values"][0] == {"correct": 1, "score@a": 4.0, "score@b": 6.0, "similarity": 0.5}
    out, view = judge_views.apply(df, verdicts, "a,b,sim", ["Score", "Sim"])
    assert view.mode == "mean" and out["values"][0] == {"correct": 1, "score": 5.0, "similarity": 0.5}
