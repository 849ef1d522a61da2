"""The store's error and its one-line messages: what a command prints when a store cannot be
opened, read or written, naming the likely fix."""

from __future__ import annotations

from pathlib import Path


class StoreError(RuntimeError):
    """The store file cannot be opened or read (one-line message for the CLI)."""


def damaged_message(path: Path, problem: str) -> str:
    return (f"result store {path} is damaged ({problem}); `harness store check {path.parent}` lists the damage and "
            f"`harness store repair {path.parent}` copies every sound record into a new store")


def _space_hint(writer: str | None) -> str:
    """What to do about a full disk: ``out=`` is only ``harness run``'s to choose."""
    return "free disk space or choose another `out=`" if writer == "harness run" else "free disk space"


def _db_error(action: str, path: Path, exc: BaseException, writer: str | None = None) -> str:
    """One line for a SQLite error, naming the likely fix (``writer``: the command writing)."""
    text = str(exc)
    if "malformed" in text or "corrupt" in text or "not a database" in text or "decode" in text:
        return damaged_message(path, text)
    if "full" in text or "I/O" in text or "disk" in text:
        return f"cannot {action} result store {path}: {text} ({_space_hint(writer)})"
    if "readonly" in text or "read-only" in text:
        return f"cannot {action} result store {path}: {text} (the output directory is not writable)"
    return f"cannot {action} result store {path}: {text}"
