"""Caveats carried into every table (harness/tables/caveats.py), from stores written by real runs:

* a run whose every reply is prose (a loopback OpenAI-compatible server) says so in its end
  line, and every table format flags its cells (§, the share of episodes with output errors);
* ``limit=1`` runs give "1/N" per cell in Markdown, LaTeX, CSV, JSON, ``--by task_type``,
  ``--experiment`` and the report, N being the split's size as the run recorded it; a store
  written without that record says "total unknown";
* a given agent parameter (``planner.params.max_new_tokens=64``) and a stand-in agent in one
  row of an experiment are named, with the row;
* ``harness report --experiment`` opens with the experiment's table; failure classes keep
  their colour from one report to another whatever classes each shows.
"""

from __future__ import annotations

import io
import json
import re
from http.server import ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from harness.tables import caveats
from harness.cli.entry import main
from harness.store import ResultStore
from tests.helpers import serve_chat_reply

PROSE = "I would look around the kitchen first, then think about where the apple might be."
SIZE = 40  # suite.params.generated_per_split: the split's total


def _serve_prose() -> ThreadingHTTPServer:
    return serve_chat_reply(PROSE)


def _table(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(["table", *map(str, argv)]) == 0
    return capsys.readouterr().out


def _run(out: Path, *overrides: str, limit: int = 1) -> None:
    assert main(["run", "suite=eb_alfred", "suite.params.render=false", f"suite.params.generated_per_split={SIZE}",
                 "split=seen", f"limit={limit}", f"out={out}", "progress=false", *overrides]) == 0


@pytest.fixture(scope="module")
def prose_store(tmp_path_factory) -> tuple[Path, str]:
    """Two rows on the same 2 episodes: a VLM planner whose server answers prose (with a token
    budget given), and the oracle. Returns the store and the VLM run's end line."""
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    out = tmp_path_factory.mktemp("caveats") / "o"
    httpd = _serve_prose()
    err = io.StringIO()
    import contextlib

    try:
        with contextlib.redirect_stderr(err):
            _run(out, "planner=vlm", "planner.params.backend=openai", "planner.params.model=m",
                 "planner.params.max_retries=0", "planner.params.max_new_tokens=64",
                 f"planner.params.base_url=http://127.0.0.1:{httpd.server_port}/v1", "variant.name=prose", limit=2)
    finally:
        httpd.shutdown()
    _run(out, "planner=oracle", "variant.name=oracle", limit=2)
    (end,) = [line for line in err.getvalue().splitlines() if "succeeded;" in line]
    return out, end


def test_every_reply_unparseable_is_said_in_the_end_line_and_flagged_in_every_format(prose_store, capsys):
    out, end = prose_store
    assert "0/2 succeeded; 0 errors, 0 timeouts, 2 with output errors (" in end, end
    md = _table(capsys, out, "--baseline", "oracle")
    row = next(line for line in md.splitlines() if line.startswith("| prose "))
    assert caveats.UNUSABLE in row  # the cell is marked
    assert caveats.UNUSABLE not in next(line for line in md.splitlines() if line.startswith("| oracle "))
    note = next(line for line in md.splitlines() if line.startswith(f"{caveats.UNUSABLE} prose, eb_alfred/seen:"))
    assert "2 of 2 episodes with output errors" in note and "most replies unusable" in note, note
    replies = int(re.search(r"\((\d+) of (\d+) agent replies unusable\)", note).group(2))
    assert replies >= 2 and f"({replies} of {replies} agent replies unusable)" in note
    latex = _table(capsys, out, "--baseline", "oracle", "--format", "latex")
    assert r"\S{}" in latex and "2 of 2 episodes with output errors" in latex
    frame = pd.read_csv(io.StringIO(_table(capsys, out, "--baseline", "oracle", "--format", "csv")),
                        dtype=str, keep_default_na=False).set_index("variant")
    assert "2 with output errors" in frame.loc["prose", "caveats"] and "mostly unusable" in frame.loc["prose", "caveats"]
    assert "output errors" not in frame.loc["oracle", "caveats"]
    doc = json.loads(_table(capsys, out, "--baseline", "oracle", "--format", "json"))
    cell = next(r for r in doc["rows"] if r["row"] == "prose")["cells"]["eb_alfred/seen"]["sr"]
    assert cell["output_error_episodes"] == 2 and cell["mostly_unusable"] is True
    assert cell["unusable_replies"] == cell["agent_replies"] == replies
    assert any("most replies unusable" in n for n in doc["notes"])
    from harness.report import build_report  # the report's table: the same mark and footnote

    page = build_report(str(out), out.parent / "r" / "index.html", baseline="oracle").read_text(encoding="utf-8")
    section = page[page.index('<section id="transfer">'):page.index('<section id="charts">')]
    assert f"0.0{caveats.UNUSABLE}" in section and "2 of 2 episodes with output errors" in section


def test_a_given_token_budget_and_the_agent_are_named_per_row(prose_store, capsys):
    out, _ = prose_store
    md = _table(capsys, out, "--baseline", "oracle")
    (line,) = [x for x in md.splitlines() if x.startswith("Settings not at their defaults")]
    assert "agent (oracle: oracle, prose: vlm)" in line, line  # the baseline row first, as in the table
    assert "planner.params.max_new_tokens (oracle: (unset), prose: 64)" in line, line
    assert "limit=2 (every row)" in line
    doc = json.loads(_table(capsys, out, "--baseline", "oracle", "--format", "json"))
    settings = next(r for r in doc["rows"] if r["row"] == "prose")["settings"]
    assert settings["planner.params.max_new_tokens"] == "64" and settings["limit"] == "2"


@pytest.fixture(scope="module")
def limit_one(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("limit1") / "o"
    _run(out, "planner=random", "variant.name=base")
    _run(out, "planner=oracle", "variant.name=oracle")
    return out


def test_limit_one_says_one_of_the_split_in_every_format(limit_one, capsys):
    out = limit_one
    md = _table(capsys, out)
    assert f"base: eb_alfred/seen 1/{SIZE}, avg 1/{SIZE}; oracle: eb_alfred/seen 1/{SIZE}, avg 1/{SIZE}" in md
    assert "| base | 0.0° |" in md.replace("0.0° | 0.0° ", "0.0° | ") or "| base | 0.0°" in md
    latex = _table(capsys, out, "--format", "latex")
    assert f"1/{SIZE}" in latex and r"$^\circ$" in latex
    frame = pd.read_csv(io.StringIO(_table(capsys, out, "--format", "csv")), dtype=str,
                        keep_default_na=False).set_index("variant")
    for row in ("base", "oracle"):
        assert frame.loc[row, "caveats"].startswith(f"eb_alfred/seen: 1/{SIZE}; avg: 1/{SIZE}")
        assert "limit=1" in frame.loc[row, "caveats"]
    doc = json.loads(_table(capsys, out, "--format", "json"))
    for r in doc["rows"]:
        for col in ("eb_alfred/seen", "avg"):
            cell = r["cells"][col]["sr"]
            assert (cell["n"], cell["episodes_total"], cell["partial"]) == (1, SIZE, True)
    by = _table(capsys, out, "--by", "task_type")
    assert f"all: base 1/{SIZE}, oracle 1/{SIZE}" in by
    labelled = _table(capsys, out, "--by", "task_type", "--label", "oracle=Oracle")  # columns renamed: caveats follow
    assert f"all: base 1/{SIZE}, Oracle 1/{SIZE}" in labelled and "°" in labelled.split("\n\n")[0]
    failures = _table(capsys, out, "--by", "failure")
    assert f"base, eb_alfred/seen: 1/{SIZE}; oracle, eb_alfred/seen: 1/{SIZE}." in failures
    frame = pd.read_csv(io.StringIO(_table(capsys, out, "--by", "failure", "--format", "csv"))).set_index("variant")
    assert list(frame["n"]) == [1, 1] and list(frame["of_split"]) == [SIZE, SIZE]
    assert "limit=1 (every row)" in md


MINI = """\
# @package _global_
experiment:
  name: mini_caveats
  runs:
    eb_alfred: [seen]
  suite_overrides:
    eb_alfred: [suite.params.render=false, suite.params.generated_per_split=40]
  variants:
    worst: {label: Random walk, overrides: [planner=random]}
    best: {label: Oracle, overrides: [planner=oracle]}
  table:
    baseline: worst
    metrics: [sr]
    columns:
      - {label: Household, suite: eb_alfred}
  paper:
    source: a made-up paper
    rows:
      worst: {Household: 1.0}
      best: {Household: 90.0}
"""


def test_experiment_table_names_the_stand_in_row_and_partial_cells_beside_paper_rows(tmp_path, capsys):
    mini = tmp_path / "mini.yaml"
    mini.write_text(MINI)
    out = tmp_path / "o"
    assert main(["run", f"+experiment={mini}", "experiment.variants.best.overrides=[planner=random]",
                 "limit=1", f"out={out}", "progress=false"]) == 0
    text = _table(capsys, out, "--experiment", mini, "--paper")
    assert "Oracle: run with agent random, a stand-in for the declared oracle." in text
    assert "Random walk: run with agent" not in text  # the declared agent: no stand-in
    # limit is the user's; render=false the experiment's own declaration: no caveat
    assert "limit=1 (every row)" in text and "suite.params.render" not in text
    assert f"Random walk: Household 1/{SIZE}; Oracle: Household 1/{SIZE}" in text
    assert "(paper) rows are the paper's full splits; measured cells marked ° ran only part" in text
    doc = json.loads(_table(capsys, out, "--experiment", mini, "--format", "json"))
    oracle = next(r for r in doc["rows"] if r["row"] == "Oracle")
    assert oracle["stand_in_for"] == "oracle" and oracle["cells"]["Household"]["sr"]["episodes_total"] == SIZE
    frame = pd.read_csv(io.StringIO(_table(capsys, out, "--experiment", mini, "--format", "csv")), dtype=str,
                        keep_default_na=False).set_index("variant")
    assert "stand-in for oracle" in frame.loc["Oracle", "caveats"]
    # The report's --experiment: the same table, first.
    dest = tmp_path / "r" / "index.html"
    assert main(["report", str(out), "--experiment", str(mini), "--paper", "--dest", str(dest)]) == 0
    page = dest.read_text(encoding="utf-8")
    section = page[page.index('<section id="experiment">'):page.index('<section id="transfer">')]
    assert "Random walk (paper)" in section and "Household" in section
    assert "Oracle: run with agent random, a stand-in for the declared oracle." in section
    assert f"1/{SIZE}" in section


def test_report_bad_experiment_is_one_line_and_writes_nothing(limit_one, tmp_path, capsys):
    dest = tmp_path / "r" / "index.html"
    capsys.readouterr()
    assert main(["report", str(limit_one), "--experiment", "no_such_experiment", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown experiment" in err and not dest.parent.exists()
    assert main(["report", str(limit_one), "--paper", "--dest", str(dest)]) == 2
    assert "--paper needs --experiment" in capsys.readouterr().err and not dest.parent.exists()


def test_report_states_episodes_of_the_split(limit_one, tmp_path):
    from harness.report import build_report

    page = build_report(str(limit_one), tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="transfer">'):page.index('<section id="charts">')]
    assert f"eb_alfred/seen 1/{SIZE}" in section and "0.0°" in section


def test_a_store_without_the_split_size_says_total_unknown(tmp_path, capsys):
    """Runs recorded before the runner wrote the split's size: n and "total unknown", no mark."""
    from harness.types import EpisodeRecord, RunSpec

    spec = RunSpec(suite="eb_alfred", split="seen", agent="random", variant="base", limit=3)
    with ResultStore(tmp_path / "o") as store:
        store.begin_run("old", spec, {"suite": "eb_alfred", "split": "seen", "variant": "base"}, {"time": "then"})
        store.add_many([EpisodeRecord("old", "base", "eb_alfred", "seen", f"e{i}", 0, gc_total=1) for i in range(3)])
    md = _table(capsys, tmp_path / "o")
    assert "base: eb_alfred/seen 3 (total unknown), avg 3 (total unknown)" in md
    assert "°" not in md.split("\n\n")[0]
    doc = json.loads(_table(capsys, tmp_path / "o", "--format", "json"))
    cell = doc["rows"][0]["cells"]["eb_alfred/seen"]["sr"]
    assert cell["episodes_total"] is None and cell["partial"] is None


def _legend(page: str) -> dict[str, str]:
    """Failure class -> colour, from the failure chart's legend."""
    chart = page[page.index('data-chart="failure"'):]
    chart = chart[:chart.index("</svg>")]
    return dict((name, colour) for colour, name in re.findall(
        r'<rect x="[\d.]+" y="[\d.]+" width="12" height="12" fill="(#[0-9a-f]{6})"/><text [^>]*>([^<]+)</text>', chart))


def test_failure_colours_are_fixed_per_class_across_reports(tmp_path):
    """Two reports showing different sets of classes (a quiz suite's own class and an
    EB-ALFRED store's): each class shown by both has one colour, whatever its position."""
    from harness.report import build_report
    from harness.run.runner import Runner
    from harness.types import RunSpec
    from tests.harness.quiz_suite import AlwaysA, QuizSuite, registered

    quiz = tmp_path / "quiz"
    with registered():
        with ResultStore(quiz) as store:
            Runner(RunSpec(suite="quiz", split="test", agent="always_a", variant="always_a"), QuizSuite(), AlwaysA(),
                   store).run()
        one = _legend(build_report(str(quiz), tmp_path / "r1" / "index.html").read_text(encoding="utf-8"))
    alfred = tmp_path / "alfred"
    _run(alfred, "planner=random", "variant.name=base", limit=3)
    _run(alfred, "planner=oracle", "variant.name=oracle", limit=3)
    two = _legend(build_report(str(alfred), tmp_path / "r2" / "index.html").read_text(encoding="utf-8"))
    assert "wrong_answer" in one and "wrong_answer" not in two
    shared = set(one) & set(two)
    assert "success" in shared and list(one).index("success") == 0
    assert {c: one[c] for c in shared} == {c: two[c] for c in shared}
    assert set(two) - set(one)  # the second report shows classes the first does not
    from harness.scoring import failures
    from tests.harness import quiz_suite

    # each the colour its declaration fixes (not a palette colour by position)
    assert one["wrong_answer"] == quiz_suite.WRONG_ANSWER.colour
    household = {c.name: c.colour for c in failures.declared_classes("eb_alfred")}
    for name, colour in two.items():
        assert colour == household.get(name, failures.GENERIC.get(name, failures.undeclared(name)).colour), name
    assert one["success"] == two["success"] == failures.GENERIC["success"].colour


def test_repeats_count_their_split_once_each_and_name_their_seeds(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "-m", "suite=eb_alfred", "suite.params.render=false", f"suite.params.generated_per_split={SIZE}",
                 "split=seen", "limit=1", "seed=0,1", "planner=random", "variant.name=base", f"out={out}",
                 "progress=false"]) == 0
    _run(out, "planner=oracle", "variant.name=oracle")
    md = _table(capsys, out)
    assert f"base: eb_alfred/seen 2/{2 * SIZE}" in md and f"oracle: eb_alfred/seen 1/{SIZE}" in md
    assert "seed (base: 0 / 1, oracle: 0)" in md


def test_fallback_actions_are_counted_and_a_cell_of_fallbacks_is_flagged(tmp_path, capsys):
    """Every reply an output error whose fallback actions (here the oracle's) run: the episodes
    may even succeed, but the cell is flagged and its footnote counts the fallback episodes."""
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.run.runner import Runner
    from harness.types import RunSpec

    from tests.helpers import fallback_oracle

    suite = EBAlfredSuite(render=False, generated_per_split=SIZE)
    with ResultStore(tmp_path / "o") as store:
        Runner(RunSpec(suite="eb_alfred", split="seen", agent="oracle", variant="fallback", limit=2), suite,
               fallback_oracle(), store).run()
    md = _table(capsys, tmp_path / "o")
    assert f"| fallback | 100.0{caveats.UNUSABLE}{caveats.PARTIAL} |" in md
    assert ("fallback, eb_alfred/seen: 2 of 2 episodes with output errors" in md
            and "2 with fallback actions; most replies unusable" in md)
    assert f"fallback: eb_alfred/seen 2/{SIZE}" in md
