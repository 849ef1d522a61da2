"""A suite declares its failure classes (name, label, order, colour) on its plugin; the table
(``harness table --by failure``) and the report use that declaration, with equal counts; a
class nobody declares is counted, never dropped; ``failures=`` may name a class, an instance
or a factory. Tried with two outsider suites: a one-step multiple-choice question suite
(tests/harness/quiz_suite.py) whose reader names its own ``wrong_answer``."""

from __future__ import annotations

import dataclasses
import io
import re

import pandas as pd
import pytest

from harness.scoring import failures
from harness.cli.entry import main
from harness.interfaces import FailureClass
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec
from tests.harness import quiz_suite
from tests.harness.quiz_suite import AlwaysA, QuizOracle, QuizRules, QuizSuite, registered


def _run(out, agent, variant, suite_name="quiz"):
    spec = RunSpec(suite=suite_name, split="test", agent=agent.name, variant=variant)
    with ResultStore(out) as store:
        Runner(spec, QuizSuite(), agent, store).run()


def _failure_csv(capsys, out) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["table", str(out), "--by", "failure", "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("variant")


def _report_counts(out, tmp_path) -> dict[str, dict[str, float]]:
    from harness.report import build_report

    html = build_report(str(out), tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    table = html[html.index('<table id="failure-table">'):]
    table = table[: table.index("</table>")]
    head = re.findall(r"<th title=\"[^\"]*\">([^<]+)</th>", table)
    rows = {}
    for row in re.findall(r"<tr><th>([^<]+)</th><th>[^<]+</th>(.*?)</tr>", table):
        cells = re.findall(r"<td>([^<]+)</td>", row[1])
        if not cells:  # the head row
            continue
        rows[row[0]] = {"n": float(cells[0]), **{h: float(c) for h, c in zip(head, cells[1:])}}
    return rows, html


def test_a_suites_own_class_is_shown_by_the_table_and_the_report_with_equal_counts(tmp_path, capsys):
    out = tmp_path / "store"
    with registered():
        _run(out, AlwaysA(), "always_a")
        _run(out, QuizOracle(), "oracle")
        with ResultStore(out, readonly=True) as store:
            frame = store.frame()
        answers = {r.episode_id: r.extra["task"]["answer"] for r in ResultStore(out, readonly=True).records()}
        right = sum(a == "A" for a in answers.values())
        assert 0 < right < 10
        t = _failure_csv(capsys, out)
        assert t.loc["always_a", "n"] == 10  # every episode, not only the successes
        assert t.loc["always_a", "success"] == pytest.approx(100 * right / 10)
        assert t.loc["always_a", "wrong_answer"] == pytest.approx(100 * (10 - right) / 10)
        assert t.loc["oracle", "success"] == 100.0
        rows, html = _report_counts(out, tmp_path)
        for variant in ("always_a", "oracle"):
            for col, value in rows[variant].items():
                assert value == pytest.approx(t.loc[variant, col], abs=0.05), (variant, col)
        # The declared colour and label, in the chart and the legend.
        assert WRONG in html and quiz_suite.WRONG_ANSWER.colour in html and quiz_suite.WRONG_ANSWER.label in html
        assert len(frame) == 20
    # The task facts came through the suite's own reader (not an ALFRED key).
    assert set(answers.values()) <= set("ABCD")


WRONG = "wrong_answer"


def test_an_undeclared_class_is_counted_not_dropped(tmp_path, capsys):
    out = tmp_path / "store"
    undeclared = dataclasses.replace(quiz_suite.SUITE, failure_classes=())
    with registered(undeclared, quiz_suite.ORACLE):
        _run(out, AlwaysA(), "always_a")
        t = _failure_csv(capsys, out)
        assert t.loc["always_a", "n"] == 10
        assert t.loc["always_a", "success"] + t.loc["always_a", "wrong_answer"] == pytest.approx(100.0)
        capsys.readouterr()
        assert main(["table", str(out), "--by", "failure"]) == 0
        text = capsys.readouterr().out
        assert "wrong_answer: a class the suite does not declare" in text
        rows, _ = _report_counts(out, tmp_path)
        assert rows["always_a"]["n"] == 10 and rows["always_a"]["wrong_answer"] == t.loc["always_a", "wrong_answer"]


@pytest.mark.parametrize("target", ["tests.harness.quiz_suite:QuizRules", "tests.harness.quiz_suite:_rules_instance",
                                    "tests.harness.quiz_suite:_make_rules"])
def test_failures_may_name_a_class_an_instance_or_a_factory(tmp_path, capsys, target):
    quiz_suite._rules_instance = QuizRules()
    quiz_suite._make_rules = lambda: QuizRules()
    out = tmp_path / "store"
    with registered(dataclasses.replace(quiz_suite.SUITE, failures=target), quiz_suite.ORACLE):
        _run(out, AlwaysA(), "always_a")
        t = _failure_csv(capsys, out)
    assert t.loc["always_a", "wrong_answer"] > 0


def test_classes_sort_by_declared_order_and_keep_their_colour():
    with registered():
        names = [c.name for c in failures.declared_classes("quiz")]
        assert names == ["success", "error", "empty_plan", "output_format", "time_limit", "wrong_answer",
                         "out_of_steps", "other", "no_history"]
        both = failures.classes_of(["quiz", "eb_alfred"], seen=["zzz"])
        assert [c.name for c in both][-1] == "zzz" and both[-1].order == failures.UNDECLARED_ORDER
        colours = {c.name: c.colour for c in both}
        assert colours["wrong_answer"] == "#d62728" and colours["success"] == failures.GENERIC["success"].colour


def test_bad_declarations_are_named():
    assert failures.declaration_problem([FailureClass("wrong_answer", "x")]) is None
    assert "generic" in failures.declaration_problem([FailureClass("other", "x")])
    assert "twice" in failures.declaration_problem([FailureClass("a", "x"), FailureClass("a", "y")])
    assert "lower_snake_case" in failures.declaration_problem([FailureClass("Wrong Answer", "x")])
    with pytest.raises(ValueError):
        FailureClass("a", "x", colour="red")


def test_the_core_names_no_alfred_class():
    import inspect

    src = inspect.getsource(failures)
    for name in ("hallucinated_object", "target_not_found", "target_not_picked", "skipped_step", "wrong_receptacle",
                 "STEP_VERBS", "HistoryStep"):
        assert name not in src, name
    import harness.interfaces as interfaces

    assert not hasattr(interfaces, "STEP_VERBS") and not hasattr(interfaces, "HistoryStep")


def test_alfred_family_records_keep_their_task_facts(tmp_path):
    """EB-ALFRED's records still carry the task's pddl_params in extra["task"] (now read by its
    own reader), so its stored records are unchanged."""
    from harness.registry.catalog import SUITES

    out = str(tmp_path / "eb")
    assert main(["run", "planner=random", "split=seen", "limit=2", f"out={out}", "progress=false"]) == 0
    episodes = {e.episode_id: e for e in SUITES.build("eb_alfred").episodes("seen")}
    with ResultStore(out, readonly=True) as store:
        records = store.records()
    assert len(records) == 2
    for r in records:
        assert r.extra["task"] == dict(episodes[r.episode_id].metadata["pddl_params"])


def test_check_suite_passes_the_question_suite_and_refuses_an_undeclared_class():
    from harness.check.conformance import SUITE_CHECKS, ConformanceError, check_suite

    # Registered in this process only: the process executor's workers would not find it.
    checks = [c for c in SUITE_CHECKS if c != "schedule"]
    with registered():
        assert check_suite("quiz", episodes=4, checks=checks).passed == checks
    with registered(dataclasses.replace(quiz_suite.SUITE, failure_classes=()), quiz_suite.ORACLE):
        with pytest.raises(ConformanceError, match=r"probe: episode q\d+ is classed 'wrong_answer', a failure class "
                                                   r"the suite does not declare"):
            check_suite("quiz", episodes=4, checks=["probe"])
    bad = dataclasses.replace(quiz_suite.SUITE, failure_classes=(FailureClass("other", "mine"),))
    with registered(bad, quiz_suite.ORACLE):
        with pytest.raises(ConformanceError, match="one of the core's generic classes"):
            check_suite("quiz", episodes=2, checks=["probe"])
