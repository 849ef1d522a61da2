"""``harness fetch DATASET``: official benchmark data, laid out as the suites read it, once.

Sources. A dataset (:class:`Dataset`, declared by a suite on its plugin;
:data:`DATASETS` collects them) takes files from up to two places:

- a model-hub repository, through ``huggingface_hub`` (``snapshot_download``:
  parallel, resumable ``.incomplete`` files, the endpoint from ``HF_ENDPOINT``),
  placed under ``<dataset>/<hub_dest>/`` exactly as the repository holds them;
- named files of a git repository at one pinned commit (:class:`GitFiles`), each
  with its git blob SHA-1 declared beside it, placed at its own path in the
  dataset folder. They come from the repository's raw-file endpoint
  (``<endpoint>/<owner>/<name>/<commit>/<path>``; ``$EMBODIED_TRANSFER_GITHUB_RAW``
  names another endpoint) or, with no network, from a local checkout
  (``--checkout DIR`` or the environment variable the declaration names).

Everything lands in ``<data root>/<dataset>/``, where suites look by default
(:func:`dataset_dir`). The data root is ``$EMBODIED_TRANSFER_DATA``, else
``$XDG_CACHE_HOME/embodied-transfer/data`` (``~/.cache/...``).

Pinning. The git files are pinned by their declaration (commit and blob hashes).
The hub repository may be pinned too; otherwise the first fetch resolves the
branch to a commit. Both are written, with every file's path, size and hash, to
``<dataset>/.fetch.json`` (one record per source); later fetches use the locked
hub commit (``--revision`` replaces it, ``--update`` re-resolves the branch), so
a data folder is always exactly the same bytes.

Checks. Every hub file is checked against the hub's tree listing (its size, and
its SHA-256 for LFS files or git blob SHA-1 for others), every git file against
its declared blob hash. A mismatch deletes that file and fails with one line;
rerunning fetches it again. A file already in place and intact is never fetched
again, so rerunning after an interruption resumes; the lock file is written last,
only for a complete folder.

Offline. Once fetched, suites read the folder with no network; ``harness fetch``
on a complete folder re-checks it locally and says so. An unreachable hub or git
endpoint fails with one line naming it (and, for the git files, both ways round
it); nothing partial is presented as complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.registry.catalog import SUITES, Collected

#: Environment variable naming the data root.
DATA_ROOT_ENV = "EMBODIED_TRANSFER_DATA"
#: The lock file beside the data: every source with its commit, and every file with its size and hash.
LOCK_FILE = ".fetch.json"
#: The lock file's layout (1: one hub repository, no ``sources``; read and upgraded).
LOCK_FORMAT = 2
#: Environment variable naming the git raw-file endpoint (``<endpoint>/<owner>/<name>/<commit>/<path>``).
GITHUB_RAW_ENV = "EMBODIED_TRANSFER_GITHUB_RAW"
GITHUB_RAW_DEFAULT = "https://raw.githubusercontent.com"
#: Seconds a git raw-file request may wait for the endpoint.
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class GitFile:
    """One file a dataset takes from a git repository."""

    #: Its path in the repository.
    path: str
    #: Its git blob SHA-1 at the pinned commit (``git rev-parse COMMIT:PATH``).
    blob_sha1: str
    #: Its path in the dataset folder.
    dest: str


@dataclass(frozen=True)
class GitFiles:
    """Files of a git repository at one pinned commit, fetched from its raw-file endpoint
    or read from a local checkout; each is checked against its declared blob hash."""

    #: ``owner/name`` on the git host.
    repo: str
    #: The full commit hash the files are pinned to.
    commit: str
    files: tuple[GitFile, ...]
    #: Environment variable naming a local checkout (``harness fetch --checkout`` wins), or "".
    checkout_env: str = ""


@dataclass(frozen=True)
class Dataset:
    name: str
    repo_id: str
    repo_type: str = "dataset"
    #: Branch or tag to resolve on first fetch, or a commit hash to pin outright.
    revision: str = "main"
    allow_patterns: tuple[str, ...] | None = None
    #: Files the suite needs (paths in the dataset folder); a fetch without them is refused with the reason.
    required: tuple[str, ...] = ()
    description: str = ""
    #: Subfolder of the dataset folder the hub repository's files are placed in ("": the folder itself).
    hub_dest: str = ""
    #: Files from a git repository at a pinned commit, placed beside the hub's.
    git: GitFiles | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _suite_datasets() -> dict[str, Dataset]:
    out: dict[str, Dataset] = {}
    for plugin in SUITES.entries():
        for ds in getattr(plugin, "datasets", ()):
            if ds.name in out:
                raise ValueError(f"dataset {ds.name!r} is declared by two suites")
            out[ds.name] = ds
    return out


#: Every fetchable dataset, by name: those each suite declares (``SuitePlugin.datasets``),
#: collected on first use.
DATASETS: Mapping[str, Dataset] = Collected(_suite_datasets)


class FetchError(RuntimeError):
    """One-line failure of a fetch (the CLI prints it, exit status 2)."""


def data_root() -> Path:
    env = os.environ.get(DATA_ROOT_ENV)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "embodied-transfer" / "data"


def dataset_dir(name: str) -> Path:
    """Where ``harness fetch NAME`` puts its data (it may not exist yet)."""
    return data_root() / name


def fetched_dir(name: str) -> Path | None:
    """The data folder of a completed fetch of NAME, else None (suites' default lookup)."""
    path = dataset_dir(name)
    return path if (path / LOCK_FILE).is_file() else None


def _git_blob_sha1(path: Path) -> str:
    h = hashlib.sha1()
    h.update(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def inside(folder: Path, rel: str) -> Path:
    """``folder / rel``, or FetchError when ``rel`` (from a hub listing, a declaration or a
    lock file) would name anything outside ``folder``: an absolute path, a drive, a ``..``
    segment, a backslash, or a symlink inside ``folder`` that leads out of it."""
    parts = rel.split("/")
    if (not rel or rel.startswith("/") or "\\" in rel or "\0" in rel or ":" in parts[0]
            or any(p in ("", ".", "..") for p in parts)):
        raise FetchError(f"refusing the file {rel[:200]!r} named by the listing: it is outside the data "
                         f"folder {folder} (absolute, '..' or empty segments)")
    path = folder / rel
    root = folder.resolve()
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise FetchError(f"refusing the file {rel[:200]!r}: it resolves to {resolved}, outside the data folder {folder}")
    return path


def verify(folder: Path, files: dict[str, dict[str, Any]], *, delete_bad: bool = False) -> list[str]:
    """Problems of ``folder`` against the expected ``files`` (path -> size, sha256 | blob_sha1).

    Every path is checked by :func:`inside` first: nothing outside ``folder`` is read or deleted.
    """
    for rel in files:
        inside(folder, rel)
    problems = []
    for rel, meta in sorted(files.items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        size = path.stat().st_size
        if size != meta["size"]:
            problems.append(f"{rel}: {size} bytes, expected {meta['size']}")
        elif meta.get("sha256") and _sha256(path) != meta["sha256"]:
            problems.append(f"{rel}: SHA-256 differs from the source's")
        elif not meta.get("sha256") and meta.get("blob_sha1") and _git_blob_sha1(path) != meta["blob_sha1"]:
            problems.append(f"{rel}: git blob hash differs from the source's")
        else:
            continue
        if delete_bad:
            path.unlink(missing_ok=True)
    return problems


def _matches(path: str, patterns: tuple[str, ...] | None) -> bool:
    if patterns is None:
        return True
    from fnmatch import fnmatch

    return any(fnmatch(path, p) for p in patterns)


def _join(dest: str, rel: str) -> str:
    return f"{dest.strip('/')}/{rel}" if dest.strip("/") else rel


# ---------------------------------------------------------------------------------------------
# The lock file


def _read_lock(path: Path, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The lock at ``path`` in the current layout (a format-1 lock is upgraded), or None."""
    if not path.is_file():
        return None
    try:
        lock = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log(f"ignoring the unreadable lock file {path} ({_line(exc)}); checking and fetching again")
        return None
    if isinstance(lock, dict) and "sources" not in lock and "files" in lock:  # format 1: one hub repository
        hub = {k: lock.get(k) for k in ("repo_id", "repo_type", "revision", "commit", "endpoint", "files")}
        lock = {"format": LOCK_FORMAT, "dataset": lock.get("dataset"), "sources": [{"kind": "hub", "dest": "", **hub}]}
    if not isinstance(lock, dict) or not isinstance(lock.get("sources"), list):
        log(f"ignoring the lock file {path}: not a lock of this harness; checking and fetching again")
        return None
    return lock


def _source(lock: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    return next((s for s in (lock or {}).get("sources", ()) if s.get("kind") == kind), None)


def lock_files(lock: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every file of every source of a lock: path in the dataset folder -> size and hash."""
    out: dict[str, dict[str, Any]] = {}
    for src in lock.get("sources", ()):
        out.update(src.get("files") or {})
    return out


def _git_record_matches(record: Mapping[str, Any] | None, spec: GitFiles) -> bool:
    """Whether a lock's git record is the declaration's (same repository, commit, files and hashes)."""
    if record is None:
        return False
    files = record.get("files") or {}
    return (record.get("repo") == spec.repo and record.get("commit") == spec.commit
            and {d: m.get("blob_sha1") for d, m in files.items()} == {f.dest: f.blob_sha1 for f in spec.files})


# ---------------------------------------------------------------------------------------------
# Git files at a pinned commit


def _checkout_commit(root: Path) -> str | None:
    """The commit a git checkout is at, or None (not a git checkout, or no git)."""
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def _place(tmp: Path, dest: Path, want: str, where: str, pin: str) -> None:
    """Move ``tmp`` to ``dest`` when its git blob hash is ``want``; else delete it and fail."""
    got = _git_blob_sha1(tmp)
    if got != want:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"{where}: git blob hash {got[:12]}, expected {want[:12]} ({pin}); nothing was kept, "
                         "rerun to fetch it again")
    os.replace(tmp, dest)


def _fetch_git(spec: GitFiles, folder: Path, checkout: str | None, previous: Mapping[str, Any] | None,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Place ``spec``'s files in ``folder`` (those already there and intact are kept); their lock record."""
    pin = f"{spec.repo}@{spec.commit[:12]}"
    dests = {f.dest: inside(folder, f.dest) for f in spec.files}
    todo = [f for f in spec.files if not (dests[f.dest].is_file() and _git_blob_sha1(dests[f.dest]) == f.blob_sha1)]
    checkout = checkout or (os.environ.get(spec.checkout_env) if spec.checkout_env else None) or None
    via = (previous or {}).get("via") or "already in place"
    if todo and checkout:
        root = Path(checkout).expanduser()
        if not root.is_dir():
            raise FetchError(f"the checkout {root} of {spec.repo} is not a folder")
        head = _checkout_commit(root)
        at = f"at commit {head[:12]}" if head else "not a git checkout"
        for f in todo:  # every file is checked before any is placed
            src = root / f.path
            if not src.is_file():
                raise FetchError(f"the checkout {root} of {spec.repo} ({at}) has no {f.path}, which {pin} has")
            if _git_blob_sha1(src) != f.blob_sha1:
                raise FetchError(f"the checkout {root} of {spec.repo} is {at}, and its {f.path} differs from "
                                 f"{pin}'s: check out {spec.commit} (git -C {root} checkout {spec.commit})")
        for f in todo:
            dest = dests[f.dest]
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".incomplete")
            shutil.copyfile(root / f.path, tmp)
            _place(tmp, dest, f.blob_sha1, str(root / f.path), pin)
        via = f"checkout {root} ({at})"
        log(f"{spec.repo}: {len(todo)} file(s) at {spec.commit[:12]} read from the checkout {root} ({at})")
    elif todo:
        base = (os.environ.get(GITHUB_RAW_ENV) or GITHUB_RAW_DEFAULT).rstrip("/")
        for f in todo:
            url = f"{base}/{spec.repo}/{spec.commit}/{urllib.parse.quote(f.path)}"
            dest = dests[f.dest]
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".incomplete")
            try:
                with urllib.request.urlopen(url, timeout=GIT_TIMEOUT_S) as resp, open(tmp, "wb") as out:
                    shutil.copyfileobj(resp, out, 1 << 20)
            except urllib.error.HTTPError as exc:
                tmp.unlink(missing_ok=True)
                raise FetchError(f"{url}: HTTP {exc.code} {exc.reason} ({pin}: no such file, or the endpoint "
                                 "refused it)") from None
            except (urllib.error.URLError, OSError) as exc:
                tmp.unlink(missing_ok=True)
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                hint = f"--checkout DIR or ${spec.checkout_env}=DIR" if spec.checkout_env else "--checkout DIR"
                raise FetchError(f"cannot reach {base} for {pin} ({_line(reason)}): make it reachable "
                                 f"(${GITHUB_RAW_ENV} names another endpoint), or give a checkout of {spec.repo} "
                                 f"at {spec.commit[:12]} with {hint}") from None
            _place(tmp, dest, f.blob_sha1, url, pin)
        via = base
        log(f"{spec.repo}: {len(todo)} file(s) at {spec.commit[:12]} fetched from {base}")
    return {"kind": "git", "repo": spec.repo, "commit": spec.commit, "via": via,
            "files": {f.dest: {"path": f.path, "size": dests[f.dest].stat().st_size, "blob_sha1": f.blob_sha1}
                      for f in spec.files}}


# ---------------------------------------------------------------------------------------------
# A hub repository


def _fetch_hub(ds: Dataset, folder: Path, wanted: str, endpoint: str | None) -> dict[str, Any]:
    """Download ``ds``'s hub repository at ``wanted`` into ``folder/<hub_dest>``; its lock record."""
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled
    except ImportError as exc:  # pragma: no cover - a dependency of the fetch extra
        raise FetchError("harness fetch needs huggingface_hub: pip install -e '.[fetch]'") from exc

    where = endpoint or "the Hugging Face hub"
    api = HfApi(endpoint=endpoint)
    try:
        info = api.repo_info(ds.repo_id, repo_type=ds.repo_type, revision=wanted)
        commit = info.sha
        tree = [f for f in api.list_repo_tree(ds.repo_id, repo_type=ds.repo_type, revision=commit, recursive=True)
                if hasattr(f, "size") and hasattr(f, "blob_id") and _matches(f.path, ds.allow_patterns)]
        files = {
            _join(ds.hub_dest, f.path): {
                "size": int(f.size), "blob_sha1": f.blob_id,
                "sha256": (f.lfs.sha256 if getattr(f, "lfs", None) is not None else None)}
            for f in tree
        }
        folder.mkdir(parents=True, exist_ok=True)
        for rel in files:  # before anything is checked, deleted or downloaded
            inside(folder, rel)
        # Files damaged by an earlier attempt are deleted so they are fetched again.
        verify(folder, {p: m for p, m in files.items() if (folder / p).is_file()}, delete_bad=True)
        # A progress bar on a terminal; none in logs and pipes (where errors stay one line).
        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

        quiet = not sys.stderr.isatty() and not are_progress_bars_disabled()
        if quiet:
            disable_progress_bars()
        try:
            snapshot_download(ds.repo_id, repo_type=ds.repo_type, revision=commit,
                              local_dir=inside(folder, ds.hub_dest) if ds.hub_dest else folder,
                              allow_patterns=list(ds.allow_patterns) if ds.allow_patterns else None,
                              endpoint=endpoint)
        finally:
            if quiet:
                enable_progress_bars()
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as exc:
        raise FetchError(f"cannot reach {where} to fetch {ds.name} ({ds.repo_id}): {_line(exc)}") from None
    except HfHubHTTPError as exc:
        raise FetchError(f"{where} refused {ds.repo_id}@{wanted}: {_line(exc)}") from None
    except OSError as exc:
        raise FetchError(f"cannot fetch {ds.name} into {folder}: {_line(exc)}") from None
    except FetchError:
        raise
    except Exception as exc:  # httpx connection errors, malformed listings, the hub client's own checks
        if type(exc).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout", "TimeoutException"):
            raise FetchError(f"cannot reach {where} to fetch {ds.name} ({ds.repo_id}): {_line(exc)}") from None
        raise FetchError(f"fetching {ds.name} ({ds.repo_id}) from {where} failed: "
                         f"{type(exc).__name__}: {_line(exc)}") from None
    return {"kind": "hub", "repo_id": ds.repo_id, "repo_type": ds.repo_type, "revision": wanted, "commit": commit,
            "endpoint": endpoint, "dest": ds.hub_dest, "files": files}


# ---------------------------------------------------------------------------------------------


def fetch(name: str, *, revision: str | None = None, update: bool = False, endpoint: str | None = None,
          checkout: str | None = None, log: Callable[[str], None] = lambda s: None) -> Path:
    """Fetch dataset ``name`` (see the module doc); returns its folder. ``checkout``: a local
    checkout of the dataset's git repository, read instead of its raw-file endpoint."""
    import difflib

    ds = DATASETS.get(name)
    if ds is None:
        close = difflib.get_close_matches(name, list(DATASETS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FetchError(f"unknown dataset {name!r}{hint} (datasets: {', '.join(DATASETS)})")
    if checkout and ds.git is None:
        raise FetchError(f"{name} takes no files from a git repository; drop --checkout")

    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    folder = dataset_dir(name)
    lock_path = folder / LOCK_FILE
    lock = _read_lock(lock_path, log)
    hub_lock = _source(lock, "hub")
    git_lock = _source(lock, "git")
    if hub_lock and (hub_lock.get("repo_id"), hub_lock.get("dest") or "") != (ds.repo_id, ds.hub_dest):
        log(f"{name}: the lock file names {hub_lock.get('repo_id')}, the dataset now {ds.repo_id}; fetching it")
        hub_lock = None

    if (lock and hub_lock and not update and revision in (None, hub_lock.get("commit"))
            and (ds.git is None or _git_record_matches(git_lock, ds.git))):
        problems = verify(folder, lock_files(lock))
        if not problems:
            log(f"{name}: complete at {folder} ({_describe(lock)}); checked locally, nothing to fetch")
            return folder
        log(f"{name}: {len(problems)} file(s) missing or damaged; fetching them again")

    t0 = time.monotonic()
    created = _absent_folders(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"cannot create the data folder {folder}: {_line(exc)} "
                         f"(${DATA_ROOT_ENV} names where fetched data goes)") from None
    try:
        return _fetch_into(ds, folder, lock_path, checkout, git_lock, hub_lock, revision, update, endpoint, log, t0)
    except BaseException:
        _tidy(folder, created)
        raise


def _absent_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first."""
    out = []
    for path in (folder, *folder.parents):
        if path.exists() or path.is_symlink():
            break
        out.append(path)
    return out


def _tidy(folder: Path, created: list[Path]) -> None:
    """After a failed fetch: the half-written files (``*.incomplete``, the lock's ``.tmp``) and the
    folders left empty go; files already placed and checked stay, so a rerun resumes."""
    if folder.is_dir():
        for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            try:
                if path.is_file() and not path.is_symlink() and (
                        path.name.endswith(".incomplete") or path == (folder / LOCK_FILE).with_suffix(".tmp")):
                    path.unlink()
                elif path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                    path.rmdir()
            except OSError:
                pass
    for path in created:  # deepest first: each only when empty
        try:
            path.rmdir()
        except OSError:
            break


def _fetch_into(ds: Dataset, folder: Path, lock_path: Path, checkout: str | None, git_lock: Any, hub_lock: Any,
                revision: str | None, update: bool, endpoint: str | None, log: Callable[[str], None],
                t0: float) -> Path:
    """The downloads and checks of :func:`fetch` into its existing ``folder``."""
    name = ds.name
    sources = []
    if ds.git is not None:  # first: small, and a missing checkout fails before the large download
        sources.append(_fetch_git(ds.git, folder, checkout, git_lock, log))
    wanted = revision or (hub_lock["commit"] if hub_lock and not update else ds.revision)
    hub = _fetch_hub(ds, folder, wanted, endpoint)
    clash = sorted(set(hub["files"]) & set(sources[0]["files"])) if sources else []
    if clash:
        raise FetchError(f"{name}: {ds.repo_id} and the git files both place {clash[0]}")
    sources.append(hub)
    files = {p: m for src in sources for p, m in src["files"].items()}
    problems = verify(folder, files, delete_bad=True)
    if problems:
        raise FetchError(f"{name}: {len(problems)} file(s) failed the check ({problems[0]}); rerun to fetch them again")
    missing = [r for r in ds.required if not (folder / r).is_file()]
    if missing:
        raise FetchError(f"{name}: the fetched folder ({_describe({'sources': sources})}) has no {missing[0]}, "
                         "which the suite needs")
    new_lock = {"format": LOCK_FORMAT, "dataset": name, "fetched_at": time.time(), "sources": sources}
    tmp = lock_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(new_lock, indent=1, sort_keys=True))
    os.replace(tmp, lock_path)
    size = sum(m["size"] for m in files.values())
    log(f"{name}: {len(files)} files ({size / 1e6:.1f} MB; {_describe(new_lock)}) checked and placed in "
        f"{folder} ({time.monotonic() - t0:.1f}s)")
    return folder


def _describe(lock: Mapping[str, Any]) -> str:
    parts = []
    for src in lock.get("sources", ()):
        name = src.get("repo_id") if src.get("kind") == "hub" else src.get("repo")
        parts.append(f"{name}@{str(src.get('commit'))[:12]}: {len(src.get('files') or {})} files")
    return ", ".join(parts)


def _line(exc: object) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
