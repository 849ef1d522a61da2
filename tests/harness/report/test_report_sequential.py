"""The report of a store holding a sequential comparison (``stopping=sequential``, two variants on
EB-ALFRED's embedded engine): its sequential section (harness/report/sequential.py) shows each
comparison's line, as ``harness table`` states it, and the chart of its interval against the pairs
run, and the page's navigation links to it."""

from __future__ import annotations

import html
import re

from harness.report import build_report
from harness.scoring.policy import known_metric
from harness.stats.sequential import describe, stored_comparisons
from harness.tables import selection as results
from tests.harness.stats.test_sequential_run import eb_alfred, run_cli  # noqa: F401 (a fixture)

SEQUENTIAL = ["run", "-m", "split=seen", "stopping=sequential", "suite.params.render=false", "progress=false",
              "planner=oracle,random", "stopping.baseline=random", "stopping.round=5", "stopping.max_episodes=10"]


def test_the_report_shows_each_sequential_comparison_with_its_interval_chart(eb_alfred, capsys, tmp_path):
    out = tmp_path / "o"
    code, _out, err = run_cli(capsys, *SEQUENTIAL, f"out={out}")
    assert code == 0, err
    selection = results.load([str(out)])
    (comparison,) = stored_comparisons(selection.frame, selection.runs)
    assert (comparison.variant, comparison.baseline) == ("oracle", "random")

    page = build_report(str(out), tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert '<a href="#sequential">sequential</a>' in page
    start = page.index('<section id="sequential">')
    section = page[start:page.index("</section>", start)]
    metric = known_metric(comparison.metric)
    line = describe(comparison, metric is None or metric.percent)
    assert f'<p class="sequential">{html.escape(line, quote=True)}</p>' in section
    (chart,) = re.findall(r'<svg [^>]*data-chart="sequential">.*?</svg>', section)
    assert "oracle vs random on eb_alfred/seen" in chart and "<polygon points=" in chart
    assert re.search(r"paired episodes \(1 … \d+\)</text></svg>$", chart)
    if comparison.decision.at is not None:  # where it stopped, marked on the chart
        assert f"{comparison.decision.outcome} at pair {comparison.decision.at}" in chart
    # the section sits after the transfer table and before the charts, as the navigation lists it
    assert page.index('<section id="transfer">') < start < page.index('<section id="charts">')
