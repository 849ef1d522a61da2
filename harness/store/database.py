"""The result store: one SQLite file per output directory.

Each finished episode is one row, committed as soon as the episode ends, so a
crash (even SIGKILL) loses at most the episodes in flight. Rows are keyed by
(run_id, suite, split, episode_id, seed): a rerun of the same run skips keys
already completed and can never duplicate one. A row recording an error is
replaced if the episode is run again and finishes; a completed row is never
overwritten. Each agent call's raw output (and, on request, its prompt) is
kept in the ``transcripts`` table beside the episode row.

While a run writes, the file is in WAL mode (concurrent runs and readers);
when the last writer closes it goes back to a rollback journal, so an archived
store reads in a read-only directory and ``harness table`` leaves no
``-wal``/``-shm`` files behind. A file that is not a harness store is refused
untouched; a store of an older schema is migrated in place when opened for
writing, and read as it is otherwise.
"""


from __future__ import annotations

import functools
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from harness.store import queries
from harness.store.errors import StoreError, _db_error, damaged_message
from harness.store.integrity import _crc_sql
from harness.store.locking import _unlock
from harness.store.opening import open_readonly, open_writable
from harness.store.queries import _JUDGEMENT_COLUMNS
from harness.store.schema import (_INSERT_SQL, _KEY, _RECORD_FIELDS, _TRANSCRIPT_COLUMNS, _TRANSCRIPT_SQL,
                                  STORE_FILENAME, _encode_extra, _execute, _storable)
from harness.store.writer import RecordWriter
from harness.types import SCHEMA_VERSION, EpisodeRecord, RunSpec
from harness.util.redact import redact, redact_text
from harness.util.spool import unspool

if TYPE_CHECKING:  # pandas is imported where tables are built, not at start-up
    import pandas as pd


def _reads(method: Any) -> Any:
    """A store read whose SQLite error (a damaged page found late) is a one-line StoreError."""

    @functools.wraps(method)
    def wrapper(self: "ResultStore", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise StoreError(_db_error("read", self.path, exc)) from None
        except Exception as exc:
            if type(exc).__name__ == "DatabaseError":  # pandas' wrapper of the SQLite error
                raise StoreError(_db_error("read", self.path, exc)) from None
            raise
    return wrapper


class ResultStore:
    """A SQLite result store. ``path`` is the output directory or the ``.sqlite`` file itself.

    Opening verifies the whole store first (:func:`~harness.store.integrity.inspect_db`, the
    same verdict as ``harness store check``): a store that is damaged, of an unknown schema
    version or not a harness store is refused with a one-line :class:`StoreError` before
    anything is read or written (harness/store/opening.py). A writable store is held by one
    process at a time (an exclusive ``flock`` on ``results.sqlite.lock``, released by the
    kernel when the process dies, so a rerun after a crash takes over). A read-only store reads
    one snapshot: a read transaction is held from the check to :meth:`close`, so a table
    printed while a run writes sees the store as it was when it was opened. The reads' SQL is
    harness/store/queries.py's.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False, writer: str | None = None):
        """``writer``: the command that writes (``"harness judge"``), written into the lock file so
        that a second writer refused meanwhile is told what holds the store, and used to say
        what fixes a write error (``out=`` is ``harness run``'s)."""
        path = Path(path)
        self.path = path / STORE_FILENAME if path.suffix != ".sqlite" else path
        self.readonly = readonly
        self.command = writer
        self._tmpdir: str | None = None
        self._lock_fd: int | None = None
        #: Per run id: {hash of (suite, split, episode_id, seed): rowid} of the rows stored at open.
        self._rowids: dict[str, dict[int, int]] = {}
        self._seal_sql: dict[str, str] = {}
        if readonly:
            self._db, self._tmpdir, self.schema_version = open_readonly(self.path)
        else:
            self._db, self._lock_fd = open_writable(self.path, self.command)
            self.schema_version = SCHEMA_VERSION
        self._columns = {r[1] for r in self._db.execute("PRAGMA table_info(episodes)")}

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            _unlock(self.path, self._lock_fd)
            self._lock_fd = None

    def _seal(self, table: str, rowid: int) -> None:
        """Store the checksum of a row just written (computed from the values as SQLite stored them)."""
        sql = self._seal_sql.get(table)
        if sql is None:  # built once per table (after the migration: the columns are final)
            sql = self._seal_sql[table] = f"UPDATE {table} SET crc = {_crc_sql(self._db, table)} WHERE rowid = ?"
        self._db.execute(sql, (rowid,))

    def close(self) -> None:
        """Close; the last writer puts the file back in rollback-journal mode (see module doc)."""
        if not self.readonly:
            try:
                self._db.execute("PRAGMA busy_timeout=0")
                self._db.execute("PRAGMA journal_mode=DELETE")  # fails (locked) while a reader holds a snapshot
            except sqlite3.DatabaseError:
                pass
        self._db.close()
        self._unlock()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- runs -------------------------------------------------------------
    def begin_run(self, run_id: str, spec: RunSpec, identity: Mapping[str, Any], provenance: Mapping[str, Any]) -> None:
        """Record the run (once) and this invocation of it (every time).

        Secrets (keys named like ``api_key`` / ``token`` / ``password``, URL userinfo)
        are redacted from the spec, identity and provenance first (harness/util/redact.py).
        """
        now = time.time()
        try:
            self._begin_run(run_id, spec, identity, provenance, now)
        except sqlite3.DatabaseError as exc:
            raise StoreError(_db_error("write to", self.path, exc, self.command)) from None

    def _begin_run(self, run_id: str, spec: RunSpec, identity: Mapping[str, Any], provenance: Mapping[str, Any],
                   now: float) -> None:
        with self._db:
            for row in _execute(
                self._db, "INSERT OR IGNORE INTO runs (run_id, variant, suite, split, identity, spec, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING rowid",
                (run_id, spec.variant, spec.suite, spec.split,
                 json.dumps(redact(dict(identity)), sort_keys=True, default=str),
                 json.dumps(redact(json.loads(spec.to_json())), sort_keys=True), now),
            ).fetchall():
                self._seal("runs", row[0])
            for row in _execute(
                self._db, "INSERT INTO sessions (run_id, started_at, provenance) VALUES (?, ?, ?) RETURNING rowid",
                (run_id, now, json.dumps(redact(json.loads(json.dumps(provenance, default=str))), sort_keys=True)),
            ).fetchall():
                self._seal("sessions", row[0])

    @_reads
    def runs(self) -> "pd.DataFrame":
        """One row per run, with the time its latest session started."""
        return queries.runs(self._db)

    @_reads
    def provenance(self, run_id: str) -> list[dict[str, Any]]:
        return queries.provenance(self._db, run_id)

    # --- episodes ---------------------------------------------------------
    @_reads
    def run_counts(self, run_id: str) -> tuple[int, int, int]:
        """(episodes stored, successes, error records) of one run."""
        return queries.run_counts(self._db, run_id)

    @_reads
    def run_failures(self, run_id: str) -> dict[str, int]:
        """The agent's failures in one run's stored episodes, by kind: ``errors`` (runtime error
        records other than timeouts), ``timeouts`` (timeout error records, and episodes the env's
        wall-clock limit ended: termination ``episode_timeout``), ``output_error_episodes`` (episodes with at
        least one agent output that yielded no usable action) and ``output_errors`` (those outputs,
        ``planner_output_errors`` summed), ``empty_plans`` (failed episodes that an empty plan ended:
        where stopping is how an agent finishes, a successful stop is no failure), ``fallback_episodes`` (episodes in
        which the agent ran its fallback actions: ``extra["fallback_plans"]``)."""
        return queries.run_failures(self._db, run_id)

    @_reads
    def stored_keys(self, run_id: str) -> set[tuple[str, str, str, int]]:
        """The keys of every stored episode of the run, errored ones included."""
        return queries.stored_keys(self._db, run_id)

    def completed_keys(self, run_id: str) -> set[tuple[str, str, str, int]]:
        return queries.completed_keys(self._db, run_id)

    def add(self, record: EpisodeRecord, transcript: Sequence[Mapping[str, Any]] = ()) -> bool:
        """Commit one record (and its transcript). False if a completed row already had its key."""
        return self.add_many([(record, transcript)]) == 1

    def add_many(self, items: Sequence[EpisodeRecord | tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]]) -> int:
        """Commit records (optionally with transcripts) in one transaction; returns rows written.

        A transcript is written only with its record: when a completed row
        already holds the key, both are left as they were.
        """
        now = time.time()
        written = 0
        with self._db:
            for item in items:
                record, transcript = item if isinstance(item, tuple) else (item, ())
                row = record.to_dict()
                row["success"] = int(bool(row["success"]))
                row["empty_plan"] = int(bool(row["empty_plan"]))
                # Known secret values (a key a server echoed) in any text the record carries.
                row["extra"] = redact_text(_encode_extra(row["extra"]))
                row["values"] = _encode_extra(row["values"])
                if row["error_message"] is not None:  # an exception naming a URL with credentials
                    row["error_message"] = redact_text(str(row["error_message"]))
                stored = _execute(self._db, _INSERT_SQL, [row[c] for c in _RECORD_FIELDS] + [now]).fetchall()
                n = len(stored)
                written += n
                if n:
                    self._check_unique(row["run_id"], stored[0])
                    self._seal("episodes", stored[0][0])
                if n and transcript:  # a rerun's transcript replaces the failed attempt's
                    key = [_storable(row[c]) for c in _KEY]
                    self._db.execute(
                        f"DELETE FROM transcripts WHERE {' AND '.join(f'{c}=?' for c in _KEY)}", key)
                    for entry in transcript:
                        # A long raw output or prompt waited on disk (harness/util/spool.py): read
                        # back here, one at a time.
                        values = [unspool(entry.get(c)) for c in _TRANSCRIPT_COLUMNS]
                        if values[-1] is not None and not isinstance(values[-1], str):
                            values[-1] = json.dumps(values[-1], default=str)
                        values = [redact_text(v) if isinstance(v, str) else v for v in values]
                        meta = {k: v for k, v in entry.items() if k not in _TRANSCRIPT_COLUMNS}
                        for (rowid,) in _execute(self._db, _TRANSCRIPT_SQL, key + values + [
                                SCHEMA_VERSION, redact_text(json.dumps(meta, default=str)) if meta else None]).fetchall():
                            self._seal("transcripts", rowid)
        return written

    def _check_unique(self, run_id: Any, stored: Sequence[Any]) -> None:
        """Before commit: the row just written for a key is the row that held it at open, if one did.

        ``stored`` is (rowid, suite, split, episode_id, seed) as SQLite stored them. The
        rows of ``run_id`` present at open were read by a table scan (not through the
        key's index), so an index that lost a key cannot make a second row: the write
        raises and its transaction is rolled back.
        """
        known = self._rowids.get(run_id)
        if known is None:
            known = self._rowids[run_id] = {
                hash(tuple(r[1:])): r[0] for r in self._db.execute(
                    "SELECT rowid, suite, split, episode_id, seed FROM episodes NOT INDEXED WHERE run_id=?",
                    (_storable(run_id),))}
        rowid, key = stored[0], hash(tuple(stored[1:]))
        if known.setdefault(key, rowid) != rowid:
            raise StoreError(damaged_message(self.path, f"the key index lost episode {stored[3]!r} seed {stored[4]}: "
                                             "a second row was about to be written; nothing was"))

    def writer(self, interval_s: float = 0.25, watchdog_s: float = 1.0) -> "RecordWriter":
        """A writer on this store (see :class:`RecordWriter`)."""
        return RecordWriter(self, interval_s, watchdog_s)

    @_reads
    def transcripts(self, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Transcript rows (one per agent call that produced model output), in call order."""
        return queries.transcripts(self._db, run_ids)

    def frame(self, run_ids: Iterable[str] | None = None) -> "pd.DataFrame":
        """Records as a DataFrame whose columns are the EpisodeRecord fields."""
        return queries.frame(self._db, self.path, self._columns, run_ids)

    def records(self, run_ids: Iterable[str] | None = None) -> list[EpisodeRecord]:
        """The records as stored: read straight from SQLite (no pandas), so NULL stays
        None and integers stay integers."""
        return queries.records(self._db, self.path, self._columns, run_ids)

    # --- judgements (harness/judging/) ---------------------------------------
    def judged_keys(self, judge_id: str) -> set[tuple[str, str, str, str, int]]:
        """(run_id, suite, split, episode_id, seed) of the answers ``judge_id`` has a verdict on
        (``ok`` or ``unreadable``; an ``error`` row is judged again by a rerun)."""
        return queries.judged_keys(self._db, judge_id)

    def add_judgement(self, row: Mapping[str, Any]) -> bool:
        """Store one judged answer (committed at once). A verdict is never overwritten; an
        ``error`` row is replaced by a later attempt. True when the row was written."""
        cols = list(_JUDGEMENT_COLUMNS)
        # Known secrets (a key the judge server echoed in an error or a verdict) in every text.
        values = [redact_text(v) if isinstance(v, str) else v for v in (row.get(c) for c in cols)]
        sql = (f"INSERT INTO judgements ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
               f"ON CONFLICT ({', '.join(_KEY)}, judge_id) DO UPDATE SET "
               + ", ".join(f"{c}=excluded.{c}" for c in cols[6:])
               + " WHERE judgements.status = 'error' RETURNING rowid")
        try:
            with self._db:
                written = _execute(self._db, sql, values).fetchall()
                for (rowid,) in written:
                    self._seal("judgements", rowid)
                return bool(written)
        except sqlite3.DatabaseError as exc:
            raise StoreError(_db_error("write to", self.path, exc, self.command)) from None


    @_reads
    def judgements(self, judge_id: str | None = None) -> "pd.DataFrame":
        """One row per judged answer: the answer's key, ``judge_id``, ``judge`` (its name),
        ``identity`` and ``values`` (dicts), ``status``, ``reason``, ``raw_reply``, ``prompt``,
        ``meta`` (dict: latency_s, tokens, output_truncated), ``judged_at``."""
        return queries.judgements(self._db, judge_id)

    @_reads
    def judges(self) -> list[tuple[str, dict[str, Any]]]:
        """Every judge with rows in this store: (judge_id, identity), in order of first use."""
        return queries.judges(self._db)
