"""Long texts of a live episode kept on disk until the episode is stored.

An episode's transcript (each agent call's raw output) is written to the store with its record,
when the episode ends; until then the runner holds it. A model that answers up to
``max_reply_chars`` (1,000,000) characters on every call would make each live episode hold that
much per call (4 bytes a character for text outside the Basic Multilingual Plane): 8 episodes of
10 such calls, 320 MB. So a text longer than :data:`SPOOL_CHARS` characters is written to a
temporary file as it arrives (:class:`Spooled`) and read back one at a time by the store when
the record is committed (harness/store.py): what a live episode holds per call is at most
:data:`SPOOL_CHARS` characters, whatever the model answers. The file goes when the text is
stored or dropped (its object is collected), and the folder at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import weakref
from typing import Any

#: Texts longer than this many characters wait on disk (a usual reply, 1-3 KB, stays in memory).
SPOOL_CHARS = 4096

_FOLDER: list[str] = []
_LOCK = threading.Lock()


def _folder() -> str:
    with _LOCK:
        if not _FOLDER:
            path = tempfile.mkdtemp(prefix="harness-spool-")
            _FOLDER.append(path)
            atexit.register(shutil.rmtree, path, True)
        return _FOLDER[0]


class Spooled:
    """A text on disk; :meth:`read` gives it back exactly (lone surrogates included)."""

    __slots__ = ("path", "length", "_finalizer", "__weakref__")

    def __init__(self, text: str):
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
