"""``harness fetch DATASET``: official benchmark data from the model hub, once.

Downloads go through ``huggingface_hub`` (its ``snapshot_download``: parallel,
resumable ``.incomplete`` files, the endpoint from ``HF_ENDPOINT``) into
``<data root>/<dataset>/``, where suites look by default (:func:`dataset_dir`).
The data root is ``$EMBODIED_TRANSFER_DATA``, else
``$XDG_CACHE_HOME/embodied-transfer/data`` (``~/.cache/...``).

Datasets. Each suite declares the datasets it can use on its plugin
(``SuitePlugin.datasets``); :data:`DATASETS` collects them.

Pinning. A dataset's declaration may pin a commit; otherwise the first fetch
resolves the branch to a commit and writes it, with every file's size and hash,
to ``<dataset>/.fetch.json``. Later fetches use that commit (``--revision``
replaces it, ``--update`` re-resolves the branch), so a data folder is always
one exact hub commit.

Checks. After the download every file of the commit is checked against the
hub's tree listing: its size, and its SHA-256 (LFS files) or git blob SHA-1
(other files). A mismatch deletes that file and fails with one line; rerunning
fetches it again. Rerunning after an interruption resumes.

Offline. Once fetched, suites read the folder with no network; ``harness fetch``
on a complete folder re-checks it locally and says so. When the hub cannot be
reached the command fails with one line naming the endpoint (nothing partial is
presented as complete).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.catalog import Collected

#: Environment variable naming the data root.
DATA_ROOT_ENV = "EMBODIED_TRANSFER_DATA"
#: The lock file beside the data: repo, commit, files with sizes and hashes.
LOCK_FILE = ".fetch.json"


@dataclass(frozen=True)
class Dataset:
    name: str
    repo_id: str
    repo_type: str = "dataset"
    #: Branch or tag to resolve on first fetch, or a commit hash to pin outright.
    revision: str = "main"
    allow_patterns: tuple[str, ...] | None = None
    #: Files the suite needs; a snapshot without them is refused with the reason.
    required: tuple[str, ...] = ()
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _suite_datasets() -> dict[str, Dataset]:
    from harness.catalog import SUITES

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
    """``folder / rel``, or FetchError when ``rel`` (from a hub listing or a lock file)
    would name anything outside ``folder``: an absolute path, a drive, a ``..`` segment,
    a backslash, or a symlink inside ``folder`` that leads out of it."""
    parts = rel.split("/")
    if (not rel or rel.startswith("/") or "\\" in rel or "\0" in rel or ":" in parts[0]
            or any(p in ("", ".", "..") for p in parts)):
        raise FetchError(f"refusing the file {rel[:200]!r} named by the hub listing: it is outside the data "
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
            problems.append(f"{rel}: SHA-256 differs from the hub's")
        elif not meta.get("sha256") and meta.get("blob_sha1") and _git_blob_sha1(path) != meta["blob_sha1"]:
            problems.append(f"{rel}: git blob hash differs from the hub's")
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


def fetch(name: str, *, revision: str | None = None, update: bool = False, endpoint: str | None = None,
          log: Callable[[str], None] = lambda s: None) -> Path:
    """Fetch dataset ``name`` (see the module doc); returns its folder."""
    import difflib

    ds = DATASETS.get(name)
    if ds is None:
        close = difflib.get_close_matches(name, list(DATASETS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FetchError(f"unknown dataset {name!r}{hint} (datasets: {', '.join(DATASETS)})")
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled
    except ImportError as exc:  # pragma: no cover - a dependency of the models extra
        raise FetchError("harness fetch needs huggingface_hub: pip install -e '.[fetch]'") from exc

    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    where = endpoint or "the Hugging Face hub"
    folder = dataset_dir(name)
    lock_path = folder / LOCK_FILE
    lock = json.loads(lock_path.read_text()) if lock_path.is_file() else None

    if lock and not update and revision in (None, lock["commit"]):
        problems = verify(folder, lock["files"])
        if not problems:
            log(f"{name}: complete at {folder} (commit {lock['commit'][:12]}, {len(lock['files'])} files); "
                "checked locally, nothing to fetch")
            return folder
        log(f"{name}: {len(problems)} file(s) missing or damaged; fetching them again")

    wanted = revision or (lock["commit"] if lock and not update else ds.revision)
    api = HfApi(endpoint=endpoint)
    t0 = time.monotonic()
    try:
        info = api.repo_info(ds.repo_id, repo_type=ds.repo_type, revision=wanted)
        commit = info.sha
        tree = [f for f in api.list_repo_tree(ds.repo_id, repo_type=ds.repo_type, revision=commit, recursive=True)
                if hasattr(f, "size") and hasattr(f, "blob_id") and _matches(f.path, ds.allow_patterns)]
        files = {
            f.path: {"size": int(f.size), "blob_sha1": f.blob_id,
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
            snapshot_download(ds.repo_id, repo_type=ds.repo_type, revision=commit, local_dir=folder,
                              allow_patterns=list(ds.allow_patterns) if ds.allow_patterns else None,
                              endpoint=endpoint)
        finally:
            if quiet:
                enable_progress_bars()
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as exc:
        raise FetchError(f"cannot reach {where} to fetch {name} ({ds.repo_id}): {_line(exc)}") from None
    except HfHubHTTPError as exc:
        raise FetchError(f"{where} refused {ds.repo_id}@{wanted}: {_line(exc)}") from None
    except OSError as exc:
        raise FetchError(f"cannot fetch {name} into {folder}: {_line(exc)}") from None
    except FetchError:
        raise
    except Exception as exc:  # httpx connection errors, malformed listings, the hub client's own checks
        if type(exc).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout", "TimeoutException"):
            raise FetchError(f"cannot reach {where} to fetch {name} ({ds.repo_id}): {_line(exc)}") from None
        raise FetchError(f"fetching {name} ({ds.repo_id}) from {where} failed: "
                         f"{type(exc).__name__}: {_line(exc)}") from None
    problems = verify(folder, files, delete_bad=True)
    if problems:
        raise FetchError(f"{name}: {len(problems)} file(s) failed the check ({problems[0]}); rerun to fetch them again")
    missing = [r for r in ds.required if not (folder / r).is_file()]
    if missing:
        raise FetchError(f"{name}: {ds.repo_id}@{commit[:12]} has no {missing[0]}, which the suite needs")
    tmp = lock_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"dataset": name, "repo_id": ds.repo_id, "repo_type": ds.repo_type,
                               "revision": wanted, "commit": commit, "endpoint": endpoint,
                               "fetched_at": time.time(), "files": files}, indent=1, sort_keys=True))
    os.replace(tmp, lock_path)
    size = sum(m["size"] for m in files.values())
    log(f"{name}: {len(files)} files ({size / 1e6:.1f} MB) from {ds.repo_id}@{commit[:12]} checked and placed in "
        f"{folder} ({time.monotonic() - t0:.1f}s)")
    return folder


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
