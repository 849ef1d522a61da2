"""Third-party warnings go to the run's log file, not the console.

Libraries the suites and agents load speak to their own developers: a simulator's advice on
setting up its macro file at every import, a model library's deprecation notices, a hub
client's warnings before the harness prints its own one-line refusal. The console is for the
harness's lines (progress, results, one-line errors); so, from the start of every ``harness``
command (:func:`install`):

* a Python warning (``warnings.warn``) raised outside this project's packages, and a
  record below ERROR from a logger outside them (a library's own console handler included:
  the record never reaches the handlers), is written to the run's log only;
* ERROR and above, and everything this project's own code warns or logs, reach the console as
  before;
* until a run names its log (:func:`log_to`, called by the runner once the run's store and
  identity exist: ``OUT/logs/<run id>.log``) the lines wait in memory and then go to the top of
  that file; a command that writes no run (a refusal, ``harness table``) writes no file;
* ``HARNESS_THIRD_PARTY_WARNINGS=show`` shows them on the console too (they are still logged).

Env worker processes (``executor=process``, started with ``spawn``) read the log path from
:data:`LOG_ENV` (:func:`install_from_env`): their lines go to the same file (appends of one
line each).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

from harness.util.redact import redact_text

#: This project's top-level packages: their warnings and log records are the harness's own.
OURS = ("harness", "envs", "planners", "policies", "__main__")

#: The run's log file, for spawned worker processes.
LOG_ENV = "HARNESS_RUN_LOG"
#: ``show``: third-party warnings reach the console as well.
SHOW_ENV = "HARNESS_THIRD_PARTY_WARNINGS"

#: Lines kept in memory before a log path is known (the oldest are dropped past this).
BUFFER_LINES = 10_000

_ROOTS = tuple(str(Path(__file__).resolve().parents[2] / p) + os.sep for p in OURS[:-1])


class _Sink:
    """Lines of third-party output: in memory until a path is set, then appended to the file."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.buffer: list[str] = []
        self.path: Path | None = None
        self.file: TextIO | None = None
        self.count = 0

    def write(self, text: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} [pid {os.getpid()}] {redact_text(text.rstrip())}\n"
        with self.lock:
            self.count += 1
            self.buffer.append(line)
            if len(self.buffer) > BUFFER_LINES:
                del self.buffer[: len(self.buffer) - BUFFER_LINES]
            self._flush()

    def _flush(self) -> None:
        """Append the waiting lines to the file (opened at its first line: a run whose
        libraries said nothing has no log file)."""
        if self.path is None or not self.buffer:
            return
        try:
            if self.file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.file = open(self.path, "a", encoding="utf-8")
            self.file.writelines(self.buffer)
            self.file.flush()
            self.buffer.clear()
        except (OSError, ValueError):  # an unwritable log never stops a run; lines stay in memory
            self.file = None

    def set_path(self, path: Path | None) -> None:
        with self.lock:
            if self.file is not None:
                self.file.close()
                self.file = None
            self.path = path
            self._flush()


_SINK = _Sink()
_INSTALLED = False
_ORIGINAL_SHOWWARNING = warnings.showwarning


def _is_ours_name(name: str) -> bool:
    return name.split(".", 1)[0] in OURS


def _is_ours_file(filename: str) -> bool:
    try:
        path = str(Path(filename).resolve())
    except (OSError, RuntimeError):
        return False
    return path.startswith(_ROOTS)


def _show() -> bool:
    return os.environ.get(SHOW_ENV, "").lower() == "show"


class _RoutingLogger(logging.Logger):
    """A logger whose records below ERROR go to the run's log when it is not this project's."""

    def callHandlers(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        if record.levelno >= logging.ERROR or _is_ours_name(record.name):
            super().callHandlers(record)
            return
        try:
            _SINK.write(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:  # a bad format string in a library's record: keep its raw text
            _SINK.write(f"{record.levelname} {record.name}: {record.msg!r}")
        if _show():
            super().callHandlers(record)


def _showwarning(message: Any, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    if _is_ours_file(filename):
        _ORIGINAL_SHOWWARNING(message, category, filename, lineno, file, line)
        return
    _SINK.write(f"{category.__name__} {filename}:{lineno}: {message}")
    if _show():
        _ORIGINAL_SHOWWARNING(message, category, filename, lineno, file, line)


def _redacted_record(factory: Any) -> Any:
    """A log record factory whose records carry their message redacted (harness/util/redact.py):
    whatever handler prints or writes a record, a credential in it never shows."""

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format: logging reports it as usual
            return record

        record.msg, record.args = redact_text(text), None
        return record

    return make


def install() -> None:
    """Route third-party warnings and log records (idempotent). Loggers that exist already
    are switched over too, so a library imported before this call is covered."""
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    warnings.showwarning = _showwarning
    logging.setLoggerClass(_RoutingLogger)
    logging.setLogRecordFactory(_redacted_record(logging.getLogRecordFactory()))
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if type(logger) is logging.Logger and not _is_ours_name(name):
            logger.__class__ = _RoutingLogger


def install_from_env() -> None:
    """In a worker process: route, and log to the parent's run log when it named one."""
    install()
    path = os.environ.get(LOG_ENV)
    if path:
        _SINK.set_path(Path(path))


def log_to(path: str | Path | None) -> None:
    """Write the routed lines to ``path`` from now on (with those waiting in memory); None:
    back to memory. Worker processes started later inherit the path. A no-op where nothing is
    routed (Python callers of the runner that did not :func:`install`)."""
    if not _INSTALLED:
        return
    _SINK.set_path(Path(path) if path is not None else None)
    if path is None:
        os.environ.pop(LOG_ENV, None)
    else:
        os.environ[LOG_ENV] = str(path)


def log_path() -> Path | None:
    """The run log lines are written to now (None: in memory)."""
    return _SINK.path


def routed_count() -> int:
    """Lines routed off the console in this process so far."""
    return _SINK.count


def run_log_path(store_path: str | Path, run_id: str) -> Path:
    """Where a run's log lives: ``logs/<run id>.log`` beside the store's database."""
    return Path(store_path).parent / "logs" / f"{run_id}.log"


__all__ = ["install", "install_from_env", "log_to", "log_path", "routed_count", "run_log_path",
           "LOG_ENV", "SHOW_ENV"]
