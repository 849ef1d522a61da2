"""The result store: one SQLite file (WAL) per output directory.

Each finished episode is one row, committed as soon as the episode ends, so a
crash (even SIGKILL) loses at most the episodes in flight. Rows are keyed by
(run_id, suite, split, episode_id, seed): a rerun of the same run skips keys
already completed and can never duplicate one. A row recording an error is
replaced if the episode is run again and finishes; a completed row is never
overwritten.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from harness.types import SCHEMA_VERSION, EpisodeRecord, RunSpec

STORE_FILENAME = "results.sqlite"

_RECORD_FIELDS = [f.name for f in fields(EpisodeRecord)]
_KEY = ("run_id", "suite", "split", "episode_id", "seed")
_INSERT_COLUMNS = _RECORD_FIELDS + ["finished_at"]
# A completed row is never overwritten; an error row is replaced by a rerun's result.
_INSERT_SQL = (
    f"INSERT INTO episodes ({', '.join(_INSERT_COLUMNS)}) VALUES ({', '.join('?' * len(_INSERT_COLUMNS))}) "
    f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in _INSERT_COLUMNS if c not in _KEY)
    + " WHERE episodes.error_kind IS NOT NULL"
)


class StoreError(RuntimeError):
    """The store file cannot be opened or read (one-line message for the CLI)."""


def _column_type(name: str) -> str:
    if name in ("seed", "gc_satisfied", "gc_total", "steps", "agent_calls", "invalid_actions",
                "expert_length", "attempts", "schema_version", "success"):
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
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    session_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    started_at REAL NOT NULL,
    provenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
    {", ".join(f"{n} {_column_type(n)}" for n in _RECORD_FIELDS)},
    finished_at REAL NOT NULL,
    PRIMARY KEY ({", ".join(_KEY)})
);
"""


class ResultStore:
    """A SQLite result store. ``path`` is the output directory or the file itself."""

    def __init__(self, path: str | Path, *, readonly: bool = False):
        path = Path(path)
        self.path = path / STORE_FILENAME if path.suffix != ".sqlite" else path
        if readonly:
            if not self.path.is_file():
                raise StoreError(f"no result store at {self.path} (run `harness run ...` with this output directory first)")
            uri = f"file:{self.path}?mode=ro"
            try:
                self._db = sqlite3.connect(uri, uri=True)
                self._check_version()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot read result store {self.path}: {exc}") from None
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create output directory {self.path.parent}: {exc.strerror or exc}") from None
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable against process crashes (SIGKILL) in WAL mode;
            # only an OS crash / power loss can lose the last commits.
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            self._check_version()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open result store {self.path}: {exc}") from None

    def _check_version(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else None
        if version is None or version > SCHEMA_VERSION:
            raise StoreError(
                f"result store {self.path} has schema version {version}; this harness reads up to {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- runs -------------------------------------------------------------
    def begin_run(self, run_id: str, spec: RunSpec, identity: Mapping[str, Any], provenance: Mapping[str, Any]) -> None:
        """Record the run (once) and this invocation of it (every time)."""
        now = time.time()
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, spec.variant, spec.suite, spec.split,
                 json.dumps(identity, sort_keys=True, default=str), spec.to_json(), now),
            )
            self._db.execute(
                "INSERT INTO sessions (run_id, started_at, provenance) VALUES (?, ?, ?)",
                (run_id, now, json.dumps(provenance, sort_keys=True, default=str)),
            )

    def runs(self) -> pd.DataFrame:
        """One row per run, with the time its latest session started."""
        return pd.read_sql_query(
            "SELECT r.run_id, r.variant, r.suite, r.split, r.created_at, r.identity, r.spec, "
            "MAX(s.started_at) AS last_started_at, COUNT(s.session_id) AS sessions "
            "FROM runs r LEFT JOIN sessions s USING (run_id) GROUP BY r.run_id ORDER BY r.created_at",
            self._db,
        )

    def provenance(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT provenance FROM sessions WHERE run_id=? ORDER BY session_id", (run_id,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    # --- episodes ---------------------------------------------------------
    def completed_keys(self, run_id: str) -> set[tuple[str, str, str, int]]:
        rows = self._db.execute(
            "SELECT suite, split, episode_id, seed FROM episodes WHERE run_id=? AND error_kind IS NULL",
            (run_id,),
        )
        return {tuple(r) for r in rows}  # type: ignore[misc]

    def add(self, record: EpisodeRecord) -> bool:
        """Commit one record. Returns False if a completed row already had its key."""
        return self.add_many([record]) == 1

    def add_many(self, records: Sequence[EpisodeRecord]) -> int:
        """Commit records in one transaction; returns how many rows were written."""
        now = time.time()
        rows = []
        for record in records:
            row = record.to_dict()
            row["success"] = int(bool(row["success"]))
            row["extra"] = json.dumps(row["extra"], sort_keys=True, default=str)
            rows.append([row[c] for c in _RECORD_FIELDS] + [now])
        written = 0
        with self._db:
            for values in rows:
                written += self._db.execute(_INSERT_SQL, values).rowcount
        return written

    def writer(self) -> "RecordWriter":
        """A background writer on this store's file (see :class:`RecordWriter`)."""
        return RecordWriter(self.path)

    def frame(self, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Records as a DataFrame whose columns are the EpisodeRecord fields."""
        sql = f"SELECT {', '.join(_RECORD_FIELDS)} FROM episodes"
        params: list[str] = []
        if run_ids is not None:
            ids = list(run_ids)
            sql += f" WHERE run_id IN ({', '.join('?' * len(ids))})"
            params = ids
        sql += " ORDER BY run_id, suite, split, episode_id, seed"
        try:
            df = pd.read_sql_query(sql, self._db, params=params)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise StoreError(f"cannot read result store {self.path}: {exc}") from None
        df["success"] = df["success"].astype(bool)
        df["extra"] = [json.loads(x) if isinstance(x, str) else {} for x in df["extra"]]
        return df

    def records(self, run_ids: Iterable[str] | None = None) -> list[EpisodeRecord]:
        return [EpisodeRecord.from_dict(r) for r in self.frame(run_ids).to_dict("records")]

    def latest_frame(self) -> tuple[pd.DataFrame, list[str]]:
        """Records of the newest run per (variant, suite, split), and notes on superseded runs.

        If a variant was rerun on a split with something that changes results
        (a new checkpoint, prompt or protocol), the older run is left out of
        tables and named in a note, rather than mixed in.
        """
        runs = self.runs()
        if runs.empty:
            return self.frame([]), []
        runs = runs.sort_values("last_started_at")
        latest = runs.groupby(["variant", "suite", "split"], sort=False).tail(1)
        notes = [
            f"superseded run {r.run_id} ({r.variant} on {r.suite}/{r.split}) is not shown"
            for r in runs.itertuples()
            if r.run_id not in set(latest["run_id"])
        ]
        return self.frame(latest["run_id"].tolist()), notes


_STOP = object()


class RecordWriter:
    """Commits records on a background thread with its own connection, one
    transaction per record, in the order given.

    The runner hands records over and goes on stepping episodes while SQLite
    writes (the sqlite3 module releases the GIL), so persisting costs the
    episode loop almost nothing. Records that queued up while a commit was
    running are committed together. A record is committed within milliseconds
    of :meth:`add`; until then it counts as in flight. :meth:`close` (or leaving
    the ``with`` block, also on an exception) waits until every record handed
    over is committed. A write error is raised from the next ``add``/``close``.
    """

    def __init__(self, path: Path):
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(path,), name="harness-store-writer", daemon=True)
        self._thread.start()
        self._ready.wait()
        self._raise()

    def _run(self, path: Path) -> None:
        try:
            store = ResultStore(path)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            stop = False
            while not stop:
                # Group commit: everything already queued goes in one transaction;
                # when the writer keeps up, that is one record per commit.
                batch = [self._queue.get()]
                while len(batch) < 256:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                if batch[-1] is _STOP:
                    stop = True
                    batch.pop()
                if batch and self._error is None:
                    try:
                        store.add_many(batch)
                    except BaseException as exc:  # noqa: BLE001
                        self._error = exc
        finally:
            store.close()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise StoreError(f"writing to the result store failed: {error}") from error

    def add(self, record: EpisodeRecord) -> None:
        self._raise()
        if not self._thread.is_alive():
            raise StoreError("the result store writer has stopped")
        self._queue.put(record)

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
