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

import fcntl
import json
import os
import shutil
import socket
import stat
import sqlite3
import tempfile
import threading
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from harness.util.redact import redact, redact_text
from harness.util.spool import unspool
from harness.types import SCHEMA_VERSION, TERMINATION_EPISODE_TIMEOUT, EpisodeRecord, RunSpec

if TYPE_CHECKING:  # pandas is imported where tables are built, not at start-up
    import pandas as pd

STORE_FILENAME = "results.sqlite"
#: ``PRAGMA application_id`` of harness stores ("ETH1"): marks the file as ours.
APPLICATION_ID = 0x45544831
#: Tables a store has; a file with other tables and none of these is not a store.
_STORE_TABLES = {"meta", "runs", "sessions", "episodes"}
#: Tables whose every row carries ``crc``: a CRC-32 of the row's stored values (see :func:`_row_crc`).
_CRC_TABLES = ("runs", "sessions", "episodes", "transcripts", "judgements")
#: Columns holding JSON; checked to decode where a row has no checksum (an older store).
_JSON_COLUMNS = {"runs": ("identity", "spec"), "sessions": ("provenance",), "episodes": ("extra", "values"),
                 "transcripts": ("meta",), "judgements": ("identity", "vals", "meta")}
#: The unique key of each table's rows (besides rowid); a key stored twice is damage.
_UNIQUE_KEYS = {"meta": ("key",), "runs": ("run_id",),
                "episodes": ("run_id", "suite", "split", "episode_id", "seed"),
                "transcripts": ("run_id", "suite", "split", "episode_id", "seed", "call"),
                "judgements": ("run_id", "suite", "split", "episode_id", "seed", "judge_id")}

#: ``harness store check`` verdicts and their exit statuses (2 stays "bad input", as everywhere).
SOUND, DAMAGED, UNKNOWN_SCHEMA, NOT_A_STORE = "sound", "damaged", "unknown schema version", "not a harness store"
EXIT_STATUS = {SOUND: 0, DAMAGED: 1, UNKNOWN_SCHEMA: 3, NOT_A_STORE: 4}

_RECORD_FIELDS = [f.name for f in fields(EpisodeRecord)]


def _q(columns: Iterable[str]) -> str:
    """Column names quoted for SQL, comma-separated (``values`` is an SQL keyword)."""
    return ", ".join(f'"{c}"' for c in columns)


#: ``json.dumps(extra, sort_keys=True, default=str)`` with the encoder built once (per record, it counts).
_encode_extra = json.JSONEncoder(sort_keys=True, default=str).encode
_KEY = ("run_id", "suite", "split", "episode_id", "seed")
_INSERT_COLUMNS = _RECORD_FIELDS + ["finished_at"]
# A completed row is never overwritten; an error row is replaced by a rerun's result.
_INSERT_SQL = (
    f"INSERT INTO episodes ({_q(_INSERT_COLUMNS)}) VALUES ({', '.join('?' * len(_INSERT_COLUMNS))}) "
    f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET "
    + ", ".join(f'"{c}"=excluded."{c}"' for c in _INSERT_COLUMNS if c not in _KEY)
    + " WHERE episodes.error_kind IS NOT NULL RETURNING rowid, suite, split, episode_id, seed"
)


class StoreError(RuntimeError):
    """The store file cannot be opened or read (one-line message for the CLI)."""


def _column_type(name: str) -> str:
    if name in ("seed", "gc_satisfied", "gc_total", "steps", "agent_calls", "invalid_actions",
                "expert_length", "attempts", "schema_version", "success", "planner_output_errors",
                "empty_plan", "path_length"):
        return "INTEGER"
    if name == "wall_time_s":
        return "REAL"
    return "TEXT"


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    variant TEXT NOT NULL,
    suite TEXT NOT NULL,
    split TEXT NOT NULL,
    identity TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_at REAL NOT NULL,
    crc INTEGER
);
CREATE TABLE IF NOT EXISTS sessions (
    session_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    started_at REAL NOT NULL,
    provenance TEXT NOT NULL,
    crc INTEGER
);
CREATE TABLE IF NOT EXISTS episodes (
    {", ".join(f'"{n}" {_column_type(n)}' for n in _RECORD_FIELDS)},
    finished_at REAL NOT NULL,
    crc INTEGER,
    PRIMARY KEY ({", ".join(_KEY)})
);
CREATE TABLE IF NOT EXISTS transcripts (
    run_id TEXT NOT NULL, suite TEXT NOT NULL, split TEXT NOT NULL, episode_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    call INTEGER NOT NULL,
    step INTEGER,
    raw_output TEXT,
    output_error TEXT,
    actions INTEGER,
    prompt TEXT,
    schema_version INTEGER NOT NULL,
    meta TEXT,
    crc INTEGER,
    PRIMARY KEY (run_id, suite, split, episode_id, seed, call)
);
""" + """
CREATE TABLE IF NOT EXISTS judgements (
    run_id TEXT NOT NULL, suite TEXT NOT NULL, split TEXT NOT NULL, episode_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    judge_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    identity TEXT NOT NULL,
    status TEXT NOT NULL,
    vals TEXT,
    reason TEXT,
    raw_reply TEXT,
    prompt TEXT,
    meta TEXT,
    judged_at REAL NOT NULL,
    crc INTEGER,
    PRIMARY KEY (run_id, suite, split, episode_id, seed, judge_id)
);
"""

#: The keys of :meth:`ResultStore.run_failures`, in the order the console prints them.
FAILURE_COUNTS = ("errors", "timeouts", "output_error_episodes", "output_errors", "empty_plans", "fallback_episodes")

#: Columns added since schema 1, with the value old rows get (2: the first two; 3: path_length).
_ADDED_COLUMNS = {"planner_output_errors": "0", "empty_plan": "0", "path_length": "NULL", "values": "'{}'"}
_TRANSCRIPT_COLUMNS = ("call", "step", "raw_output", "output_error", "actions", "prompt")
#: Any other key of a transcript entry (cost: latency_s, batch, prompt_tokens, output_tokens;
#: frames: images) travels as JSON in the ``meta`` column (added in place to older stores).
_TRANSCRIPT_SQL = (
    f"INSERT OR REPLACE INTO transcripts ({', '.join(_KEY)}, {', '.join(_TRANSCRIPT_COLUMNS)}, schema_version, meta) "
    f"VALUES ({', '.join('?' * (len(_KEY) + len(_TRANSCRIPT_COLUMNS) + 2))}) RETURNING rowid"
)


#: SQLite's INTEGER range; a Python int beyond it is stored as its decimal text.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1


def _storable(value: Any) -> Any:
    """``value`` as SQLite can bind it, losslessly where it can be.

    Text with lone surrogates (a model server's ``"\\ud800"`` escape, an exception
    message) is not UTF-8: it is stored with each surrogate written as the escape
    ``\\udXXX`` (Python's ``backslashreplace``), as JSON writes it. Integers beyond
    64 bits are stored as their decimal text with an ``n`` suffix (``"9223372036854775808n"``,
    kept text: a bare number would be rounded to a REAL); other objects as ``str()``.
    """
    if value is None or type(value) is float or type(value) is bytes:
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, int):
        # A bare decimal beyond 64 bits would be turned into a REAL (lossy) by an INTEGER
        # column's affinity: the ``n`` suffix (JavaScript's BigInt literal) keeps it text.
        return int(value) if _INT_MIN <= value <= _INT_MAX else f"{value}n"
    if isinstance(value, float):
        return float(value)
    return _storable(str(value))


#: What SQLite raises when a value cannot be bound as it is (see :func:`_storable`).
_UNBINDABLE = (UnicodeEncodeError, OverflowError, sqlite3.InterfaceError, sqlite3.ProgrammingError)


def _execute(db: sqlite3.Connection, sql: str, values: Sequence[Any]) -> sqlite3.Cursor:
    """``db.execute``; values SQLite cannot bind are made storable and the statement is
    retried (the fast path costs nothing for the usual record)."""
    try:
        return db.execute(sql, values)
    except _UNBINDABLE:
        return db.execute(sql, [_storable(v) for v in values])


def _ro_uri(path: Path) -> str:
    """A read-only SQLite URI for ``path``, every special character escaped.

    ``#``, ``?`` and ``%`` in a file name would otherwise end the path (fragment,
    query) or be decoded: the URI must name exactly the path the user gave.
    """
    return "file:" + urllib.parse.quote(str(path.resolve()), safe="/") + "?mode=ro"


def _reads(method: Any) -> Any:
    """A store read whose SQLite error (a damaged page found late) is a one-line StoreError."""
    import functools

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

    Opening verifies the whole store first (:func:`inspect_db`, the same verdict as
    ``harness store check``): a store that is damaged, of an unknown schema version or
    not a harness store is refused with a one-line :class:`StoreError` before anything
    is read or written. A writable store is held by one process at a time (an
    exclusive ``flock`` on ``results.sqlite.lock``, released by the kernel when the
    process dies, so a rerun after a crash takes over). A read-only store reads one
    snapshot: a read transaction is held from the check to :meth:`close`, so a table
    printed while a run writes sees the store as it was when it was opened.
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
            self._open_readonly()
        else:
            self._open_writable()
        self._columns = {r[1] for r in self._db.execute("PRAGMA table_info(episodes)")}

    # --- opening ------------------------------------------------------------
    def _open_readonly(self) -> None:
        odd = _not_regular(self.path)
        if odd is not None:
            raise StoreError(odd)
        if not self.path.is_file():
            raise StoreError(f"no result store at {self.path} (run `harness run ...` with this output directory first)")
        try:
            self._db = sqlite3.connect(_ro_uri(self.path), uri=True)
            self._db.execute("BEGIN")  # one snapshot from the check to close()
            self._verify(self.path)
        except sqlite3.OperationalError as exc:
            # A WAL-mode store (a run in progress, or one killed) in a directory we
            # cannot write: SQLite cannot create its -shm there. Read a private
            # copy of the file and its WAL instead: same rows, nothing left behind.
            if "unable to open" not in str(exc) and "readonly" not in str(exc):
                raise StoreError(_db_error("read", self.path, exc)) from None
            self._db.close()
            self._db = self._open_copy()
        except sqlite3.DatabaseError as exc:
            raise StoreError(_db_error("read", self.path, exc)) from None

    def _open_copy(self) -> sqlite3.Connection:
        self._tmpdir = tempfile.mkdtemp(prefix="harness-store-")
        try:
            for suffix in ("", "-wal"):
                src = Path(str(self.path) + suffix)
                if src.is_file():
                    shutil.copyfile(src, Path(self._tmpdir) / (STORE_FILENAME + suffix))
            db = sqlite3.connect(Path(self._tmpdir) / STORE_FILENAME)
            self._db = db
            db.execute("BEGIN")
            self._verify(Path(self._tmpdir) / STORE_FILENAME)
            return db
        except (OSError, sqlite3.DatabaseError) as exc:
            raise StoreError(_db_error("read", self.path, exc)) from None

    def _verify(self, file: Path) -> None:
        """StoreError (one line) unless :func:`inspect_db` finds the store sound."""
        verdict = inspect_db(self._db, file)
        if verdict.kind == NOT_A_STORE or (verdict.kind == DAMAGED and verdict.problems
                                           and ("header" in verdict.problems[0]
                                                or verdict.problems[0].startswith(UNREADABLE_SCHEMA))):
            # What `harness store check` says, one verdict for every command: a store whose
            # header alone is damaged is "damaged" (and repairable), not "not a harness store".
            second = inspect_store(self.path)
            if second.kind == DAMAGED:
                verdict = second
        if verdict.kind != SOUND:
            raise StoreError(verdict.open_message(self.path))
        self.schema_version = verdict.schema_version

    def _open_writable(self) -> None:
        new_dirs = _missing_dirs(self.path.parent)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _remove_empty(new_dirs)
            raise StoreError(f"cannot create output directory {self.path.parent}: {exc.strerror or exc}") from None
        odd = _not_regular(self.path)
        if odd is not None:  # before the lock and SQLite: a FIFO would read as an I/O error
            _remove_empty(new_dirs)
            raise StoreError(odd)
        created = not self.path.exists()
        existed = self.path.is_file() and self.path.stat().st_size > 0
        try:
            self._lock_fd = _lock(self.path, self.command)  # before reading a byte: one writer at a time
            self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)  # RecordWriter's thread
            _register_crc(self._db)
            if existed:
                self._verify(self.path)  # refuse a foreign, unknown or damaged file before writing a byte
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable against process crashes (SIGKILL) in WAL mode;
            # only an OS crash / power loss can lose the last commits.
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                self._db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                self._migrate()
            self.schema_version = SCHEMA_VERSION
        except (sqlite3.DatabaseError, StoreError, OSError) as exc:
            if getattr(self, "_db", None) is not None:
                self._db.close()
            if created:  # e.g. a full disk: leave no empty or half-made store behind
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
            self._unlock()
            _remove_empty(new_dirs)  # ... nor an empty output folder
            if isinstance(exc, StoreError):
                raise
            if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot open result store {self.path}: {exc.strerror or exc} "
                                 f"({_space_hint(self.command)})") from None
            raise StoreError(_db_error("open", self.path, exc, self.command)) from None

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            _unlock(self.path, self._lock_fd)
            self._lock_fd = None

    def _migrate(self) -> None:
        """Bring an older store up to :data:`SCHEMA_VERSION` (inside the open transaction)."""
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(episodes)")}
        added = False
        for name, default in _ADDED_COLUMNS.items():
            if name not in columns:
                self._db.execute(f'ALTER TABLE episodes ADD COLUMN "{name}" {_column_type(name)} DEFAULT {default}')
                added = True
                if name == "empty_plan":
                    self._db.execute("UPDATE episodes SET empty_plan = (termination = 'empty_plan')")
        if added and "crc" in columns:  # the rows' checksums cover every column: re-seal (verified above)
            self._db.execute(f"UPDATE episodes SET crc = {_crc_sql(self._db, 'episodes')}")
        if not any(r[1] == "meta" for r in self._db.execute("PRAGMA table_info(transcripts)")):
            self._db.execute("ALTER TABLE transcripts ADD COLUMN meta TEXT")  # additive: no schema bump
        # Row checksums (additive too): an older store, verified above, gets them for every row.
        for table in _CRC_TABLES:
            if "crc" not in {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN crc INTEGER")
                self._db.execute(f"UPDATE {table} SET crc = {_crc_sql(self._db, table)}")
        self._db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

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
        import pandas as pd

        return pd.read_sql_query(
            "SELECT r.run_id, r.variant, r.suite, r.split, r.created_at, r.identity, r.spec, "
            "MAX(s.started_at) AS last_started_at, COUNT(s.session_id) AS sessions "
            "FROM runs r LEFT JOIN sessions s USING (run_id) GROUP BY r.run_id ORDER BY r.created_at",
            self._db,
        )

    @_reads
    def provenance(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT provenance FROM sessions WHERE run_id=? ORDER BY session_id", (run_id,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    # --- episodes ---------------------------------------------------------
    @_reads
    def run_counts(self, run_id: str) -> tuple[int, int, int]:
        """(episodes stored, successes, error records) of one run."""
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(success), 0), COALESCE(SUM(error_kind IS NOT NULL), 0) "
            "FROM episodes WHERE run_id=?", (run_id,)).fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    @_reads
    def run_failures(self, run_id: str) -> dict[str, int]:
        """The agent's failures in one run's stored episodes, by kind: ``errors`` (runtime error
        records other than timeouts), ``timeouts`` (timeout error records, and episodes the env's
        wall-clock limit ended: termination ``episode_timeout``), ``output_error_episodes`` (episodes with at
        least one agent output that yielded no usable action) and ``output_errors`` (those outputs,
        ``planner_output_errors`` summed), ``empty_plans`` (failed episodes that an empty plan ended:
        where stopping is how an agent finishes, a successful stop is no failure), ``fallback_episodes`` (episodes in
        which the agent ran its fallback actions: ``extra["fallback_plans"]``)."""
        row = self._db.execute(
            "SELECT COALESCE(SUM(error_kind IS NOT NULL AND error_kind != 'timeout'), 0), "
            "COALESCE(SUM(error_kind = 'timeout' OR (error_kind IS NULL AND NOT success AND termination = ?)), 0), "
            "COALESCE(SUM(planner_output_errors > 0), 0), "
            "COALESCE(SUM(planner_output_errors), 0), COALESCE(SUM(empty_plan AND NOT success), 0), "
            "COALESCE(SUM(CASE WHEN json_valid(extra) THEN COALESCE(json_extract(extra, '$.fallback_plans'), 0) > 0 END), 0) "
            "FROM episodes WHERE run_id=?", (TERMINATION_EPISODE_TIMEOUT, run_id)).fetchone()
        return dict(zip(FAILURE_COUNTS, map(int, row)))

    @_reads
    def stored_keys(self, run_id: str) -> set[tuple[str, str, str, int]]:
        """The keys of every stored episode of the run, errored ones included."""
        rows = self._db.execute("SELECT suite, split, episode_id, seed FROM episodes WHERE run_id=?", (run_id,))
        return {tuple(r) for r in rows}  # type: ignore[misc]

    def completed_keys(self, run_id: str) -> set[tuple[str, str, str, int]]:
        rows = self._db.execute(
            "SELECT suite, split, episode_id, seed FROM episodes WHERE run_id=? AND error_kind IS NULL",
            (run_id,),
        )
        return {tuple(r) for r in rows}  # type: ignore[misc]

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
        if "transcripts" not in {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}:
            return []  # a schema-1 store read as it is
        has_meta = any(r[1] == "meta" for r in self._db.execute("PRAGMA table_info(transcripts)"))
        sql = (f"SELECT {', '.join(_KEY)}, {', '.join(_TRANSCRIPT_COLUMNS)}, "
               f"{'meta' if has_meta else 'NULL'} AS meta FROM transcripts")
        params: list[str] = []
        if run_ids is not None:
            params = list(run_ids)
            sql += f" WHERE run_id IN ({', '.join('?' * len(params))})"
        sql += f" ORDER BY {', '.join(_KEY)}, call"
        cur = self._db.execute(sql, params)
        names = [d[0] for d in cur.description]
        out = []
        for row in cur:
            entry = dict(zip(names, row))
            meta = entry.pop("meta")
            out.append({**json.loads(meta), **entry} if meta else entry)
        return out

    # --- judgements (harness/judging.py) -------------------------------------
    def _has_judgements(self) -> bool:
        return "judgements" in {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}

    def judged_keys(self, judge_id: str) -> set[tuple[str, str, str, str, int]]:
        """(run_id, suite, split, episode_id, seed) of the answers ``judge_id`` has a verdict on
        (``ok`` or ``unreadable``; an ``error`` row is judged again by a rerun)."""
        if not self._has_judgements():
            return set()
        rows = self._db.execute(f"SELECT {', '.join(_KEY)} FROM judgements WHERE judge_id=? AND status != 'error'",
                                (judge_id,))
        return {tuple(r) for r in rows}  # type: ignore[misc]

    def add_judgement(self, row: Mapping[str, Any]) -> bool:
        """Store one judged answer (committed at once). A verdict is never overwritten; an
        ``error`` row is replaced by a later attempt. True when the row was written."""
        cols = list(_KEY) + ["judge_id", "judge", "identity", "status", "vals", "reason", "raw_reply",
                             "prompt", "meta", "judged_at"]
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
        import pandas as pd

        cols = list(_KEY) + ["judge_id", "judge", "identity", "status", "vals", "reason", "raw_reply",
                             "prompt", "meta", "judged_at"]
        if not self._has_judgements():
            return pd.DataFrame(columns=[c if c != "vals" else "values" for c in cols])
        sql = f"SELECT {', '.join(cols)} FROM judgements"
        params: list[str] = []
        if judge_id is not None:
            sql, params = sql + " WHERE judge_id = ?", [judge_id]
        df = pd.read_sql_query(sql + f" ORDER BY judge_id, {', '.join(_KEY)}", self._db, params=params)
        for c in ("identity", "vals", "meta"):
            df[c] = [json.loads(x) if isinstance(x, str) else {} for x in df[c]]
        return df.rename(columns={"vals": "values"})

    @_reads
    def judges(self) -> list[tuple[str, dict[str, Any]]]:
        """Every judge with rows in this store: (judge_id, identity), in order of first use."""
        if not self._has_judgements():
            return []
        rows = self._db.execute("SELECT judge_id, identity, MIN(judged_at) AS t FROM judgements "
                                "GROUP BY judge_id ORDER BY t").fetchall()
        return [(r[0], json.loads(r[1])) for r in rows]

    def _episodes_query(self, run_ids: Iterable[str] | None) -> tuple[str, list[str]]:
        """SELECT of the EpisodeRecord fields in key order, optionally for some runs."""
        # A schema-1 store read without migrating: its rows get the defaults of newer columns.
        select = [f'"{c}"' if c in self._columns else f'{_ADDED_COLUMNS[c]} AS "{c}"' for c in _RECORD_FIELDS]
        sql = f"SELECT {', '.join(select)} FROM episodes"
        params: list[str] = []
        if run_ids is not None:
            params = list(run_ids)
            sql += f" WHERE run_id IN ({', '.join('?' * len(params))})"
        return sql + " ORDER BY run_id, suite, split, episode_id, seed", params

    def frame(self, run_ids: Iterable[str] | None = None) -> "pd.DataFrame":
        """Records as a DataFrame whose columns are the EpisodeRecord fields."""
        import pandas as pd

        sql, params = self._episodes_query(run_ids)
        try:
            df = pd.read_sql_query(sql, self._db, params=params)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise StoreError(f"cannot read result store {self.path}: {exc}") from None
        df["success"] = df["success"].astype(bool)
        df["empty_plan"] = df["empty_plan"].astype(bool)
        df["extra"] = [json.loads(x) if isinstance(x, str) else {} for x in df["extra"]]
        df["values"] = [json.loads(x) if isinstance(x, str) else {} for x in df["values"]]
        return df

    def records(self, run_ids: Iterable[str] | None = None) -> list[EpisodeRecord]:
        """The records as stored: read straight from SQLite (no pandas), so NULL stays
        None and integers stay integers."""
        sql, params = self._episodes_query(run_ids)
        try:
            rows = self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read result store {self.path}: {exc}") from None
        out = []
        for row in rows:
            data = dict(zip(_RECORD_FIELDS, row))
            data["success"] = bool(data["success"])
            data["empty_plan"] = bool(data["empty_plan"])
            data["extra"] = json.loads(data["extra"]) if isinstance(data["extra"], str) else {}
            data["values"] = json.loads(data["values"]) if isinstance(data["values"], str) else {}
            out.append(EpisodeRecord.from_dict(data))
        return out


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

    def __init__(self, store: ResultStore, interval_s: float = 0.25, watchdog_s: float = 1.0):
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


# --- one writer -------------------------------------------------------------------------------
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


# --- row checksums ----------------------------------------------------------------------------
def _row_crc(*values: Any) -> int:
    """CRC-32 of a row's stored values (in column-name order), as Python reads them back.

    Computed by SQLite's own call (``harness_crc(...)`` in an UPDATE of the row just written),
    so the value is that of what SQLite stored after its type affinity, and recomputed the
    same way in Python when the store is checked. A CRC-32 catches every burst of up to 32
    flipped bits in a row; a cut or zeroed page changes its rows' values, and so their CRC.
    """
    return zlib.crc32(repr(values).encode("utf-8", "surrogatepass"))


def _register_crc(db: sqlite3.Connection) -> None:
    db.create_function("harness_crc", -1, _row_crc, deterministic=True)


def _crc_columns(db: sqlite3.Connection, table: str) -> list[str]:
    return sorted(r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] != "crc")


def _crc_sql(db: sqlite3.Connection, table: str) -> str:
    return f"harness_crc({_q(_crc_columns(db, table))})"


# --- check and repair -------------------------------------------------------------------------
_SALVAGED_TABLES = ("meta", "runs", "sessions", "episodes", "transcripts", "judgements")
#: What reading damaged data raises: SQLite's errors, and text that is not UTF-8.
_READ_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Problems kept per check (the count of all of them is kept too).
_MAX_PROBLEMS = 20


@dataclass
class Verdict:
    """What ``harness store check`` says of a store: :data:`SOUND`, :data:`DAMAGED`,
    :data:`UNKNOWN_SCHEMA` or :data:`NOT_A_STORE`, with the problems found (first ones)."""

    kind: str
    problems: list[str] = field(default_factory=list)
    schema_version: int | None = None
    #: Problems found in all (``problems`` keeps the first :data:`_MAX_PROBLEMS`).
    count: int = 0
    #: False when ``repair`` cannot salvage anything (SQLite cannot read the schema even as repair reads it).
    salvageable: bool = True

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.kind]

    def add(self, problem: str) -> None:
        self.count += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(problem)

    def open_message(self, path: Path) -> str:
        """The one line ``run`` / ``table`` / ``report`` refuse this store with."""
        if self.kind == DAMAGED and not self.salvageable:
            return f"result store {path} is damaged ({self.problems[0]}); {UNSALVAGEABLE}"
        if self.kind == DAMAGED:
            return damaged_message(path, self.problems[0] if self.problems else "unknown damage")
        if self.kind == UNKNOWN_SCHEMA:
            upgrade = " (upgrade the harness)" if self.schema_version and self.schema_version > SCHEMA_VERSION else ""
            return (f"result store {path} {self.problems[0]}; this harness reads 1 to {SCHEMA_VERSION}{upgrade}; "
                    f"`harness store check {path.parent}` says what it holds")
        return (f"{path} is not a harness result store ({self.problems[0]}); "
                "give `out=` a new or harness-made output directory")

    def line(self, where: str) -> str:
        """The one line ``harness store check`` prints."""
        if self.kind == SOUND:
            return (f"{where}: sound (schema version {self.schema_version}; every table checked by SQLite, "
                    "every row decoded and its checksum verified)")
        if self.kind == DAMAGED and not self.salvageable:
            return f"{where}: damaged ({self.count} problem(s)): {self.problems[0]}; {UNSALVAGEABLE}"
        if self.kind == DAMAGED:
            return (f"{where}: damaged ({self.count} problem(s)): {self.problems[0]}; "
                    f"`harness store repair {where}` copies every sound record into a new store")
        if self.kind == UNKNOWN_SCHEMA:
            return f"{where}: unknown schema version: the store {self.problems[0]}; this harness reads 1 to {SCHEMA_VERSION}"
        return f"{where}: not a harness store ({self.problems[0]})"


def inspect_db(db: sqlite3.Connection, file: Path) -> Verdict:
    """The verdict on the store open in ``db`` (whose main file is ``file``); reads every byte once.

    In order: the file's header (SQLite's magic, our application id) and size (a whole
    number of pages), the tables (a file of other tables is not a store), the schema
    version, SQLite's full ``integrity_check`` (b-trees, free list, every index against
    its table, NOT NULL), then every row of every table read through a table scan: each
    text must decode, each row's checksum must match (older rows without one: each JSON
    column must decode), and no key may be stored twice. Cost on 100,000 episodes with
    300,000 transcript rows: see docs/reliability.md.
    """
    try:
        with open(file, "rb") as fh:
            head = fh.read(100)
        size = file.stat().st_size
    except OSError as exc:
        return Verdict(DAMAGED, [f"cannot read {file}: {exc.strerror or exc}"], count=1)
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return Verdict(NOT_A_STORE, ["not an SQLite database" if head else "an empty file"], count=1)
    app_id = int.from_bytes(head[68:72], "big")
    verdict = Verdict(SOUND)
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        verdict.add(f"its header names an impossible page size {page}")
    elif size % page:
        verdict.add(f"the file is cut short: {size} bytes is not a whole number of {page}-byte pages")
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except _READ_ERRORS as exc:
        if app_id != APPLICATION_ID:
            return Verdict(NOT_A_STORE, [f"{UNREADABLE_SCHEMA}: {exc}"], count=1)
        verdict.add(f"{UNREADABLE_SCHEMA}: {exc}")
        verdict.kind = DAMAGED
        return verdict
    ours = _STORE_TABLES <= tables
    if not ours and app_id != APPLICATION_ID:
        listed = ", ".join(sorted(tables)) or "no tables"
        return Verdict(NOT_A_STORE, [f"it has {listed}"], count=1)
    if ours and app_id not in (0, APPLICATION_ID):
        verdict.add(f"its header's application id is {app_id:#x}, not a harness store's {APPLICATION_ID:#x}")
    for missing in sorted(_STORE_TABLES - tables):
        verdict.add(f"table {missing} is missing")
    try:
        for (text,) in db.execute(f"PRAGMA integrity_check({_MAX_PROBLEMS})"):
            for problem in str(text).splitlines():  # one row may hold several lines
                if problem.strip() and problem != "ok" and not problem.startswith("***"):
                    verdict.add(problem.strip())
    except _READ_ERRORS as exc:
        verdict.add(f"integrity check: {exc}")
    version: Any = None
    if "meta" in tables:
        try:  # by a table scan: a damaged index must not hide the row
            row = db.execute("SELECT value FROM meta NOT INDEXED WHERE key='schema_version'").fetchone()
        except _READ_ERRORS as exc:
            verdict.add(f"table meta: {exc}")
        else:
            version = row[0] if row else None
    if verdict.count:  # damage first: an unknown version of a damaged store may be the damage
        verdict.kind = DAMAGED
        return verdict
    try:
        number = int(version) if version is not None else None
    except (TypeError, ValueError):
        return Verdict(UNKNOWN_SCHEMA, [f"has a malformed schema_version {version!r}"], count=1)
    if number is None:
        return Verdict(UNKNOWN_SCHEMA, ["has no schema version"], count=1)
    if not 1 <= number <= SCHEMA_VERSION:
        return Verdict(UNKNOWN_SCHEMA, [f"has schema version {number}"], number, count=1)
    verdict.schema_version = number
    for table in _SALVAGED_TABLES:
        if table in tables:
            _check_unique_index(db, table, verdict)
            _check_rows(db, table, verdict)
    if verdict.count:
        verdict.kind = DAMAGED
    return verdict


def _check_unique_index(db: sqlite3.Connection, table: str, verdict: Verdict) -> None:
    """The schema declares ``table``'s key unique (the key is unique by construction)."""
    key = _UNIQUE_KEYS.get(table)
    if not key:
        return
    try:
        for _, name, unique, *_ in db.execute(f"PRAGMA index_list({table})"):
            if unique and [r[2] for r in db.execute(f"PRAGMA index_info({name})")] == list(key):
                return
    except _READ_ERRORS as exc:
        verdict.add(f"table {table}: {exc}")
        return
    verdict.add(f"table {table} no longer declares its key ({', '.join(key)}) unique")


def _check_rows(db: sqlite3.Connection, table: str, verdict: Verdict) -> None:
    """Every row of ``table``, read by a table scan: decodes, checksum (or JSON) holds, key unique."""
    try:
        cols = _crc_columns(db, table)
        has_crc = len(cols) < len([r for r in db.execute(f"PRAGMA table_info({table})")])
        json_at = [cols.index(c) for c in _JSON_COLUMNS.get(table, ()) if c in cols]
        key_at = [cols.index(c) for c in _UNIQUE_KEYS.get(table, ()) if c in cols]
        cur = db.execute(f"SELECT rowid, {'crc' if has_crc else 'NULL'}, {_q(cols)} FROM {table} NOT INDEXED")
        seen: set[int] = set()
        for rowid, crc, *values in cur:
            if has_crc and table in _CRC_TABLES:
                if crc is None:
                    verdict.add(f"table {table} row {rowid} has no checksum")
                elif crc != _row_crc(*values):
                    verdict.add(f"table {table} row {rowid} fails its checksum")
            else:
                for i in json_at:
                    if isinstance(values[i], str):
                        try:
                            json.loads(values[i])
                        except ValueError:
                            verdict.add(f"table {table} row {rowid}: column {cols[i]} is not JSON")
            if key_at:
                key = hash(tuple(values[i] for i in key_at))
                if key in seen:
                    verdict.add(f"table {table} holds the key "
                                f"{'/'.join(str(values[i]) for i in key_at)} twice (row {rowid})")
                seen.add(key)
    except _READ_ERRORS as exc:  # a damaged page, text that is not UTF-8
        verdict.add(f"table {table}: {exc}")


#: The problem named when SQLite cannot read a store's schema (its list of tables).
UNREADABLE_SCHEMA = "SQLite cannot read its schema"
#: What follows it when ``repair`` cannot read the schema either: nothing can be salvaged.
UNSALVAGEABLE = ("`harness store repair` cannot salvage it either (it reads the same schema): restore the file "
                 "from a copy, or start a new output directory")
#: Marker beside a private copy whose damaged header :func:`_rebuild_header` rewrote.
_HEADER_REBUILT = "header-rebuilt"
#: The problem ``store check`` names for a store whose header alone is damaged.
DAMAGED_HEADER = ("its header (the file's first 100 bytes) is damaged but its pages read "
                  "(the header was rebuilt on a private copy)")


def _rebuild_header(file: Path) -> bool:
    """Rewrite the 100-byte SQLite header of ``file`` (a private copy) when it is not an
    SQLite header but page 1's b-tree and the pages after it are intact: every header field
    is rebuilt from what the format fixes (https://www.sqlite.org/fileformat2.html, "The
    Database Header") or what the file shows (its size: the page size and count), with our
    application id and no free list. True when the rebuilt file reads as a harness store's
    tables; otherwise the copy is left as it was."""
    try:
        size = file.stat().st_size
        with open(file, "rb") as fh:
            original = fh.read(65536)
    except OSError:
        return False
    if len(original) < 108 or not _header_damaged(original[:100]) or original[100] not in (0x05, 0x0D):
        return False
    wal = Path(str(file) + "-wal")
    mode = 2 if wal.is_file() and wal.stat().st_size > 32 else 1
    for page in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if size % page or size < page:
            continue
        head = bytearray(100)
        head[:16] = _SQLITE_MAGIC
        head[16:18] = (1 if page == 65536 else page).to_bytes(2, "big")
        head[18], head[19] = mode, mode
        head[21], head[22], head[23] = 64, 32, 32  # payload fractions: fixed by the format
        head[24:28] = (1).to_bytes(4, "big")  # change counter
        head[28:32] = (size // page).to_bytes(4, "big")
        head[40:44] = (1).to_bytes(4, "big")  # schema cookie
        head[44:48] = (4).to_bytes(4, "big")  # schema format
        head[56:60] = (1).to_bytes(4, "big")  # UTF-8
        head[68:72] = APPLICATION_ID.to_bytes(4, "big")
        head[92:96] = (1).to_bytes(4, "big")  # version-valid-for = change counter
        major, minor, patch = sqlite3.sqlite_version_info[:3]
        head[96:100] = (major * 1_000_000 + minor * 1000 + patch).to_bytes(4, "big")
        with open(file, "r+b") as fh:
            fh.write(bytes(head))
        try:
            con = sqlite3.connect(file)
            try:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if _STORE_TABLES <= tables:
                    con.execute("SELECT count(*) FROM episodes NOT INDEXED").fetchone()
                    return True
            finally:
                con.close()
        except _READ_ERRORS:
            pass
    with open(file, "r+b") as fh:
        fh.write(original[:100])
    return False


def _header_damaged(head: bytes) -> bool:
    """The 100-byte header is not SQLite's (its magic), or a field the format fixes holds a value
    SQLite cannot read: the page size (a power of two from 512 to 65536; 1 for 65536), the file
    format versions (1 or 2), the payload fractions (64, 32, 32), the schema format number (1 to
    4: a store has tables, so never 0)."""
    if not head.startswith(_SQLITE_MAGIC):
        return True
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return (page < 512 or page > 65536 or bool(page & (page - 1)) or head[18] not in (1, 2)
            or head[19] not in (1, 2) or tuple(head[21:24]) != (64, 32, 32)
            or not 1 <= int.from_bytes(head[44:48], "big") <= 4)


def _open_raw(path: str | Path) -> tuple[sqlite3.Connection, str, Path]:
    """A private copy of a (maybe damaged) store file and its WAL, opened with plain sqlite3
    (a header alone damaged is rebuilt on the copy: :func:`_rebuild_header`)."""
    path = Path(path)
    file = path / STORE_FILENAME if path.suffix != ".sqlite" else path
    odd = _not_regular(file)
    if odd is not None:
        raise StoreError(odd)
    if not file.is_file():
        raise StoreError(f"no result store at {file}")
    tmpdir = tempfile.mkdtemp(prefix="harness-check-")
    for suffix in ("", "-wal"):
        if Path(str(file) + suffix).is_file():
            shutil.copyfile(str(file) + suffix, Path(tmpdir) / (STORE_FILENAME + suffix))
    copy = Path(tmpdir) / STORE_FILENAME
    if _rebuild_header(copy):
        (Path(tmpdir) / _HEADER_REBUILT).touch()
    return sqlite3.connect(copy), tmpdir, copy


def inspect_store(path: str | Path) -> Verdict:
    """The verdict on the store at ``path`` (an output directory or the file), read from a
    private copy (the store itself is never touched)."""
    src, tmpdir, file = _open_raw(path)
    try:
        verdict = inspect_db(src, file)
        if (Path(tmpdir) / _HEADER_REBUILT).exists() and verdict.kind in (SOUND, DAMAGED):
            problems = [p for p in verdict.problems if "is never used" not in p]  # the free list was not rebuilt
            verdict = Verdict(DAMAGED, [DAMAGED_HEADER, *problems], verdict.schema_version, count=1 + len(problems))
        if verdict.kind == DAMAGED and verdict.problems and verdict.problems[0].startswith(UNREADABLE_SCHEMA):
            try:  # as repair_store reads it: can the schema be read at all?
                src.execute("PRAGMA writable_schema=ON")
                src.execute("SELECT name FROM sqlite_master").fetchall()
            except _READ_ERRORS:
                verdict.salvageable = False
        return verdict
    finally:
        src.close()
        shutil.rmtree(tmpdir, ignore_errors=True)


def check_store(path: str | Path) -> list[str]:
    """Problems of the store at ``path``: [] when it is sound (see :func:`inspect_store`)."""
    verdict = inspect_store(path)
    return [] if verdict.kind == SOUND else [f"{verdict.kind}: {p}" if verdict.kind != DAMAGED else p
                                              for p in verdict.problems]


@dataclass
class RepairReport:
    """What :func:`repair_store` kept and dropped."""

    #: {table: (rows kept, rows lost: unreadable, failing their checksum, or duplicates)}
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Episode keys stored twice: "run/suite/split/episode_id/seed" of each row dropped.
    duplicates: list[str] = field(default_factory=list)
    #: Rows dropped because their checksum failed or a JSON column did not decode.
    corrupt: int = 0

    def get(self, table: str, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        return self.tables.get(table, default)


class RepairRefused(StoreError):
    """``repair`` will not touch this file (not a harness store, unknown schema); ``verdict`` says why."""

    def __init__(self, message: str, verdict: Verdict):
        super().__init__(message)
        self.verdict = verdict


def repair_store(path: str | Path, dest: str | Path) -> RepairReport:
    """Copy every sound row of the store at ``path`` into a new store at ``dest``.

    Each table is read whole when it can be, else row by row (rowid), skipping rows
    on damaged pages. Rows whose checksum fails (or, in an older store, whose JSON does
    not decode) are dropped; of an episode key stored twice, one row is kept -- a
    finished one over an error record, then the earlier -- and each dropped duplicate
    is named in the report. The lost count is a lower bound where a damaged page hides
    how many rows it held. The damaged store is left as it is. A file that is not a
    harness store, or of a schema version this harness does not know, is refused
    (:class:`RepairRefused`).
    """
    dest = Path(dest)
    dest_file = dest / STORE_FILENAME if dest.suffix != ".sqlite" else dest
    if dest_file.exists():
        raise StoreError(f"{dest_file} already exists: give repair a new destination")
    verdict = inspect_store(path)
    if verdict.kind in (NOT_A_STORE, UNKNOWN_SCHEMA):
        raise RepairRefused(f"{verdict.line(str(path))}; repair copies only harness stores it can read, "
                            "and wrote nothing", verdict)
    src, tmpdir, _ = _open_raw(path)
    # On the private copy only: lets SQLite read a file shorter than its header says (a cut
    # tail), which it otherwise refuses as a whole.
    src.execute("PRAGMA writable_schema=ON")
    report = RepairReport()
    try:
        try:
            src.execute("SELECT name FROM sqlite_master").fetchall()
        except _READ_ERRORS as exc:
            raise StoreError(f"nothing in {path} can be salvaged: {UNREADABLE_SCHEMA} ({exc})") from None
        with ResultStore(dest, writer="harness store repair") as out:  # a new, empty store of the current schema
            for table in _SALVAGED_TABLES:
                try:
                    cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
                except _READ_ERRORS:
                    cols = []
                has_crc = "crc" in cols
                wanted = {r[1] for r in out._db.execute(f"PRAGMA table_info({table})")} - {"crc"}
                cols = sorted(c for c in cols if c in wanted)
                if not cols:
                    report.tables[table] = (0, 0)
                    continue
                rows, lost = _salvage(src, table, ["crc" if has_crc else "NULL", *cols])
                rows, corrupt = _sound_rows(table, cols, rows, has_crc)
                report.corrupt += corrupt
                if table == "episodes":
                    rows, report.duplicates = _dedup_episodes(cols, rows)
                sql = (f"INSERT OR IGNORE INTO {table} ({_q(cols)}) "
                       f"VALUES ({', '.join('?' * len(cols))}) RETURNING rowid")
                if table == "meta":
                    rows = [r for r in rows if r[cols.index("key")] != "schema_version"]
                kept = 0
                with out._db:
                    for row in rows:
                        for (rowid,) in out._db.execute(sql, row).fetchall():
                            kept += 1
                            if table in _CRC_TABLES:
                                out._seal(table, rowid)
                report.tables[table] = (kept, lost + corrupt + len(rows) - kept
                                        + (len(report.duplicates) if table == "episodes" else 0))
    finally:
        src.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
    return report


def _sound_rows(table: str, cols: list[str], rows: list[tuple], has_crc: bool) -> tuple[list[tuple], int]:
    """Rows (without their crc) whose checksum holds, or whose JSON decodes where they have none."""
    json_at = [cols.index(c) for c in _JSON_COLUMNS.get(table, ()) if c in cols]
    out, bad = [], 0
    for crc, *values in rows:
        if has_crc and crc is not None and crc != _row_crc(*values):
            bad += 1
            continue
        try:
            for i in json_at:
                if isinstance(values[i], str):
                    json.loads(values[i])
        except ValueError:
            bad += 1
            continue
        out.append(tuple(values))
    return out, bad


def _dedup_episodes(cols: list[str], rows: list[tuple]) -> tuple[list[tuple], list[str]]:
    """One row per episode key: a finished one over an error record, then the first stored."""
    key_at = [cols.index(c) for c in _KEY]
    err = cols.index("error_kind")
    best: dict[tuple, tuple] = {}
    dropped = []
    for row in rows:  # rowid order
        key = tuple(row[i] for i in key_at)
        held = best.get(key)
        if held is None:
            best[key] = row
            continue
        if held[err] is not None and row[err] is None:
            best[key], row = row, held
        dropped.append("/".join(str(v) for v in key))
    return list(best.values()), dropped


def _salvage(src: sqlite3.Connection, table: str, cols: list[str]) -> tuple[list[tuple], int]:
    select = f"SELECT {', '.join(c if c in ('crc', 'NULL') else f'{chr(34)}{c}{chr(34)}' for c in cols)} FROM {table}"
    try:
        return src.execute(select + " ORDER BY rowid").fetchall(), 0
    except _READ_ERRORS:
        pass
    try:
        top = src.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0
    except _READ_ERRORS:
        page_size = src.execute("PRAGMA page_size").fetchone()[0]
        top = src.execute("PRAGMA page_count").fetchone()[0] * page_size // 32
    rows, lost = [], 0
    for rowid in range(1, int(top) + 1):
        try:
            row = src.execute(f"{select} WHERE rowid=?", (rowid,)).fetchone()
        except _READ_ERRORS:
            lost += 1
            continue
        if row is not None:
            rows.append(row)
    return rows, lost

