"""Grouped commits of finished episodes (:class:`RecordWriter`), on the runner's thread or,
when that thread is held up, a watchdog's."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from harness.store.errors import StoreError, _db_error
from harness.types import EpisodeRecord


class _Store(Protocol):
    """What a writer needs of its :class:`~harness.store.database.ResultStore`."""

    path: Path
    command: str | None

    def add_many(self, items: Sequence[EpisodeRecord | tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]]) -> int:
        ...


class RecordWriter:
    """Commits finished episodes in groups: each record waits at most ``interval_s`` (0.25 s).

    The runner calls :meth:`check` before every agent call; it commits the
    waiting records in one transaction (a WAL append without fsync in
    ``synchronous=NORMAL``) once the oldest has waited ``interval_s``. A
    watchdog thread wakes every ``watchdog_s`` (1 s) and commits them itself
    when the runner's thread is held up -- a hung model call -- so a SIGKILL
    loses only the episodes in flight and those finished in the last second
    or so. Committing once per record cost as much as a logic-only episode's
    runner bookkeeping, and every wake of a helper thread costs the runner's
    thread ~0.4 ms of CPU on this 2-core machine (measured), so neither a
    commit per record nor a writer thread woken per record
    (benchmarks/runner_overhead.py). :meth:`close` commits the rest, on every
    exit path of the runner (Ctrl-C and SIGTERM included). A write error
    raises StoreError there or from the next :meth:`check`.
    """

    def __init__(self, store: _Store, interval_s: float = 0.25, watchdog_s: float = 1.0):
        self._store = store
        self.interval_s = float(interval_s)
        self.watchdog_s = float(watchdog_s)
        self._pending: list[tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]] = []
        self._lock = threading.Lock()  # guards _pending / _due
        self._due = float("inf")  # when the oldest waiting record must be committed
        self._commit_lock = threading.Lock()  # one commit at a time (the connection is shared)
        self._error: StoreError | None = None
        #: Records committed by this writer so far.
        self.committed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="harness-record-writer", daemon=True)
        self._thread.start()

    def add(self, record: EpisodeRecord, transcript: Sequence[Mapping[str, Any]] = ()) -> None:
        with self._lock:
            if not self._pending:
                self._due = time.monotonic() + self.interval_s
            self._pending.append((record, transcript))

    def check(self) -> None:
        """Called by the runner before every agent call (cheap): commits the waiting records once
        the oldest has waited ``interval_s``; raises the watchdog's write error, if it had one."""
        if self._error is not None:
            raise self._error
        if self._pending and time.monotonic() >= self._due:
            self.flush()

    def flush(self) -> None:
        """Commit every waiting record now."""
        if self._error is not None:
            raise self._error
        with self._commit_lock:
            with self._lock:
                batch = list(self._pending)
            if not batch:
                return
            try:
                self._store.add_many(batch)
            except sqlite3.DatabaseError as exc:
                self._error = StoreError(_db_error("write to", self._store.path, exc, self._store.command))
                raise self._error from None
            # Removed only once committed: a signal (KeyboardInterrupt) inside the commit rolls
            # it back and the next flush writes the same records again (the upsert is idempotent).
            with self._lock:
                del self._pending[:len(batch)]
                self._due = time.monotonic() + self.interval_s if self._pending else float("inf")
            self.committed += len(batch)

    def _watch(self) -> None:
        while not self._stop.wait(self.watchdog_s):
            if self._pending and time.monotonic() >= self._due:  # the runner's thread is held up
                try:
                    self.flush()
                except StoreError:
                    return  # kept in _error for the runner's thread
                except Exception as exc:  # noqa: BLE001 - e.g. a record that cannot be encoded
                    self._error = StoreError(f"cannot write to result store {self._store.path}: {exc}")
                    return

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.flush()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
