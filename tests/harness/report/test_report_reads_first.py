"""The report reads first and explains second: its generic (transfer) table shows in each
column only the metrics that column's suite declares -- no SR or GC on a question-answering
suite's cells, no Acc or mIoU on EB-ALFRED's -- and every table's notes fold under it
(``<details>``, closed until clicked). Checked on a store of three suites written by real
``harness run`` (eb_alfred, cfg_bench, procobject), in a real headless Chromium, with a
screenshot (kept under ``$REPORT_SCREENSHOT_DIR`` when set)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.cli.entry import main
from harness.store import ResultStore
from harness.types import EpisodeRecord, RunSpec
from tests.harness.report.test_report import opened_report

#: variant -> (eb_alfred agent, cfg_bench agent): the same episodes for both variants.
AGENTS = {"base": ("planner=random", "planner=random"), "cfg_sft": ("planner=oracle", "planner=oracle")}
#: Each suite's metrics that a column of another suite must not show.
FOREIGN = {"cfg_bench": {"SR", "GC", "mIoU", "J"}, "procobject": {"SR", "GC", "Acc"},
           "eb_alfred": {"Acc", "S", "mIoU", "J"}}


@pytest.fixture(scope="module")
def three_suites(tmp_path_factory, cfg_data, po_data) -> Path:
    out = tmp_path_factory.mktemp("reads") / "runs"
    common = [f"out={out}", "progress=false"]
    for variant, (alfred, cfg) in AGENTS.items():
        for args in (["suite=eb_alfred", "split=seen", "limit=4", alfred],
                     ["suite=cfg_bench", "split=all", f"suite.params.data_dir={cfg_data}", cfg],
                     ["suite=procobject", "split=test", f"suite.params.data_dir={po_data}", "planner=oracle"]):
            assert main(["run", *args, f"variant.name={variant}", *common]) == 0, args
    # A cfg_bench record that carries a value another suite's metric reads (procobject's `iou`):
    # the column still shows only what cfg_bench declares.
    with ResultStore(out) as store:
        store.begin_run("stray", RunSpec(suite="cfg_bench", split="fau", agent="random", variant="base"),
                        {"suite": "cfg_bench", "split": "fau", "variant": "base"}, {})
        store.add_many([EpisodeRecord("stray", "base", "cfg_bench", "fau", f"q{i}", 0, task_type="FAU", success=bool(i % 2),
                                      values={"correct": float(i % 2), "unreadable": 0.0, "iou": 0.5})
                        for i in range(4)])
    return out


def _headers(browser) -> list[tuple[str, str]]:
    """(column, metric) of each header cell of the transfer table."""
    cells = browser.eval("""[...document.querySelectorAll('#transfer table.transfer thead th')].slice(1)
        .map(th => th.innerHTML.split('<br>').map(t => { const d = document.createElement('div');
          d.innerHTML = t; return d.textContent.trim(); }))""")
    return [(c[0], c[1]) for c in cells]


def test_each_column_shows_its_suites_metrics_and_notes_fold_under_their_table(three_suites, tmp_path):
    with opened_report(three_suites, tmp_path) as browser:
        headers = _headers(browser)
        shown: dict[str, set[str]] = {}
        for column, metric in headers:  # ("Acc (mean over task_type)": cfg_bench's cell is its mean over task types)
            shown.setdefault(column.split("/", 1)[0], set()).add(metric.removeprefix("Δ").split(" (", 1)[0])
        # the judged S and J stay, "–" until a judge scores their answers (never a column that vanishes)
        assert shown == {"cfg_bench": {"Acc", "S"}, "eb_alfred": {"SR", "GC"}, "procobject": {"mIoU", "J"}}, headers
        assert ("cfg_bench/all", "Acc (mean over task_type)") in headers, headers
        for suite, foreign in FOREIGN.items():
            assert not shown[suite] & foreign, (suite, headers)
        assert ("cfg_bench/fau", "Acc") in headers and ("cfg_bench/fau", "mIoU") not in headers
        assert browser.eval("document.querySelector('#transfer table.transfer caption').textContent").startswith(
            "Acc / S / SR / GC / mIoU / J per suite/split (%), Δ vs base")
        # Every table's notes: a closed <details> right under it, its list not drawn until opened.
        folds = browser.eval("""[...document.querySelectorAll('table')].filter(t => t.closest('section'))
            .map(t => { const d = t.nextElementSibling, c = d && (d.tagName === 'DETAILS' ? d.querySelector('ul, p') : d);
              return [t.className || t.id, d && d.tagName, d && d.classList.contains('notes'), d && d.open,
                      c && c.checkVisibility()]; })""")
        for name, tag, is_notes, is_open, drawn in folds:
            if tag is not None and is_notes:
                assert tag == "DETAILS" and is_open is False and drawn is False, (name, folds)
        assert {f[0] for f in folds if f[1] == "DETAILS"} >= {"transfer", "breakdown", "failure-table"}, folds
        summary = browser.eval("document.querySelector('#transfer details.notes > summary').textContent")
        assert summary.startswith("Notes (") and int(summary[len("Notes ("):-1]) >= 3, summary
        # The table comes right after its heading; the notes open on a click and say what the marks mean.
        assert browser.eval("document.querySelector('#transfer h2').nextElementSibling.tagName") == "TABLE"
        table_bottom = browser.eval("document.querySelector('#transfer table').getBoundingClientRect().bottom")
        fold_top = browser.eval("document.querySelector('#transfer details.notes').getBoundingClientRect().top")
        assert 0 <= fold_top - table_bottom < 30
        opened = browser.eval("""(() => { const d = document.querySelector('#transfer details.notes');
            d.querySelector('summary').click(); const ul = d.querySelector('ul');
            return [d.open, ul.checkVisibility(), ul.getBoundingClientRect().height, d.textContent]; })()""")
        assert opened[:2] == [True, True] and opened[2] > 20 and "part of the split only" in opened[3], opened
        # Per task type: one table per suite, each with that suite's metrics.
        captions = browser.eval("[...document.querySelectorAll('table.breakdown caption')].map(c => c.textContent)")
        assert captions == ["cfg_bench: Acc / S per task type (%)", "eb_alfred: SR / GC per task type (%)",
                            "procobject: mIoU per task type (%)"], captions
        browser.eval("document.querySelector('#transfer details.notes').open = false; 0")
        shot = browser.screenshot(tmp_path / "reads_first.png")
        assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("REPORT_SCREENSHOT_DIR"):
            shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOT_DIR"]) / "report_reads_first.png")
        print(f"screenshot: {shot}")
