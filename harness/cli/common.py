"""What every command shares: the usage error (one line, exit 2) and message helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from harness.store import STORE_FILENAME

EXIT_USAGE = 2

#: The core's commands: name -> (its module, with ``add_parser(sub)`` and ``main(args)``; the
#: line ``harness --help`` shows for it). Only the chosen command's module is imported
#: (:mod:`harness.cli.entry`), so ``harness --help`` and each command load no other command's rooms.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("harness.cli.run", "run episodes (Hydra overrides, e.g. suite=NAME split=SPLIT planner=oracle)"),
    "table": ("harness.cli.table", "print the transfer table of output directories (reads the stores only)"),
    "report": ("harness.cli.report", "write a static HTML report of output directories (reads the stores only)"),
    "export": ("harness.cli.export", "write the episode records of output directories as JSONL or Parquet"),
    "fetch": ("harness.cli.fetch", "download an official dataset into the data cache, laid out as its suite "
                                   "reads it (docs/fetch.md)"),
    "store": ("harness.cli.store", "check a result store, or salvage a damaged one into a new store"),
    "list": ("harness.cli.list", "registered suites, planners, policies, executors and variants; "
                                 "`harness list NAME`: that plugin's parameters"),
    "judge": ("harness.cli.judge", "score stored answers with a judge model (judge=NAME judge.KEY=VALUE ...)"),
}


def summary(command: str) -> str:
    """The one-line help of a core command (:data:`COMMANDS`)."""
    return COMMANDS[command][1]


class UsageError(Exception):
    """Bad user input; printed as one line, exit status 2."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def first_lines(exc: BaseException, limit: int = 40) -> str:
    """The message, kept whole when it is a deliberate list (one bad episode per line)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    more = f"\n  ... {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


def _store_files(inputs: Sequence[str]) -> list[Path]:
    """The files of the stores a command reads (the SQLite file, its journal, lock and WAL files)."""
    out = []
    for given in inputs:
        p = Path(given)
        db = p if p.suffix == ".sqlite" else p / STORE_FILENAME
        out += [db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal", ".lock"))]
    return out


def _same(a: Path, b: Path) -> bool:
    """One file: the same inode where both exist (a hard link, a symlink), else the same path
    once symlinks in it are resolved (a store's -wal, -shm and .lock come and go with its runs)."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str | Path, inputs: Sequence[str] = (), force: bool = False,
                 make_parents: bool = False) -> Path:
    """The file a user named for a command to write, checked before anything is read or written.

    Refused in one line (:class:`UsageError`, exit 2): a file of an input store (even with
    ``--force``: writing there would destroy what is being read), a folder, a missing parent
    folder (unless ``make_parents``: the command creates it), and an existing file unless ``force``.
    """
    out = Path(path)
    for f in _store_files(inputs):
        if _same(out, f):  # existing or not: its store would read the output as its own file
            raise UsageError(f"{path} is a file of the input store {f.parent}: name another output file "
                             "(nothing was written)")
    if out.is_dir():
        raise UsageError(f"{path} is a folder: name a file to write (nothing was written)")
    parent = out.parent if str(out.parent) else Path(".")
    if not make_parents and not parent.is_dir():
        raise UsageError(f"cannot write {path}: folder {parent} does not exist (nothing was written)")
    if out.exists() and not force:
        raise UsageError(f"{path} exists: pass --force to replace it (nothing was written)")
    return out


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place.

    Whatever goes wrong (a full disk, a permission, an interrupt), ``path`` keeps its old
    content (or stays absent) and no partial file is left; an ``OSError`` becomes one line
    (:class:`UsageError`, exit 2).
    """
    import tempfile

    parent = path.parent if str(path.parent) else None
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc} (nothing was written)") from None
    os.close(fd)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # the mode an ordinary open() would give (mkstemp's is 0600)
        write(Path(tmp))
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or one_line(exc)} (nothing was written)") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)

