"""One writer at a time: the exclusive lock beside the store file, who holds it, and the
output folder and file it guards (made if missing, removed again if a failed open made them)."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import time
from pathlib import Path

from harness.store.errors import StoreError


def _not_regular(path: Path) -> str | None:
    """One line when something other than a regular file (a FIFO, a folder, a socket, a device)
    is where the store file goes, else None; checked by ``stat``, which never opens it (opening
    a FIFO would block)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")
    return (f"result store {path} is not a regular file: it is {kind}; "
            "remove it or point the command at another output directory")


def _holder(text: str) -> str:
    """Who holds the lock, from its lock file: ``"`harness judge` (pid ...)"``, or for a lock
    file that names no command, ``"another process (pid ...)"``."""
    command, sep, rest = text.partition(" | ")
    if sep and command:
        return f"`{command}` ({rest})"
    return f"another process ({text or 'unknown'})"


def _lock(path: Path, writer: str | None = None) -> int:
    """Hold ``<store>.lock`` exclusively (``flock``); StoreError naming the holder if another process does.

    The kernel drops the lock when its process ends, however it ends, so a rerun after a
    crash takes over at once. The file is removed on release; a process that opened it
    just before the removal finds it gone once it holds the lock, and tries again (so two
    processes can never both hold "the" lock through two different files).
    """
    lock_file = path.with_name(path.name + ".lock")
    while True:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(os.pread(fd, 300, 0).decode("utf-8", "replace").strip())
            os.close(fd)
            if writer == "harness run":
                fix = "wait for it to end (rerunning then resumes) or give another `out=`"
            elif writer:
                fix = f"wait for it to end, then run `{writer}` again"
            else:
                fix = "wait for it to end"
            raise StoreError(f"result store {path} is being written by {holder}; {fix}") from None
        try:
            same = os.stat(lock_file).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # released and removed between our open and our lock
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (f"{writer} | " if writer else "").encode() +
                      f"pid {os.getpid()} on {socket.gethostname()}, since "
                      f"{time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        except OSError:
            _unlock(path, fd)
            raise
        return fd


def _unlock(path: Path, fd: int) -> None:
    Path(str(path) + ".lock").unlink(missing_ok=True)  # removed while still held (see _lock)
    os.close(fd)


def _missing_dirs(directory: Path) -> list[Path]:
    """``directory`` and its ancestors that do not exist yet, deepest first."""
    out = []
    for d in [directory, *directory.parents]:
        if d.exists():
            break
        out.append(d)
    return out


def _remove_empty(dirs: list[Path]) -> None:
    for d in dirs:  # deepest first; stops at the first one something else was put in
        try:
            d.rmdir()
        except OSError:
            return
