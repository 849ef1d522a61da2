"""The store's schema: its tables and columns, the SQL that writes episodes and transcripts,
and how a value is made storable (what SQLite binds as it is, or losslessly as text)."""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness.types import EpisodeRecord

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


#: Every table a store has, in the order ``check`` reads and ``repair`` copies them.
_SALVAGED_TABLES = ("meta", "runs", "sessions", "episodes", "transcripts", "judgements")
#: What reading damaged data raises: SQLite's errors, and text that is not UTF-8.
_READ_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)
#: The first 16 bytes of every SQLite file (https://www.sqlite.org/fileformat2.html).
_SQLITE_MAGIC = b"SQLite format 3\x00"
