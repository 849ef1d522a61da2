"""``harness fetch cfg_bench`` / ``procobject`` through the real huggingface_hub client against a
local server in the hub's HTTP layout (tests/harness/registry/fetch/hub_mirror.py), serving stand-ins
built from the releases' documented layout (envs/cfg_bench/datasets.py,
envs/procobject/datasets.py say what is confirmed); the suites' readers then read the folder."""

from __future__ import annotations

import json
import socket

import pytest

pytest.importorskip("huggingface_hub", reason="harness fetch needs the fetch extra: pip install -e '.[fetch]'")

import harness.registry.datasets as fetch_mod  # noqa: E402
from envs.cfg_bench.data import load_captions, load_questions  # noqa: E402
from envs.cfg_bench.datasets import CFG_BENCH_DATASET  # noqa: E402
from envs.procobject.data import load_items  # noqa: E402
from envs.procobject.datasets import PROCOBJECT_DATASET  # noqa: E402
from harness.cli.entry import main  # noqa: E402
from tests.harness.registry.fetch.hub_mirror import HubMirror, MirrorRepo  # noqa: E402


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def env(tmp_path, monkeypatch):
    root = tmp_path / "data-root"
    monkeypatch.setenv("EMBODIED_TRANSFER_DATA", str(root))
    monkeypatch.setenv("HF_ENDPOINT", _dead_url())
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    # the datasets come from the suites' plugins (SuitePlugin.datasets), as for any suite
    return root


def _cfg_hub(folder, with_captions=True):
    folder.mkdir(parents=True)
    (folder / ".gitattributes").write_text("*.mp4 filter=lfs diff=lfs merge=lfs -text\n")
    (folder / "README.md").write_text("---\nlicense: cc-by-nc-sa-4.0\n---\n")
    (folder / "qa_pairs.json").write_text(json.dumps([
        {"video_name": "a.mp4", "question": "First?", "options": ["x", "y"], "correct_answer": "y", "task_type": "TR"},
        {"video_name": "b.mp4", "question": "Why?", "correct_answer": "Because.", "task_type": "FI"}]))
    if with_captions:
        (folder / "caption.json").write_text(json.dumps([{"video_name": "a.mp4", "caption": "cap a"}]))
    return folder


def test_fetch_cfg_bench_lays_out_what_the_reader_reads(env, tmp_path, monkeypatch, capsys):
    repo = MirrorRepo(CFG_BENCH_DATASET.repo_id, _cfg_hub(tmp_path / "hub-cfg"))
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "cfg_bench"]) == 0
    folder = env / "cfg_bench"
    assert (folder / fetch_mod.LOCK_FILE).is_file()
    assert [q.task_type for q in load_questions(folder)] == ["TR", "FI"]
    assert load_captions(folder) == {"a.mp4": "cap a"}
    assert fetch_mod.fetched_dir("cfg_bench") == folder


def test_a_release_without_captions_is_refused_with_one_line(env, tmp_path, monkeypatch, capsys):
    repo = MirrorRepo(CFG_BENCH_DATASET.repo_id, _cfg_hub(tmp_path / "hub-cfg", with_captions=False))
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "cfg_bench"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("harness: error:") and "caption.json" in err[-1]
    assert fetch_mod.fetched_dir("cfg_bench") is None  # no lock: not presented as complete


def test_fetch_procobject_lays_out_what_the_reader_reads(env, tmp_path, monkeypatch):
    hub_dir = tmp_path / "hub-proc"
    (hub_dir / "data").mkdir(parents=True)
    (hub_dir / "README.md").write_text("ProcObject-10K\n")
    rec = {"id": 2709, "video_path": "EgoPER/tea/x.mp4", "clip_start": 3.0, "clip_end": 59.7,
           "question": "How does the tea change?", "answer": "Heated, then stirred.",
           "evidence": [[0.0, 23.0], [31.0, 39.0]], "qa_type": "Precondition Grounding",
           "reasoning": "Multi-hop Reasoning", "source": "EgoPER", "domain": "Cooking & Food", "task": "Make Tea"}
    (hub_dir / "data" / "testing.json").write_text(json.dumps([rec]))
    with HubMirror([MirrorRepo(PROCOBJECT_DATASET.repo_id, hub_dir)]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "procobject"]) == 0
    items = load_items(env / "procobject")
    assert [(i.qid, i.type_key, i.pattern_key) for i in items] == [("2709", "preconditions", "multi_hop")]


def test_the_suites_read_what_fetch_laid_out(env, tmp_path, monkeypatch):
    """With no data_dir and no env var, each suite reads the folder `harness fetch` completed."""
    from envs.cfg_bench.suite import CFGBenchSuite

    monkeypatch.delenv("CFG_BENCH_DATA_DIR", raising=False)
    repo = MirrorRepo(CFG_BENCH_DATASET.repo_id, _cfg_hub(tmp_path / "hub-cfg"))
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "cfg_bench"]) == 0
    assert len(CFGBenchSuite().episodes("all")) == len(load_questions(fetch_mod.fetched_dir("cfg_bench")))
