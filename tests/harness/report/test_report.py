"""``harness report``: a store built by real ``harness run`` of eb_alfred with three
variants -> a page and its on-demand detail files, checked as text and in a real
headless Chromium (console errors, tables, a chart, the episode filter, the
paired view, a screenshot); the frames, chat turns, cost and provenance of a run
whose agent reads images; H.264 videos that play; chart labels at six subsets;
the page's load time at 10,000 episodes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from harness.cli.entry import main
from harness.report.sections import episodes_for_power
from tests.harness.report.cdp import Browser, find_chromium

LIMIT = 16
VARIANTS = {  # variant label -> agent overrides (three variants on the same episodes)
    "base": ["planner=random"],
    "favor_sft": ["planner=random", "+planner.params.seed=1"],
    "cfg_sft": ["planner=oracle"],
}


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "runs"
    for name, agent in VARIANTS.items():
        rc = main(["run", *agent, f"variant.name={name}", "suite=eb_alfred", "split=seen", f"limit={LIMIT}",
                   f"out={out}", "progress=false", "record_prompts=true"])
        assert rc == 0
    return out


def _data(html_text: str) -> dict:
    """The page's embedded data, its column-wise episode summaries as one dict each (``episodes``)."""
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html_text, re.S)
    data = json.loads(m.group(1))
    data["episodes"] = [dict(zip(data["fields"], row)) for row in data["rows"]]
    return data


def _details(page: Path) -> dict[int, dict]:
    """Every episode's detail, read from the chunk files the page names (as the page's script does)."""
    data = _data(page.read_text(encoding="utf-8"))
    out = {}
    for f in sorted((page.parent / data["data"]).glob("episodes-*.js")):
        m = re.fullmatch(r"window\.__reportChunk\((\d+), (.*)\);\n", f.read_text(encoding="utf-8"), re.S)
        for d in json.loads(m.group(2)):
            out[d["id"]] = d
    return out


def _episodes(page: Path) -> list[dict]:
    """Summaries joined with their details (one dict per episode)."""
    details = _details(page)
    return [{**e, **details[e["id"]]} for e in _data(page.read_text(encoding="utf-8"))["episodes"]]


def _browser_or_skip() -> str:
    binary = find_chromium()
    if binary is None:
        reason = "Chromium not found (install Debian's `chromium`, as .ci/run does, or set CHROMIUM=/path)"
        if os.environ.get("REQUIRE_CHROMIUM") == "1":  # .ci/run: the browser test must not skip
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return binary


@contextlib.contextmanager
def _chromium(tmp_path: Path):
    """A headless Chromium (skipped when none is installed) listening to the page's runtime, log and load events."""
    browser = Browser(_browser_or_skip(), tmp_path / "profile")
    try:
        for domain in ("Runtime", "Log", "Page"):
            browser.send(f"{domain}.enable")
        yield browser
    finally:
        browser.close()


def _open(browser: Browser, page: Path, fragment: str = "") -> float:
    """Navigate to the page (a fresh load, with ``fragment`` in its URL when given) and wait
    until its script has drawn it; returns the seconds that took."""
    import time

    if fragment:  # from another document: a load, not a same-document fragment change
        browser.send("Page.navigate", url="about:blank")
    browser.events.clear()
    t0 = time.monotonic()
    browser.send("Page.navigate", url=page.resolve().as_uri() + fragment)
    ready = browser.eval("""new Promise((resolve) => { const t = () => { const r = document.body &&
        document.body.getAttribute('data-ready'); if (r) resolve(r); else setTimeout(t, 5); }; t(); })""")
    elapsed = time.monotonic() - t0
    assert ready == "1", browser.console_errors()
    return elapsed


def test_report_files_self_contained_and_atomic(store_dir, capsys):
    assert main(["report", str(store_dir)]) == 0
    path = store_dir / "report" / "index.html"
    text = path.read_text(encoding="utf-8")
    # No external resource: no http(s) URL in src/href, no CDN.
    assert not re.search(r'(src|href)="https?:', text)
    data = _data(text)
    assert data["baseline"] == "base" and set(data["variants"]) == set(VARIANTS)
    # The page holds summaries; the details sit in chunk files of one build folder, nothing else.
    build = path.parent / data["data"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["data", "index.html"]
    assert [p.name for p in (path.parent / "data").iterdir()] == [build.name]
    assert sorted(p.name for p in build.iterdir()) == ["episodes-0.js"]
    assert "history" not in data["episodes"][0] and "instruction" not in data["episodes"][0]
    eps = _episodes(path)
    assert len(eps) == 3 * LIMIT
    assert all(e["instruction"] for e in eps) and all(e["history"] for e in eps)
    oracle = [e for e in eps if e["variant"] == "cfg_sft"]
    assert all(e["success"] and e["failure"] == "success" for e in oracle)
    assert all(e["failure"] != "success" for e in eps if e["variant"] == "base")
    for section in ("transfer", "charts", "power", "task-types", "failures", "browser", "paired", "runs"):
        assert f'id="{section}"' in text
    assert "McNemar" in text and 'data-chart="sr"' in text and 'data-chart="failure"' in text
    # Regenerable: a second build gives the same episodes, and the first build's files are gone.
    assert main(["report", str(store_dir)]) == 0
    again = _data(path.read_text())
    assert again["data"] != data["data"] and not build.exists()
    assert [{k: v for k, v in e.items() if k != "id"} for e in _episodes(path)] == \
        [{k: v for k, v in e.items() if k != "id"} for e in eps]


def test_report_reads_a_schema1_store(store_dir, tmp_path):
    """An old store (no transcripts table, no history/task/instruction in extra) still reports."""
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(store_dir / "results.sqlite", old / "results.sqlite")
    db = sqlite3.connect(old / "results.sqlite")
    with db:
        db.execute("DROP TABLE transcripts")
        db.execute("ALTER TABLE episodes DROP COLUMN planner_output_errors")
        db.execute("ALTER TABLE episodes DROP COLUMN empty_plan")
        db.execute("ALTER TABLE episodes DROP COLUMN crc")  # schema-1 stores had no row checksums
        db.execute("UPDATE episodes SET extra='{}', schema_version=1")
        db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    db.close()
    assert main(["report", str(old)]) == 0
    eps = _episodes(old / "report" / "index.html")
    assert len(eps) == 3 * LIMIT
    # Instructions re-derived from the suite; no history: failures are 'no_history'.
    assert all(e["instruction"] for e in eps)
    assert {e["failure"] for e in eps if e["variant"] == "base"} <= {"no_history", "out_of_steps"}


def test_power_line_formula():
    # Fleiss eq. 4.14 (no continuity correction): 0.50 vs 0.55 at alpha .05, power .8 -> 1565 per arm.
    assert episodes_for_power(0.50) == 1565
    assert episodes_for_power(0.0) < episodes_for_power(0.2) < episodes_for_power(0.5)


@contextlib.contextmanager
def opened_report(store: Path, tmp_path: Path):
    """``harness report STORE`` opened in a headless Chromium (skipped without one), drawn without
    a console error."""
    _browser_or_skip()  # before the work, not after it
    assert main(["report", str(store)]) == 0
    with _chromium(tmp_path) as browser:
        _open(browser, (store / "report" / "index.html").resolve())
        assert browser.console_errors() == []
        yield browser


def test_report_in_headless_chromium(store_dir, tmp_path):
    with opened_report(store_dir, tmp_path) as browser:
        # Tables and a chart are present and drawn.
        assert browser.eval("document.querySelectorAll('table.transfer tbody tr').length") == 3
        assert browser.eval("document.querySelectorAll('table.breakdown tbody tr').length") >= 2
        assert browser.eval("document.querySelectorAll('svg[data-chart=sr] rect').length") >= 3
        assert browser.eval("document.querySelector('svg[data-chart=sr]').getBBox().width") > 100
        # The episode filter: success=true shows exactly the oracle variant's episodes.
        total = browser.eval("document.querySelectorAll('#episode-list li').length")
        assert total == 3 * LIMIT
        shown = browser.eval("""(() => { const s = document.getElementById('filter-success');
            s.value = 'true'; s.dispatchEvent(new Event('change'));
            return [...document.querySelectorAll('#episode-list li')].map(li => li.textContent); })()""")
        assert len(shown) == LIMIT and all(t.startswith("✓ cfg_sft") for t in shown)
        failed = browser.eval("""(() => { const s = document.getElementById('filter-success');
            s.value = 'false'; s.dispatchEvent(new Event('change'));
            const f = document.getElementById('filter-variant'); f.value = 'base'; f.dispatchEvent(new Event('change'));
            return document.querySelectorAll('#episode-list li').length; })()""")
        assert failed == LIMIT
        # Opening an episode loads its detail file and shows its instruction and step table.
        detail = browser.eval("""(async () => { const id = +document.querySelector('#episode-list li').dataset.id;
            const d = await window.report.show(id);
            return [d.textContent, d.querySelectorAll('table.hist tbody tr').length]; })()""")
        assert "Instruction:" in detail[0] and "(not recorded)" not in detail[0] and detail[1] >= 1
        # Paired view: base vs cfg_sft disagrees on every episode (oracle succeeds, random fails).
        pairs = browser.eval("""(async () => { const s = document.getElementById('pair-variant');
            s.value = 'cfg_sft'; await window.report.renderPairs();
            return [document.getElementById('pair-count').textContent, document.querySelectorAll('#pair-list .pair').length]; })()""")
        assert pairs[1] == LIMIT and f"{LIMIT} where base failed" in pairs[0]
        # Provenance: one block per run, with its commit and its resolved config.
        runs = browser.eval("[...document.querySelectorAll('#runs .run')].map(r => r.textContent)")
        assert len(runs) == 3 and all("commit" in r and "resolved config" in r and "numpy" in r for r in runs)
        browser.eval("document.getElementById('filter-variant').value=''; document.getElementById('filter-variant')"
                     ".dispatchEvent(new Event('change')); document.querySelector('#episode-list li').click(); 0")
        assert browser.console_errors() == []
        shot = browser.screenshot(tmp_path / "report.png")
        assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("REPORT_SCREENSHOT_DIR"):  # keep the artefact where CI or a user asks
            shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOT_DIR"]) / "report.png")
        print(f"screenshot: {shot}")


def test_episodes_have_links_search_and_labels_with_their_suite(store_dir, tmp_path):
    """Repro: the list read "cfg_sft · seen/003" (no suite), no episode had a link, and
    nothing searched. Now each label names the suite, ``#episode=<link>`` opens an episode
    on load and on a fragment change (a click on its link), and the search finds
    episodes by id and by instruction text."""
    _browser_or_skip()  # before the work, not after it
    assert main(["report", str(store_dir)]) == 0
    page = store_dir / "report" / "index.html"
    eps = _episodes(page)
    with _chromium(tmp_path) as browser:
        _open(browser, page)
        labels = browser.eval("[...document.querySelectorAll('#episode-list li a.ep-link')].map(a => a.textContent)")
        assert len(labels) == 3 * LIMIT and all(re.fullmatch(r"\w+ · eb_alfred/seen/\d{3}", t) for t in labels), labels
        # A link opens its episode when the page loads, even one the filters hid before.
        target = next(e for e in eps if e["variant"] == "favor_sft" and e["episode"] == "seen/005")
        link = browser.eval(f"window.report.eps[{target['id']}].link")
        assert link == "favor_sft:eb_alfred:seen:seen/005:" + str(target["seed"])
        _open(browser, page, "#episode=" + link)
        opened = browser.eval("""[document.querySelector('#episode-detail .episode').dataset.id,
            document.querySelector('#episode-detail h3').textContent, document.querySelector('#episode-list li.sel').dataset.id]""")
        assert opened[0] == opened[2] == str(target["id"]) and "favor_sft · eb_alfred/seen/005" in opened[1], opened
        assert target["instruction"] in browser.eval("document.getElementById('episode-detail').textContent")
        # A click on another episode's link changes the fragment, and the change opens it.
        other = next(e for e in eps if e["variant"] == "cfg_sft" and e["episode"] == "seen/002")
        clicked = browser.eval(f"""(async () => {{ const a = document.querySelector('#episode-list li[data-id="{other['id']}"] a');
            const changed = new Promise(r => window.addEventListener('hashchange', r, {{once: true}})); a.click(); await changed;
            await new Promise(r => setTimeout(r, 200));
            return [location.hash, document.querySelector('#episode-detail .episode').dataset.id]; }})()""")
        assert clicked == ["#episode=" + f"cfg_sft:eb_alfred:seen:seen/002:{other['seed']}", str(other["id"])], clicked
        # A hidden episode: the filters make way for the link.
        hidden = browser.eval(f"""(async () => {{ const s = document.getElementById('filter-variant'); s.value = 'base';
            s.dispatchEvent(new Event('change'));
            const changed = new Promise(r => window.addEventListener('hashchange', r, {{once: true}}));
            location.hash = 'episode=' + window.report.eps[{target['id']}].link; await changed;
            await new Promise(r => setTimeout(r, 200));
            return [s.value, document.querySelector('#episode-detail .episode').dataset.id]; }})()""")
        assert hidden == ["", str(target["id"])], hidden
        # Search by instruction text: the episodes with that instruction, nothing else.
        words = target["instruction"].split()
        query = " ".join(words[-3:]).lower()
        want = sorted(e["id"] for e in eps if query in e["instruction"].lower())
        assert 0 < len(want) < len(eps)
        search = """(async (q) => { const s = document.getElementById('search'); s.value = q; s.dispatchEvent(new Event('input'));
            await new Promise(r => setTimeout(r, 400));
            return [...document.querySelectorAll('#episode-list li')].map(li => +li.dataset.id).sort((a, b) => a - b); })"""
        assert browser.eval(f"{search}({json.dumps(query.upper())})") == want
        # ... and by episode id (all variants' runs of it), then cleared: everything again.
        assert browser.eval(f"{search}('seen/005')") == sorted(e["id"] for e in eps if e["episode"] == "seen/005")
        assert len(browser.eval(f"{search}('')")) == 3 * LIMIT
        # An unknown link says so.
        _open(browser, page, "#episode=nope:eb_alfred:seen:seen/999:0")
        assert "No episode nope:eb_alfred:seen:seen/999:0" in browser.eval("document.getElementById('episode-detail').textContent")
        assert browser.console_errors() == []


def test_video_artifacts_are_linked_relative_to_the_report(tmp_path):
    """A LIBERO-style record with extra['artifacts']['video'] gets a relative link
    from the report folder (the report and the store travel together)."""
    import pandas as pd

    from harness.report.episodes import episode_payload

    store_dir = tmp_path / "out"
    video = store_dir / "artifacts" / "run1" / "ep0.mp4"
    frame = pd.DataFrame([dict(run_id="run1", variant="base", suite="libero", split="spatial", episode_id="t0/0",
                               seed=0, task_type=None, success=True, termination="success", error_kind=None,
                               error_message=None, gc_satisfied=0, gc_total=0, steps=120, invalid_actions=0,
                               planner_output_errors=0, wall_time_s=1.5, extra={"artifacts": {"video": str(video)}})])
    (summary,), (ep,) = episode_payload(frame, ["success"], {}, {}, store_dir / "report", store_dir)
    assert ep["video"] == "../artifacts/run1/ep0.mp4" and ep["history"] == [] and ep["calls"] == []
    assert summary["video"] is True and summary["seconds"] == 1.5


def test_prompts_become_chat_turns():
    from harness.report.episodes import _messages

    chat = json.dumps([{"role": "system", "content": [{"type": "text", "text": "You are a robot.\nAct."}]},
                       {"role": "user", "content": [{"type": "image", "size": [500, 500]},
                                                    {"type": "text", "text": "Instruction: x"}]}])
    assert _messages(chat) == [
        {"role": "system", "parts": [{"type": "text", "text": "You are a robot.\nAct."}]},
        {"role": "user", "parts": [{"type": "image", "size": [500, 500]}, {"type": "text", "text": "Instruction: x"}]}]
    assert _messages("plain text prompt") == [{"role": "user", "parts": [{"type": "text", "text": "plain text prompt"}]}]
    assert _messages([{"role": "user", "content": "one string"}])[0]["parts"] == [{"type": "text", "text": "one string"}]
    assert _messages(None) is None and _messages(float("nan")) is None


class TalkingOracle:
    """The real oracle, answering as a model would: raw text, a chat prompt (system
    and user turns, the user turn with the frame), token counts per call; every
    third episode's first answer is unusable (an output-format error)."""

    reads_images = True

    def __init__(self, piece: int | None = None):
        from harness.registry.catalog import PLANNERS

        self.inner = PLANNERS.build("oracle", suite="eb_alfred")
        self.name, self.privileged = "talking_oracle", True
        self.calls: dict[str, int] = {}
        #: With ``piece``, the oracle's first plan is handed out ``piece`` actions per call.
        self.piece, self.plans = piece, {}

    def identity(self):
        return {"name": self.name, "checkpoint": {"sha256": "ab" * 32}, "adapter": {"sha256": "cd" * 32}}

    def reset(self, episode):
        self.inner.reset(episode)

    def act(self, requests):
        from harness.interfaces import AgentReply

        class Text(str):
            usage: dict

        out = []
        for req, plan in zip(requests, self.inner.act(requests)):
            n = self.calls.get(req.episode.episode_id, 0)
            self.calls[req.episode.episode_id] = n + 1
            if self.piece:
                rest = self.plans.setdefault(req.episode.episode_id, list(plan))
                plan = rest[:self.piece]
            image = (req.observation or {}).get("image")
            size = None if image is None else [int(x) for x in np.asarray(image).shape[1::-1]]
            prompt = [{"role": "system", "content": [{"type": "text", "text": "You plan for a household robot.\n"
                                                      "Answer with one action per line."}]},
                      {"role": "user", "content": ([{"type": "image", "size": size}] if size else [])
                       + [{"type": "text", "text": f"PROMPT for {req.episode.instruction}"}]}]
            if n == 0 and int(req.episode.episode_id.rpartition("/")[2]) % 3 == 0:
                raw, reply = Text("I think I should <garbled>"), None
                reply = AgentReply((), raw_output=raw, output_error="no JSON found", prompt=prompt)
            else:
                raw = Text("\n".join(map(str, plan)))
                reply = AgentReply(list(plan), raw_output=raw, prompt=prompt)
                if self.piece:
                    del self.plans[req.episode.episode_id][:self.piece]
            raw.usage = {"prompt_tokens": 900 + 10 * n, "output_tokens": len(raw.split())}
            out.append(reply)
        return out


@pytest.fixture(scope="module")
def talker_dir(tmp_path_factory) -> Path:
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec

    out = tmp_path_factory.mktemp("talk") / "t"
    spec = RunSpec(suite="eb_alfred", split="seen", agent="oracle", variant="talker", limit=6, record_prompts=True,
                   record_images=True)
    agent = TalkingOracle(piece=3)  # a call every third step: the frames show the agent moving
    with ResultStore(out) as store:
        Runner(spec, EBAlfredSuite(render=True), agent, store, provenance={
            "time": "now", "git": {"commit": "f" * 40, "dirty": True}, "packages": {"numpy": "2"},
            "config": {"planner": {"name": "vlm"}}}).run()
    assert main(["report", str(out)]) == 0
    return out


def test_transcripts_prompts_frames_and_cost_reach_the_page(talker_dir):
    page = talker_dir / "report" / "index.html"
    eps = {e["episode"]: e for e in _episodes(page)}
    first = eps["seen/000"]
    call = first["calls"][0]
    assert call["error"] == "no JSON found" and call["raw"].startswith("I think")
    assert [m["role"] for m in call["messages"]] == ["system", "user"]
    assert call["messages"][1]["parts"][1]["text"].startswith("PROMPT for ") and len(first["calls"]) >= 2
    assert first["output_errors"] == 1 and first["success"]
    # The frame the model saw, as a file of the store linked from the report folder.
    (image,) = call["images"]
    assert image["src"].startswith("../artifacts/frames/") and (page.parent / image["src"]).is_file()
    assert call["messages"][1]["parts"][0] == {"type": "image", "size": image["size"]}
    # Cost per call and per episode.
    assert call["prompt_tokens"] == 900 and call["latency_s"] >= 0
    assert first["tokens"][0] == sum(c["prompt_tokens"] for c in first["calls"])
    text = page.read_text()
    assert 'id="cost-table"' in text and '<tr data-variant="talker"><th>talker</th><td>6</td>' in text
    # Provenance: the agent's checkpoint and adapter hashes, commit and dirty flag.
    assert "agent.checkpoint.sha256" in text and "ab" * 32 in text and "agent.adapter.sha256" in text
    assert "f" * 12 in text and 'class="dirty"' in text


def test_episode_view_in_chromium_shows_frames_chat_and_answer(talker_dir, tmp_path):
    _browser_or_skip()  # before the work, not after it
    with _chromium(tmp_path) as browser:
        _open(browser, talker_dir / "report" / "index.html")
        view = browser.eval("""(async () => { const d = await window.report.show(0);
            d.scrollIntoView();
            const imgs = [...d.querySelectorAll('.call[open] img')];
            await Promise.all(imgs.map(i => i.complete ? 0 : new Promise(r => { i.onload = r; i.onerror = r; })));
            return {loaded: imgs.map(i => i.naturalWidth), roles: [...d.querySelectorAll('.call[open] .turn .role')]
                .map(r => r.textContent), answer: d.querySelector('.call[open] .turn.answer .text').textContent,
                cost: d.querySelector('.call[open] summary .cost').textContent}; })()""")
        assert view["loaded"] and all(w > 0 for w in view["loaded"])  # frames decoded by the browser
        assert view["roles"] == ["system", "user", "answer (raw model output)"]
        assert view["answer"].startswith("I think") and "900 prompt" in view["cost"]
        assert browser.console_errors() == []
        # The view the docs show (docs/report_episodes.png): a later call, open, at the top of the window.
        browser.eval("""(() => { const d = document.getElementById('episode-detail');
            for (const c of d.querySelectorAll('.call')) c.open = false;
            const c = d.querySelectorAll('.call')[2]; c.open = true;
            for (const h of d.querySelectorAll('h4')) if (h.textContent.startsWith('Agent calls')) h.scrollIntoView();
            return 0; })()""")
        browser.eval("new Promise(r => setTimeout(r, 300))")
        shot = browser.screenshot(tmp_path / "episode.png")
        if os.environ.get("REPORT_SCREENSHOT_DIR"):
            shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOT_DIR"]) / "report_episodes.png")


EB_ALFRED_SUBSETS = ("base", "common_sense", "complex_instruction", "spatial", "visual_appearance", "long_horizon")


def _write_videos(store: Path) -> dict[str, str]:
    """An H.264 video through harness.run.video and, for contrast, OpenCV's mp4v (MPEG-4 Part 2)."""
    try:
        import av  # noqa: F401 - the libero extra's encoder
    except ImportError:
        return {}
    from harness.run.video import write_mp4

    frames = []
    for i in range(40):
        f = np.full((128, 256, 3), 40, np.uint8)
        f[40:88, 4 * i:4 * i + 48] = (230, 120, 20)
        frames.append(f)
    out = {"h264": str(write_mp4(store / "artifacts" / "r" / "videos" / "h264.mp4", frames, 20))}
    try:
        import cv2
    except ImportError:
        return out
    path = store / "artifacts" / "r" / "videos" / "mp4v.mp4"
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 20, (256, 128))
    for f in frames:
        w.write(f)
    w.release()
    out["mp4v"] = str(path)
    return out


def _quads_overlap(a: list, b: list) -> bool:
    """Whether two convex quadrilaterals (screen corners) intersect (separating axis theorem)."""
    for quad in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = quad[i], quad[(i + 1) % 4]
            nx, ny = y1 - y2, x2 - x1
            pa = [nx * x + ny * y for x, y in a]
            pb = [nx * x + ny * y for x, y in b]
            if max(pa) <= min(pb) + 1e-6 or max(pb) <= min(pa) + 1e-6:
                return False
    return True


def test_charts_legible_at_six_subsets_and_videos_play(tmp_path, data_dir, branches):
    """The SR chart's x labels do not overlap with EB-ALFRED's six
    subsets (bounding boxes measured in Chromium). The report's
    <video> of an H.264 file plays (readyState, duration); an mp4v file does not."""
    from harness.store import ResultStore
    from harness.types import EpisodeRecord, RunSpec

    _browser_or_skip()  # before the work, not after it
    out = tmp_path / "six"
    splits = ",".join(EB_ALFRED_SUBSETS)
    assert main(["run", "-m", "planner=random,oracle", f"split={splits}", "limit=2", f"out={out}",
                 f"suite.params.data_dir={data_dir}", "progress=false"]) == 0
    videos = _write_videos(out)
    with ResultStore(out) as store:
        store.begin_run("r", RunSpec(suite="libero", split="spatial", agent="oracle", variant="oracle"),
                        {"suite": "libero"}, {})
        store.add_many([EpisodeRecord("r", "oracle", "libero", "spatial", f"t0/{name}", 0, success=True, steps=40,
                                      extra={"artifacts": {"video": path}}) for name, path in videos.items()])
    assert main(["report", str(out)]) == 0
    with _chromium(tmp_path) as browser:
        _open(browser, out / "report" / "index.html")
        # Each label's outline on screen: its box in its own (rotated) coordinates, through its screen CTM.
        boxes = browser.eval("""[...document.querySelectorAll('svg[data-chart=sr]')].map(svg =>
            [...svg.querySelectorAll('text.xlabel')].map(t => { const b = t.getBBox(), m = t.getScreenCTM();
              return [t.childNodes[0].textContent, [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
                [b.x, b.y + b.height]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f])]; }))""")
        eb = next(b for b in boxes if len(b) == 6)
        assert [b[0] for b in eb] == sorted(EB_ALFRED_SUBSETS)
        for i, (name_a, a) in enumerate(eb):
            for name_b, b in eb[i + 1:]:
                assert not _quads_overlap(a, b), (name_a, name_b, a, b)
        svg = browser.eval("""(() => { const s = document.querySelector('svg[data-chart=sr]').getBoundingClientRect();
            return [s.left, s.right, s.top, s.bottom]; })()""")
        assert all(svg[0] <= x <= svg[1] and svg[2] <= y <= svg[3] for _, q in eb for x, y in q)  # inside the chart
        if os.environ.get("REPORT_SCREENSHOT_DIR"):  # docs/report_overview.png: table and charts
            browser.eval("document.getElementById('transfer').scrollIntoView(); 0")
            shutil.copy(browser.screenshot(tmp_path / "overview.png"),
                        Path(os.environ["REPORT_SCREENSHOT_DIR"]) / "report_overview.png")
        states = {}
        for e in browser.eval("window.report.eps.filter(e => e.video).map(e => [e.id, e.episode])"):
            states[e[1].split("/")[1]] = _play_video(browser, e[0])
        if not videos:
            pytest.skip("PyAV not installed (the libero extra): no video to play")
        h264 = states["h264"]
        assert h264["result"] == "loaded" and h264["readyState"] >= 2 and h264["played"], h264
        assert abs(h264["duration"] - 40 / 20) < 0.1
        if "mp4v" in videos:
            assert states["mp4v"]["result"] == "error" and states["mp4v"]["readyState"] == 0, states["mp4v"]
        else:
            branches.skip("the mp4v video that does not play", "OpenCV (opencv-python, the libero extra) is not installed")


def _play_video(browser: Browser, episode: int) -> dict:
    """Open an episode in the page, load its <video> and play it for 0.3 s: how it went."""
    return browser.eval(f"""(async () => {{ const d = await window.report.show({episode});
        const v = d.querySelector('video'); v.muted = true;
        const r = await new Promise(res => {{ v.addEventListener('loadeddata', () => res('loaded'));
          v.addEventListener('error', () => res('error')); setTimeout(() => res('timeout'), 10000); v.load(); }});
        let played = false; if (r === 'loaded') {{ await v.play(); await new Promise(s => setTimeout(s, 300));
          played = v.currentTime > 0; v.pause(); }}
        return {{result: r, readyState: v.readyState, duration: v.duration, played, src: v.getAttribute('src')}}; }})()""")


def _require_libero() -> None:
    import importlib

    try:
        importlib.import_module("libero.libero")
        importlib.import_module("av")
    except ImportError as exc:
        reason = f"LIBERO or PyAV not installed (the libero extra): {exc}"
        if os.environ.get("REQUIRE_LIBERO") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.mark.slow  # 15-25 s: a LIBERO scene loads, renders 5 steps and encodes them
@pytest.mark.ci
def test_libero_video_plays_from_a_store_made_with_a_relative_out(tmp_path):
    """Repro: with ``out=vid`` (every example in the docs) the record kept the video as
    ``vid/artifacts/...`` (relative to the working directory), the report linked
    ``../vid/artifacts/...`` and the browser found nothing. Now the record keeps it
    relative to the store's folder; the report's <video> loads and plays."""
    import subprocess
    import sys

    _require_libero()
    _browser_or_skip()  # before the work, not after it
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    run = subprocess.run([sys.executable, "-m", "harness.cli", "run", "suite=libero", "split=libero_spatial",
                          "policy=zero", "limit=1", "suite.params.max_steps=5", "suite.params.video=all",
                          "out=vid", "progress=false"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    (extra,) = [json.loads(e) for (e,) in sqlite3.connect(work / "vid" / "results.sqlite").execute(
        "SELECT extra FROM episodes")]
    video = extra["artifacts"]["video"]
    assert video.startswith("artifacts/") and video.endswith(".mp4"), video  # relative to the store's folder
    # The executed actions, per step (LIBERO's 7-D end-effector delta and gripper), rounded.
    assert len(extra["actions"]) == 5 and all(len(a) == 7 for a in extra["actions"]), extra.get("actions")
    assert (work / "vid" / video).is_file()
    report = subprocess.run([sys.executable, "-m", "harness.cli", "report", "vid"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    with _chromium(tmp_path) as browser:
        _open(browser, work / "vid" / "report" / "index.html")
        state = _play_video(browser, 0)
        rows = browser.eval("[...document.querySelectorAll('#episode-detail table.actions tbody tr')].map(r => "
                            "r.querySelector('td.vec').textContent.trim().split(/ +/).map(Number))")
        assert browser.console_errors() == []
    assert rows == extra["actions"]  # the detail shows each step's action
    assert state["src"] == "../" + video
    assert state["result"] == "loaded" and state["readyState"] >= 2 and state["played"], state


def test_video_links_of_stores_written_before_store_relative_paths(tmp_path, monkeypatch):
    """A store written before artifact paths were kept relative to it holds
    ``<out>/artifacts/...`` (relative to the run's working directory): the report still
    links the file, from the store's folder, whatever the working directory is now."""
    import pandas as pd

    from harness.report.episodes import episode_payload

    store_dir = tmp_path / "vid"
    (store_dir / "artifacts" / "r1" / "videos").mkdir(parents=True)
    (store_dir / "artifacts" / "r1" / "videos" / "e.mp4").write_bytes(b"")
    rows = [dict(run_id="r1", variant="base", suite="libero", split="spatial", episode_id=f"t0/{i}", seed=0,
                 success=False, steps=5, extra={"artifacts": {"video": path}}) for i, path in enumerate(
        ["vid/artifacts/r1/videos/e.mp4", "artifacts/r1/videos/e.mp4", "elsewhere/artifacts/r1/videos/e.mp4"])]
    monkeypatch.chdir(tmp_path / "vid")  # not the run's working directory
    _, details = episode_payload(pd.DataFrame(rows), ["x"] * 3, {}, {}, store_dir / "report", store_dir)
    assert [d["video"] for d in details] == ["../artifacts/r1/videos/e.mp4"] * 3


def _big_store(out: Path, n: int) -> None:
    """n episodes of eb_alfred-shaped records (two variants, real instructions and
    action strings), each with a 10-step history and two agent calls whose chat
    prompts are ~2 KB: the size of page first measured, scaled to n."""
    from harness.store import ResultStore
    from harness.types import EpisodeRecord, RunSpec

    rng = np.random.default_rng(0)
    system = "You plan for a household robot. " * 60
    with ResultStore(out) as store:
        for variant in ("base", "cfg_sft"):
            store.begin_run(variant, RunSpec(suite="eb_alfred", split="base", agent="vlm", variant=variant),
                            {"suite": "eb_alfred", "variant": variant}, {"git": {"commit": "0" * 40, "dirty": False}})
        items = []
        for i in range(n):
            variant = ("base", "cfg_sft")[i % 2]
            ok = bool(rng.random() < (0.3 if variant == "base" else 0.45))
            history = [[f"find a Object{j}", "Last action executed successfully."] for j in range(10)]
            rec = EpisodeRecord(variant, variant, "eb_alfred", "base", f"base/{i // 2:05d}", 0, "pick_and_place_simple",
                                success=ok, gc_satisfied=int(ok), gc_total=1, steps=10, wall_time_s=3.0,
                                termination="success" if ok else "max_steps",
                                extra={"history": history, "instruction": f"Put a washed apple in the fridge ({i}).",
                                       "task": {"object_target": "Apple", "parent_target": "Fridge"}})
            calls = [{"call": c, "step": 5 * c, "raw_output": '{"executable_plan": []} ' * 20, "actions": 5,
                      "prompt": json.dumps([{"role": "system", "content": [{"type": "text", "text": system}]},
                                            {"role": "user", "content": [{"type": "text", "text": f"Step {c}"}]}]),
                      "latency_s": 1.2, "batch": 8, "prompt_tokens": 2500, "output_tokens": 120} for c in range(2)]
            items.append((rec, calls))
        for k in range(0, n, 1000):
            store.add_many(items[k:k + 1000])


@pytest.mark.slow  # ~45 s on a shared 2-core machine, most of it the paired bootstrap of 5,000 pairs
def test_page_load_time_at_10000_episodes(tmp_path):
    """The page stays light and fast at 10,000 episodes; the heavy
    parts (histories, prompts, answers) load only when an episode is opened."""
    import time

    n = 10_000
    out = tmp_path / "big"
    _big_store(out, n)
    t0 = time.monotonic()
    assert main(["report", str(out)]) == 0
    build_s = time.monotonic() - t0
    page = out / "report" / "index.html"
    page_mb = page.stat().st_size / 2**20
    data = _data(page.read_text())
    chunks = list((page.parent / data["data"]).glob("episodes-*.js"))
    heavy_mb = sum(f.stat().st_size for f in chunks) / 2**20
    assert len(data["episodes"]) == n and len(chunks) == n // 50
    _browser_or_skip()  # before the work, not after it
    with _chromium(tmp_path) as browser:
        load_s = min(_open(browser, page) for _ in range(2))  # the better of two loads (a shared machine)
        rows = browser.eval("document.querySelectorAll('#episode-list li').length")
        t1 = time.monotonic()
        opened = browser.eval("(async () => (await window.report.show(9999)).querySelectorAll('.call').length)()")
        open_s = time.monotonic() - t1
        assert browser.console_errors() == []
    print(f"10,000 episodes: page {page_mb:.2f} MiB, details {heavy_mb:.1f} MiB in {len(chunks)} files, "
          f"build {build_s:.1f} s, load {load_s:.2f} s, open one episode {open_s:.3f} s")
    assert rows == 100 and opened == 2  # one page of the list; the opened episode's two calls
    assert page_mb < 2.5 and heavy_mb > 10 * page_mb  # the heavy parts are not on the page
    assert load_s < 5.0 and open_s < 2.0


def test_report_reads_several_stores_as_one(tmp_path, capsys):
    """`harness report A B`: base run in store a, the SFT variants in b (and base copied into b
    too): one page, the copied run's episodes once (3 variants x 8 = 24, not 32), both stores
    named; a different identity for the same cell in a third store is refused in one line, and
    --run picks it. The same store-reading rules as `harness table A B`."""
    from harness.types import EpisodeRecord
    from tests.harness.tables.test_table_selection import two_suites, write_store

    recs = two_suites()
    write_store(tmp_path / "a", [r for r in recs if r.variant == "base"])
    write_store(tmp_path / "b", [r for r in recs if r.variant != "base"])
    write_store(tmp_path / "b", [r for r in recs if r.variant == "base"])
    dest = tmp_path / "page" / "index.html"
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--dest", str(dest)]) == 0
    page = dest.read_text(encoding="utf-8")
    assert " · 24 episodes · variants base, cfg_sft, favor_sft" in page
    assert f"{tmp_path / 'a' / 'results.sqlite'} + {tmp_path / 'b' / 'results.sqlite'}" in page
    other = [EpisodeRecord("base-s1-new", "base", "s1", "a", f"e{i}", 0, success=True, gc_satisfied=1, gc_total=1)
             for i in range(4)]
    write_store(tmp_path / "c", other, identity={"checkpoint": "new"})
    capsys.readouterr()
    dest2 = tmp_path / "page2" / "index.html"
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "c"), "--dest", str(dest2)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "was run with different identities" in err and not dest2.exists()
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "c"), "--run", "base-s1-n", "--dest", str(dest2)]) == 0
    assert " · 8 episodes · variants base" in dest2.read_text(encoding="utf-8")  # the picked run + base on s2
