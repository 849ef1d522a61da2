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


@pytest.mark.parametrize("escape", ["absolute", "dotdot", "nested-dotdot"])
def test_a_listing_naming_paths_outside_the_folder_is_refused_and_nothing_outside_is_touched(
        mirror_src, env, monkeypatch, capsys, tmp_path, escape):
    """Repro: a listing naming ``/abs/path`` or ``../x`` made ``verify(delete_bad=True)``
    unlink ``folder / "/abs/path"`` -- a file outside the data folder."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (env / "eb_alfred").mkdir(parents=True)
    rel = {"absolute": str(victim), "dotdot": "../../victim.txt",
           "nested-dotdot": "splits/../../../victim.txt"}[escape]
    assert (env / "eb_alfred" / rel).resolve() == victim.resolve()  # the path really reaches the victim
    repo = MirrorRepo(DATASETS["eb_alfred"].repo_id, mirror_src)
    repo.files[rel] = {"size": 3, "oid": "0" * 40}  # a size that differs: the old code deleted it
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_alfred"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside" in err and "Traceback" not in err, err
    assert victim.read_text() == "precious"
    assert not (env / "eb_alfred" / LOCK_FILE).exists()


def test_verify_never_touches_a_path_outside_the_folder(tmp_path):
    from harness.fetch import FetchError, verify

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "data").mkdir()
    for rel in (str(victim), "../victim.txt"):
        with pytest.raises(FetchError, match="outside"):
            verify(tmp_path / "data", {rel: {"size": 1}}, delete_bad=True)
    assert victim.read_text() == "precious"


def test_any_hub_client_error_is_one_line(mirror_src, env, monkeypatch, capsys):
    """An error the hub client raises that is not an HTTP error (here a malformed repo listing:
    ValueError/KeyError inside huggingface_hub) is one line and exit 2, not a traceback."""
    import huggingface_hub

    def broken(*a, **k):
        raise ValueError("Invalid response from server\nsecond line")

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", broken)
    assert main(["fetch", "eb_alfred"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Invalid response from server" in err, err
