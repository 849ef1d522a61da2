"""The joint experiment's report reads first: at 1280 x 800 its headline (each variant's
diagnostic and transfer figures with their Δ) is on the first screen with no horizontal
scroll, anywhere on that screen; the full table folds below it; the scatter charts' point
labels never overlap. Checked in a real headless Chromium (skipped without one, required
where REQUIRE_CHROMIUM=1) on the store tests/harness/tables/test_joint.py writes with real runs."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest

from harness.cli.entry import main
from harness.report.joint import _box, _overlaps, place_labels
from tests.harness.report.test_report import _browser_or_skip, _chromium, _open
from tests.harness.tables.test_joint import EXPERIMENT, _judge_reply, data, store  # noqa: F401 - the store's fixtures

WIDTH, HEIGHT = 1280, 800


def test_point_labels_are_placed_apart_even_where_points_coincide():
    points = [(150.0, 120.0, "FAVOR-SFT"), (150.0, 120.0, "CFG-SFT"), (152.0, 121.0, "Base"),
              (154.0, 118.0, "a-longer-variant-name"), (300.0, 60.0, "edge")]
    places = place_labels(points, 380, 250, top=34)
    boxes = [_box(x, y, anchor, text) for (x, y, anchor), (_, _, text) in zip(places, points)]
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlaps(a, b), (a, b)
    assert all(b[0] >= 0 and b[2] <= 380 and b[1] >= 34 and b[3] <= 250 for b in boxes), boxes


@pytest.fixture(scope="module")
def judged(store, tmp_path_factory):  # noqa: F811
    """The joint store judged by a loopback judge: every column of the experiment has values
    (CFG-Bench's S beside Acc, ProcObject's J beside mIoU), the widest its table gets."""
    from tests.envs.loopback_judge import serve

    out = tmp_path_factory.mktemp("judged") / "o"
    shutil.copytree(store, out)
    srv, url = serve(_judge_reply)
    try:
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    return out


def test_the_experiment_headline_fits_1280_wide_with_no_horizontal_scroll(judged, tmp_path):
    _browser_or_skip()  # before the work, not after it
    dest = tmp_path / "report" / "index.html"
    assert main(["report", str(judged), "--experiment", EXPERIMENT, "--dest", str(dest)]) == 0
    with _chromium(tmp_path) as browser:
        browser.send("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                     mobile=False)
        _open(browser, dest)
        assert browser.eval("document.documentElement.scrollWidth") <= WIDTH
        # nothing on the first screen scrolls sideways (a section's own scrollbar counts too)
        scrolling = browser.eval("""[...document.querySelectorAll('body *')].filter(e => {
            const r = e.getBoundingClientRect(), s = getComputedStyle(e);
            return r.top < innerHeight && r.bottom > 0 && ['auto', 'scroll'].includes(s.overflowX)
                && e.scrollWidth > e.clientWidth + 1; }).map(e => e.id || e.className || e.tagName)""")
        assert scrolling == [], scrolling
        head = browser.eval("""(() => { const t = document.querySelector('#experiment table.headline');
            const r = t.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom,
              [...t.querySelectorAll('thead th.role')].map(th => th.textContent),
              t.querySelectorAll('tbody tr').length, t.querySelectorAll('tbody td .delta').length]; })()""")
        left, right, top, bottom, roles, rows, deltas = head
        assert 0 <= left and right <= WIDTH and top < HEIGHT, head
        assert roles == ["diagnostic", "transfer"] and rows == 3 and deltas > 0, head
        # the full table (a Δ column beside each value, its notes) is folded below the headline
        folded = browser.eval("""(() => { const d = document.querySelector('#experiment details.full-table');
            return [d.open, d.querySelector('table.experiment') !== null,
                    d.getBoundingClientRect().top >= document.querySelector('#experiment table.headline')
                      .getBoundingClientRect().bottom]; })()""")
        assert folded == [False, True, True], folded
        # no two point labels of a chart overlap, nor leave their chart
        charts = browser.eval("""[...document.querySelectorAll('svg.chart.joint')].map(svg => {
            const w = svg.width.baseVal.value, h = svg.height.baseVal.value;
            return [...svg.querySelectorAll('text.point-label')].map(t => { const b = t.getBBox();
              return [b.x, b.y, b.x + b.width, b.y + b.height, w, h]; }); })""")
        assert charts and all(len(boxes) == 3 for boxes in charts), charts
        for boxes in charts:
            for a, b in itertools.combinations(boxes, 2):
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
            assert all(b[0] >= 0 and b[2] <= b[4] and b[3] <= b[5] for b in boxes), boxes
        if os.environ.get("REPORT_SCREENSHOT_DIR"):  # the first screen, as a reader sees it
            browser.eval("window.scrollTo(0, document.querySelector('#experiment').offsetTop); 0")
            shutil.copy(browser.screenshot(tmp_path / "experiment.png"),
                        Path(os.environ["REPORT_SCREENSHOT_DIR"]) / "report_experiment_1280.png")
