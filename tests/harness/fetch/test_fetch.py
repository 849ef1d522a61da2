"""``harness fetch`` through the real huggingface_hub client against a local
server in the hub's HTTP layout (tests/harness/fetch/hub_mirror.py) that
serves a mirror of EmbodiedBench's EB-ALFRED data folder."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("huggingface_hub", reason="harness fetch needs the fetch extra: pip install -e '.[fetch]'")

from harness.cli import main  # noqa: E402
from harness.fetch import DATASETS, LOCK_FILE  # noqa: E402
from tests.harness.fetch.hub_mirror import HubMirror, MirrorRepo  # noqa: E402


@pytest.fixture
def mirror_src(data_dir, tmp_path):
    """The real EB-ALFRED data folder (splits, trajectories, examples), as the mirror's content."""
    src = tmp_path / "src"
    for sub in ("splits", "trajectories", "examples"):
        shutil.copytree(data_dir / sub, src / sub)
    return src


@pytest.fixture
def env(tmp_path, monkeypatch):
    root = tmp_path / "data-root"
    monkeypatch.setenv("EMBODIED_TRANSFER_DATA", str(root))
    monkeypatch.delenv("EB_ALFRED_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return root


def test_fetch_eb_alfred_then_suite_finds_it_offline(mirror_src, env, tmp_path, monkeypatch, capsys):
    repo = MirrorRepo(DATASETS["eb_alfred"].repo_id, mirror_src)
    assert any("lfs" in m for m in repo.files.values()) and any("lfs" not in m for m in repo.files.values())
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_alfred"]) == 0
        assert any(r.startswith("GET /datasets/EmbodiedBench/EB-ALFRED/resolve/") for r in hub.requests)
        folder = env / "eb_alfred"
        lock = json.loads((folder / LOCK_FILE).read_text())
        assert lock["commit"] == repo.commit and len(lock["files"]) == len(repo.files)
        assert (folder / "splits" / "splits.json").read_bytes() == (mirror_src / "splits" / "splits.json").read_bytes()
        # A second fetch checks locally and downloads nothing.
        n = len(hub.requests)
        assert main(["fetch", "eb_alfred"]) == 0
        assert len(hub.requests) == n and "nothing to fetch" in capsys.readouterr().err

        # A damaged file is detected and fetched again (resume of a partial folder).
        (folder / "splits" / "splits.json").write_text("{}")
        victim = next(p for p, m in repo.files.items() if "lfs" not in m and p != "splits/splits.json")
        (folder / victim).unlink()
        assert main(["fetch", "eb_alfred"]) == 0
        assert (folder / "splits" / "splits.json").read_bytes() == (mirror_src / "splits" / "splits.json").read_bytes()
        assert (folder / victim).is_file()

    # Hub gone: the suite reads the fetched folder with no data_dir and no network.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "runs"
    assert main(["run", "suite=eb_alfred", "split=base", "planner=oracle", "limit=5", f"out={out}",
                 "progress=false"]) == 0
    assert "5/5 succeeded" in capsys.readouterr().err


def test_hash_mismatch_is_refused_and_unreachable_hub_is_one_line(mirror_src, env, monkeypatch, capsys):
    repo = MirrorRepo(DATASETS["eb_alfred"].repo_id, mirror_src)
    bad = next(p for p, m in repo.files.items() if "lfs" in m)
    repo.corrupt.add(bad)
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_alfred"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "failed the check" in err and "Traceback" not in err
        assert not (env / "eb_alfred" / LOCK_FILE).exists() and not (env / "eb_alfred" / bad).exists()
    # No server at the endpoint: one line naming it.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    assert main(["fetch", "eb_alfred"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach" in err and url in err, err
    assert main(["fetch", "eb_alfredd"]) == 2
    assert "did you mean 'eb_alfred'" in capsys.readouterr().err
