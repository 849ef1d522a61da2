"""``harness fetch`` through the real huggingface_hub client against a local server in the hub's
HTTP layout (hub_mirror.py) serving stand-ins with the real datasets' file lists
(real_listings.py), and a local server in a git host's raw-file layout (git_raw_server.py)
or a local checkout for the files pinned to an EmbodiedBench commit."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

import pytest

pytest.importorskip("huggingface_hub", reason="harness fetch needs the fetch extra: pip install -e '.[fetch]'")

from harness.cli.entry import main  # noqa: E402
from harness.registry.datasets import DATASETS, GITHUB_RAW_ENV, LOCK_FILE, lock_files  # noqa: E402
from tests.harness.registry.fetch.git_raw_server import GitRawServer  # noqa: E402
from tests.harness.registry.fetch.hub_mirror import HubMirror, MirrorRepo  # noqa: E402
from tests.harness.registry.fetch.real_listings import build_tree, eb_alfred_listing, eb_manipulation_listing  # noqa: E402

ALFRED = DATASETS["eb_alfred"]
PIN = ALFRED.git.commit


def _dead_url() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _one_line(err: str) -> str:
    """The error: one line, the last on stderr (progress lines may come before it), no traceback."""
    lines = err.splitlines()
    assert lines and "Traceback" not in err, err
    assert [i for i, line in enumerate(lines) if line.startswith("harness: error:")] == [len(lines) - 1], err
    return lines[-1]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fresh data root; no real hub or git host is ever reached (both endpoints are dead
    loopback ports unless a test starts a server)."""
    root = tmp_path / "data-root"
    monkeypatch.setenv("EMBODIED_TRANSFER_DATA", str(root))
    monkeypatch.delenv("EB_ALFRED_DATA_DIR", raising=False)
    monkeypatch.delenv(ALFRED.git.checkout_env, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", _dead_url())
    monkeypatch.setenv(GITHUB_RAW_ENV, _dead_url())
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return root


@pytest.fixture
def alfred_hub(data_dir, tmp_path):
    """EmbodiedBench/EB-ALFRED as its real file list, the split's trajectory files read in place."""
    tree = build_tree(tmp_path / "hub-eb-alfred", eb_alfred_listing(), real=data_dir / "json_2.1.0")
    # JSON files are plain git blobs on the hub (not in its default LFS patterns).
    return MirrorRepo(ALFRED.repo_id, tree, lfs_threshold=1 << 40)


@pytest.fixture
def alfred_hub_slice(data_dir, tmp_path):
    """The first 40 files of EmbodiedBench/EB-ALFRED's real list (the tests of the git files need
    a hub, not all of it: a full download takes ~10 s)."""
    listing = dict(list(eb_alfred_listing().items())[:40])
    return MirrorRepo(ALFRED.repo_id, build_tree(tmp_path / "hub-eb-alfred", listing, real=data_dir / "json_2.1.0"),
                      lfs_threshold=1 << 40)


@pytest.fixture
def checkout(data_dir, tmp_path):
    """The EmbodiedBench files the dataset pins, at their paths in EmbodiedBench's repository
    (their content is the real data's: splits and examples equal b247936's)."""
    root = tmp_path / "EmbodiedBench"
    src = {"splits": data_dir / "splits", "examples": data_dir / "examples"}
    for f in ALFRED.git.files:
        folder, name = f.dest.split("/")
        (root / f.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src[folder] / name, root / f.path)
    return root


@pytest.fixture
def github(checkout):
    return GitRawServer(ALFRED.git.repo, PIN, checkout)


def test_fetch_eb_alfred_lays_out_the_real_listing_and_the_suite_reads_it(
        alfred_hub, github, env, tmp_path, monkeypatch, capsys):
    listing = eb_alfred_listing()
    assert len(alfred_hub.files) == len(listing) == 1269
    with HubMirror([alfred_hub]) as hub, github:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv(GITHUB_RAW_ENV, github.url)
        assert main(["fetch", "eb_alfred"]) == 0
        # The git files were asked for at the pinned commit, each once.
        assert sorted(github.requests) == sorted(f"/{ALFRED.git.repo}/{PIN}/{f.path}" for f in ALFRED.git.files)
        folder = env / "eb_alfred"
        for rel in listing:
            assert (folder / "json_2.1.0" / rel).is_file(), rel
        for f in ALFRED.git.files:
            assert (folder / f.dest).read_bytes() == (github.root / f.path).read_bytes()
        lock = json.loads((folder / LOCK_FILE).read_text())
        git, hub_src = lock["sources"]
        assert (git["kind"], git["repo"], git["commit"], git["via"]) == ("git", ALFRED.git.repo, PIN, github.url)
        assert {d: m["blob_sha1"] for d, m in git["files"].items()} == {f.dest: f.blob_sha1 for f in ALFRED.git.files}
        assert (hub_src["kind"], hub_src["repo_id"], hub_src["commit"]) == ("hub", ALFRED.repo_id, alfred_hub.commit)
        assert set(hub_src["files"]) == {f"json_2.1.0/{p}" for p in listing}
        assert all(m["blob_sha1"] for m in lock_files(lock).values())
        capsys.readouterr()
        # A second fetch checks locally and asks neither server anything.
        n_hub, n_git = len(hub.requests), len(github.requests)
        assert main(["fetch", "eb_alfred"]) == 0
        assert (len(hub.requests), len(github.requests)) == (n_hub, n_git)
        assert "nothing to fetch" in capsys.readouterr().err

        # Damaged files of either source are detected and fetched again.
        victim = next(p for p in hub_src["files"] if "/pp/" in p)
        (folder / "splits" / "splits.json").write_text("{}")
        (folder / victim).unlink()
        assert main(["fetch", "eb_alfred"]) == 0
        assert github.requests[n_git:] == [f"/{ALFRED.git.repo}/{PIN}/{ALFRED.git.files[0].path}"]
        assert (folder / "splits" / "splits.json").read_bytes() == (github.root / ALFRED.git.files[0].path).read_bytes()
        assert (folder / victim).is_file()

    # Both servers gone: the suite reads the fetched folder with no data_dir and no network.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from envs.eb_alfred.protocol import OFFICIAL_SPLITS
    from envs.eb_alfred.suite import EBAlfredSuite

    suite = EBAlfredSuite()
    assert suite.data_dir == folder
    assert {s: len(suite.episodes(s)) for s in OFFICIAL_SPLITS} == dict.fromkeys(OFFICIAL_SPLITS, 50)
    assert all(e.metadata["trajectory"].startswith("json_2.1.0/") for e in suite.episodes("base"))
    capsys.readouterr()
    run = ["run", "suite=eb_alfred", "split=base", "planner=oracle", f"out={tmp_path / 'runs'}", "progress=false"]
    assert main([*run, "limit=2"]) == 0
    assert "2 episodes run, 0 resumed; 2/2 succeeded" in capsys.readouterr().err
    assert main(run) == 0  # the rest of the split: 50 episodes in all
    assert "48 episodes run, 2 resumed" in (err := capsys.readouterr().err) and "50/50 done" in err, err


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_git_files_come_from_a_checkout_without_network(alfred_hub_slice, checkout, env, monkeypatch, how):
    args = ["fetch", "eb_alfred"]
    if how == "flag":
        args += ["--checkout", str(checkout)]
    else:
        monkeypatch.setenv(ALFRED.git.checkout_env, str(checkout))
    with HubMirror([alfred_hub_slice]) as hub:  # the git endpoint stays a dead port
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(args) == 0
    folder = env / "eb_alfred"
    git = json.loads((folder / LOCK_FILE).read_text())["sources"][0]
    assert git["commit"] == PIN and git["via"] == f"checkout {checkout} (not a git checkout)"
    for f in ALFRED.git.files:
        assert (folder / f.dest).read_bytes() == (checkout / f.path).read_bytes()


def test_unreachable_git_host_without_a_checkout_is_one_line_naming_both_ways(
        alfred_hub_slice, env, monkeypatch, capsys):
    with HubMirror([alfred_hub_slice]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_alfred"]) == 2
        assert hub.requests == []  # it fails before the large download
    err = _one_line(capsys.readouterr().err)
    dead = os.environ[GITHUB_RAW_ENV]
    assert "cannot reach" in err and dead in err and PIN[:12] in err
    assert "--checkout DIR" in err and f"${ALFRED.git.checkout_env}" in err and GITHUB_RAW_ENV in err
    assert not (env / "eb_alfred" / LOCK_FILE).exists()


def test_a_checkout_missing_a_file_is_one_line(checkout, env, capsys):
    gone = ALFRED.git.files[3].path
    (checkout / gone).unlink()
    assert main(["fetch", "eb_alfred", "--checkout", str(checkout)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"has no {gone}" in err and str(checkout) in err
    assert not (env / "eb_alfred" / LOCK_FILE).exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_a_checkout_at_another_commit_is_one_line_naming_both_commits(
        alfred_hub_slice, checkout, env, monkeypatch, capsys):
    def git(*args):
        return subprocess.run(["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "the pinned files")
    first = git("rev-parse", "HEAD")
    folder = env / "eb_alfred"
    with HubMirror([alfred_hub_slice]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        # Another commit holding the pinned files unchanged: taken, and the lock says which commit.
        assert main(["fetch", "eb_alfred", "--checkout", str(checkout)]) == 0
        git_src = json.loads((folder / LOCK_FILE).read_text())["sources"][0]
        assert git_src["commit"] == PIN and git_src["via"] == f"checkout {checkout} (at commit {first[:12]})"
        shutil.rmtree(folder)
        splits = checkout / ALFRED.git.files[0].path
        splits.write_text(splits.read_text().replace("50", "51", 1))
        git("commit", "-q", "-am", "moved on")
        head = git("rev-parse", "HEAD")
        capsys.readouterr()
        assert main(["fetch", "eb_alfred", "--checkout", str(checkout)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"at commit {head[:12]}" in err and f"check out {PIN}" in err and ALFRED.git.files[0].path in err
    assert not (folder / "splits" / "splits.json").exists() and not (folder / LOCK_FILE).exists()


def test_a_git_file_failing_its_hash_is_refused_then_fetched_on_rerun(
        alfred_hub_slice, github, env, monkeypatch, capsys):
    bad = ALFRED.git.files[1]
    github.corrupt.add(bad.path)
    with HubMirror([alfred_hub_slice]) as hub, github:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv(GITHUB_RAW_ENV, github.url)
        assert main(["fetch", "eb_alfred"]) == 2
        err = _one_line(capsys.readouterr().err)
        assert "git blob hash" in err and f"expected {bad.blob_sha1[:12]}" in err and bad.path in err
        folder = env / "eb_alfred"
        assert not (folder / bad.dest).exists() and not (folder / LOCK_FILE).exists()
        assert not list(folder.rglob("*.incomplete"))
        github.corrupt.clear()
        assert main(["fetch", "eb_alfred"]) == 0
        assert (folder / bad.dest).read_bytes() == (github.root / bad.path).read_bytes()


def test_an_interrupted_fetch_resumes_where_it_stopped(alfred_hub_slice, github, env, monkeypatch, capsys):
    stop = ALFRED.git.files[4]
    github.unavailable.add(stop.path)
    with HubMirror([alfred_hub_slice]) as hub, github:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv(GITHUB_RAW_ENV, github.url)
        assert main(["fetch", "eb_alfred"]) == 2
        assert "HTTP 503" in _one_line(capsys.readouterr().err)
        github.unavailable.clear()
        first = list(github.requests)
        assert main(["fetch", "eb_alfred"]) == 0
    # Each git file was downloaded once; only the one that failed was asked for twice.
    again = github.requests[len(first):]
    assert again == [f"/{ALFRED.git.repo}/{PIN}/{f.path}" for f in ALFRED.git.files[4:]]
    assert (env / "eb_alfred" / LOCK_FILE).is_file()


def test_fetch_eb_manipulation_takes_the_data_folder_as_the_coppelia_adapter_reads_it(env, tmp_path, monkeypatch):
    listing = eb_manipulation_listing()
    ds = DATASETS["eb_manipulation"]
    repo = MirrorRepo(ds.repo_id, build_tree(tmp_path / "hub-eb-man", listing), lfs_suffixes=(".pkl",))
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_manipulation"]) == 0
    folder = env / "eb_manipulation"
    data = {p for p in listing if p.startswith("data/")}
    assert len(data) == 688
    placed = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {p for p in placed if not p.startswith(".cache/")} - {LOCK_FILE} == data  # .cache: the hub client's
    pytest.importorskip("mujoco")
    from envs.eb_manipulation.coppelia import official_episodes

    counts = {s: len(official_episodes(folder / "data", s))
              for s in ("base", "common_sense", "complex", "spatial", "visual")}
    assert counts == {"base": 48, "common_sense": 48, "complex": 48, "spatial": 48, "visual": 36}


def test_a_lock_of_the_first_layout_is_read(env, tmp_path, monkeypatch, capsys):
    """A data folder fetched before the lock named its sources (one hub repository, top-level
    ``commit`` and ``files``) stays complete: it is checked locally, nothing fetched."""
    folder = env / "eb_manipulation"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "x.py").write_text("x\n")
    import hashlib

    blob = hashlib.sha1(b"blob 2\0x\n").hexdigest()
    (folder / LOCK_FILE).write_text(json.dumps({
        "dataset": "eb_manipulation", "repo_id": DATASETS["eb_manipulation"].repo_id, "repo_type": "dataset",
        "revision": "main", "commit": "c" * 40, "endpoint": None,
        "files": {"data/x.py": {"size": 2, "blob_sha1": blob}}}))
    assert main(["fetch", "eb_manipulation"]) == 0
    assert "nothing to fetch" in capsys.readouterr().err
    # A lock of another repository (the dataset's declaration changed) is not this dataset's.
    lock = json.loads((folder / LOCK_FILE).read_text())
    lock["repo_id"] = "EmbodiedBench/EB-Manipulation"
    (folder / LOCK_FILE).write_text(json.dumps(lock))
    assert main(["fetch", "eb_manipulation"]) == 2
    assert "cannot reach" in _one_line(capsys.readouterr().err)


def test_hash_mismatch_is_refused_and_unreachable_hub_is_one_line(env, tmp_path, monkeypatch, capsys):
    ds = DATASETS["eb_manipulation"]
    some = dict(list(eb_manipulation_listing().items())[:30])
    repo = MirrorRepo(ds.repo_id, build_tree(tmp_path / "hub-eb-man", some), lfs_suffixes=(".pkl",))
    bad = next(p for p, m in repo.files.items() if "lfs" in m)
    repo.corrupt.add(bad)
    with HubMirror([repo]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_manipulation"]) == 2
        err = _one_line(capsys.readouterr().err)
        assert "failed the check" in err
        assert not (env / "eb_manipulation" / LOCK_FILE).exists() and not (env / "eb_manipulation" / bad).exists()
    # No server at the endpoint: one line naming it.
    url = _dead_url()
    monkeypatch.setenv("HF_ENDPOINT", url)
    assert main(["fetch", "eb_manipulation"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "cannot reach" in err and url in err, err
    assert main(["fetch", "eb_alfredd"]) == 2
    assert "did you mean 'eb_alfred'" in capsys.readouterr().err
    assert main(["fetch", "eb_manipulation", "--checkout", str(tmp_path)]) == 2
    assert "takes no files from a git repository" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("escape", ["absolute", "dotdot", "nested-dotdot"])
def test_a_listing_naming_paths_outside_the_folder_is_refused_and_nothing_outside_is_touched(
        alfred_hub_slice, checkout, env, monkeypatch, capsys, tmp_path, escape):
    """Repro: a listing naming ``/abs/path`` or ``../x`` made ``verify(delete_bad=True)``
    unlink ``folder / "/abs/path"`` -- a file outside the data folder."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    hub_folder = env / "eb_alfred" / ALFRED.hub_dest
    hub_folder.mkdir(parents=True)
    rel = {"absolute": str(victim), "dotdot": "../../../victim.txt",
           "nested-dotdot": "look_at_obj_in_light-Statue-None-DeskLamp-216/../../../../victim.txt"}[escape]
    assert (hub_folder / rel).resolve() == victim.resolve()  # the path really reaches the victim
    alfred_hub_slice.files[rel] = {"size": 3, "oid": "0" * 40}  # a size that differs: the old code deleted it
    with HubMirror([alfred_hub_slice]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["fetch", "eb_alfred", "--checkout", str(checkout)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "outside" in err
    assert victim.read_text() == "precious"
    assert not (env / "eb_alfred" / LOCK_FILE).exists()


def test_verify_never_touches_a_path_outside_the_folder(tmp_path):
    from harness.registry.datasets import FetchError, verify

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "data").mkdir()
    for rel in (str(victim), "../victim.txt"):
        with pytest.raises(FetchError, match="outside"):
            verify(tmp_path / "data", {rel: {"size": 1}}, delete_bad=True)
    assert victim.read_text() == "precious"


def test_any_hub_client_error_is_one_line(env, monkeypatch, capsys):
    """An error the hub client raises that is not an HTTP error (here a malformed repo listing:
    ValueError/KeyError inside huggingface_hub) is one line and exit 2, not a traceback."""
    import huggingface_hub

    def broken(*a, **k):
        raise ValueError("Invalid response from server\nsecond line")

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", broken)
    assert main(["fetch", "eb_manipulation"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "Invalid response from server" in err


def test_a_data_root_under_a_regular_file_is_one_line(tmp_path, env, monkeypatch, capsys):
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("EMBODIED_TRANSFER_DATA", str(tmp_path / "a-file" / "data"))
    assert main(["fetch", "eb_alfred"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "cannot create the data folder" in err and "Not a directory" in err and "EMBODIED_TRANSFER_DATA" in err
    assert (tmp_path / "a-file").read_text() == "x"


def test_a_failed_fetch_leaves_no_folder_behind(tmp_path, env, capsys):
    """Both endpoints dead: the fetch fails before any file is placed and removes the folders it
    made (the data root included), so nothing looks like a started dataset."""
    assert main(["fetch", "eb_alfred"]) == 2
    assert "cannot reach" in _one_line(capsys.readouterr().err)
    assert not env.exists(), sorted(str(p) for p in env.rglob("*"))
    env.mkdir()  # a data root that was there before stays
    assert main(["fetch", "eb_alfred"]) == 2
    assert env.is_dir() and list(env.iterdir()) == []
