"""Long texts of a live episode kept on disk until the episode is stored.

An episode's transcript (each agent call's raw output) is written to the store with its record,
when the episode ends; until then the runner holds it. A model that answers up to
``max_reply_chars`` (1,000,000) characters on every call would make each live episode hold that
much per call (4 bytes a character for text outside the Basic Multilingual Plane): 8 episodes of
10 such calls, 320 MB. So a text longer than :data:`SPOOL_CHARS` characters is written to a
temporary file as it arrives (:class:`Spooled`) and read back one at a time by the store when
the record is committed (harness/store/database.py): what a live episode holds per call is at most
:data:`SPOOL_CHARS` characters, whatever the model answers. The file goes when the text is
stored or dropped (its object is collected), and the folder at exit.

A spool file holds **redacted** text only (:func:`harness.util.redact.redact_text` before the write;
the replies of the ``openai`` backend arrive redacted already), so a process killed before its
cleanup (SIGKILL, the OOM killer, ``os._exit`` after a stop signal) leaves no credential in
``TMPDIR``. Its folder is named ``harness-spool-<pid>-*``: every ``harness`` command removes at
start the folders of processes that no longer run (:func:`remove_stale`), and the CLI removes
its own before it ends with ``os._exit`` (:func:`remove_own`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import weakref
from typing import Any

from harness.util.redact import redact_text

#: Texts longer than this many characters wait on disk (a usual reply, 1-3 KB, stays in memory).
SPOOL_CHARS = 4096

_FOLDER: list[str] = []
_LOCK = threading.Lock()


#: Prefix of a spool folder's name; the owning process's id follows it.
PREFIX = "harness-spool-"


def _folder() -> str:
    with _LOCK:
        if not _FOLDER:
            path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
            _FOLDER.append(path)
            atexit.register(shutil.rmtree, path, True)
        return _FOLDER[0]


def remove_own() -> None:
    """Remove this process's spool folder now (before an ``os._exit``, which runs no atexit).
    Takes no lock: it may run in a signal handler that interrupted :func:`_folder`."""
    for path in list(_FOLDER):
        shutil.rmtree(path, ignore_errors=True)


def remove_stale(folder: str | None = None) -> list[str]:
    """Remove the spool folders in ``folder`` (default: the temporary folder) left by processes
    that no longer run (killed before their cleanup); returns their paths. A folder of a
    running process, or of another user, is left alone."""
    removed: list[str] = []
    try:  # never a reason for a command to fail (no writable temporary folder: nothing to remove)
        folder = folder or tempfile.gettempdir()
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(PREFIX):
            continue
        pid_text = name[len(PREFIX):].partition("-")[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _running(int(pid_text)):
            continue
        path = os.path.join(folder, name)
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): it runs
        return True
    return True


class Spooled:
    """A text on disk, redacted; :meth:`read` gives that back exactly (lone surrogates included)."""

    __slots__ = ("path", "length", "_finalizer", "__weakref__")

    def __init__(self, text: str):
        text = redact_text(text)  # never a credential on disk, even if the process is killed
        fd, self.path = tempfile.mkstemp(dir=_folder(), suffix=".txt")
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogatepass"))
        self.length = len(text)
        self._finalizer = weakref.finalize(self, _unlink, self.path)

    def read(self) -> str:
        with open(self.path, "rb") as fh:
            return fh.read().decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"Spooled({self.length} chars at {self.path})"


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def spool(value: Any) -> Any:
    """``value`` itself, or a :class:`Spooled` copy of it when it is a text longer than
    :data:`SPOOL_CHARS` characters."""
    if isinstance(value, str) and len(value) > SPOOL_CHARS:
        return Spooled(str(value))
    return value


def unspool(value: Any) -> Any:
    """The text of a :class:`Spooled` value; any other value as it is."""
    return value.read() if isinstance(value, Spooled) else value
