"""The store's reads, as SQL over an open connection: runs and their sessions, episodes (as
records or a DataFrame), transcripts and judgements. :class:`~harness.store.database.ResultStore`
answers each of them for its own connection."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from harness.store.errors import StoreError
from harness.store.schema import _ADDED_COLUMNS, _KEY, _RECORD_FIELDS, _TRANSCRIPT_COLUMNS
from harness.types import TERMINATION_EPISODE_TIMEOUT, EpisodeRecord

if TYPE_CHECKING:  # pandas is imported where tables are built, not at start-up
    import pandas as pd

#: The keys of :meth:`ResultStore.run_failures`, in the order the console prints them.
FAILURE_COUNTS = ("errors", "timeouts", "output_error_episodes", "output_errors", "empty_plans", "fallback_episodes")
#: The columns of the judgements table, the answer's key first.
_JUDGEMENT_COLUMNS = (*_KEY, "judge_id", "judge", "identity", "status", "vals", "reason", "raw_reply",
                      "prompt", "meta", "judged_at")


# --- runs -------------------------------------------------------------------------------------
def runs(db: sqlite3.Connection) -> "pd.DataFrame":
    import pandas as pd

    return pd.read_sql_query(
        "SELECT r.run_id, r.variant, r.suite, r.split, r.created_at, r.identity, r.spec, "
        "MAX(s.started_at) AS last_started_at, COUNT(s.session_id) AS sessions "
        "FROM runs r LEFT JOIN sessions s USING (run_id) GROUP BY r.run_id ORDER BY r.created_at",
        db,
    )


def provenance(db: sqlite3.Connection, run_id: str) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT provenance FROM sessions WHERE run_id=? ORDER BY session_id", (run_id,)
    ).fetchall()
    return [json.loads(r[0]) for r in rows]


# --- episodes ---------------------------------------------------------------------------------
def run_counts(db: sqlite3.Connection, run_id: str) -> tuple[int, int, int]:
    row = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(success), 0), COALESCE(SUM(error_kind IS NOT NULL), 0) "
        "FROM episodes WHERE run_id=?", (run_id,)).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def run_failures(db: sqlite3.Connection, run_id: str) -> dict[str, int]:
    row = db.execute(
        "SELECT COALESCE(SUM(error_kind IS NOT NULL AND error_kind != 'timeout'), 0), "
        "COALESCE(SUM(error_kind = 'timeout' OR (error_kind IS NULL AND NOT success AND termination = ?)), 0), "
        "COALESCE(SUM(planner_output_errors > 0), 0), "
        "COALESCE(SUM(planner_output_errors), 0), COALESCE(SUM(empty_plan AND NOT success), 0), "
        "COALESCE(SUM(CASE WHEN json_valid(extra) THEN COALESCE(json_extract(extra, '$.fallback_plans'), 0) > 0 END), 0) "
        "FROM episodes WHERE run_id=?", (TERMINATION_EPISODE_TIMEOUT, run_id)).fetchone()
    return dict(zip(FAILURE_COUNTS, map(int, row)))


def stored_keys(db: sqlite3.Connection, run_id: str) -> set[tuple[str, str, str, int]]:
    rows = db.execute("SELECT suite, split, episode_id, seed FROM episodes WHERE run_id=?", (run_id,))
    return {tuple(r) for r in rows}  # type: ignore[misc]


def completed_keys(db: sqlite3.Connection, run_id: str) -> set[tuple[str, str, str, int]]:
    rows = db.execute(
        "SELECT suite, split, episode_id, seed FROM episodes WHERE run_id=? AND error_kind IS NULL",
        (run_id,),
    )
    return {tuple(r) for r in rows}  # type: ignore[misc]


def _episodes_query(columns: set[str], run_ids: Iterable[str] | None) -> tuple[str, list[str]]:
    """SELECT of the EpisodeRecord fields in key order, optionally for some runs (``columns``:
    those the episodes table has)."""
    # A schema-1 store read without migrating: its rows get the defaults of newer columns.
    select = [f'"{c}"' if c in columns else f'{_ADDED_COLUMNS[c]} AS "{c}"' for c in _RECORD_FIELDS]
    sql = f"SELECT {', '.join(select)} FROM episodes"
    params: list[str] = []
    if run_ids is not None:
        params = list(run_ids)
        sql += f" WHERE run_id IN ({', '.join('?' * len(params))})"
    return sql + " ORDER BY run_id, suite, split, episode_id, seed", params


def frame(db: sqlite3.Connection, path: Path, columns: set[str], run_ids: Iterable[str] | None) -> "pd.DataFrame":
    import pandas as pd

    sql, params = _episodes_query(columns, run_ids)
    try:
        df = pd.read_sql_query(sql, db, params=params)
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
        raise StoreError(f"cannot read result store {path}: {exc}") from None
    df["success"] = df["success"].astype(bool)
    df["empty_plan"] = df["empty_plan"].astype(bool)
    df["extra"] = [json.loads(x) if isinstance(x, str) else {} for x in df["extra"]]
    df["values"] = [json.loads(x) if isinstance(x, str) else {} for x in df["values"]]
    return df


def records(db: sqlite3.Connection, path: Path, columns: set[str], run_ids: Iterable[str] | None) -> list[EpisodeRecord]:
    sql, params = _episodes_query(columns, run_ids)
    try:
        rows = db.execute(sql, params).fetchall()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read result store {path}: {exc}") from None
    out = []
    for row in rows:
        data = dict(zip(_RECORD_FIELDS, row))
        data["success"] = bool(data["success"])
        data["empty_plan"] = bool(data["empty_plan"])
        data["extra"] = json.loads(data["extra"]) if isinstance(data["extra"], str) else {}
        data["values"] = json.loads(data["values"]) if isinstance(data["values"], str) else {}
        out.append(EpisodeRecord.from_dict(data))
    return out


# --- transcripts ------------------------------------------------------------------------------
def transcripts(db: sqlite3.Connection, run_ids: Iterable[str] | None) -> list[dict[str, Any]]:
    if "transcripts" not in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}:
        return []  # a schema-1 store read as it is
    has_meta = any(r[1] == "meta" for r in db.execute("PRAGMA table_info(transcripts)"))
    sql = (f"SELECT {', '.join(_KEY)}, {', '.join(_TRANSCRIPT_COLUMNS)}, "
           f"{'meta' if has_meta else 'NULL'} AS meta FROM transcripts")
    params: list[str] = []
    if run_ids is not None:
        params = list(run_ids)
        sql += f" WHERE run_id IN ({', '.join('?' * len(params))})"
    sql += f" ORDER BY {', '.join(_KEY)}, call"
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    out = []
    for row in cur:
        entry = dict(zip(names, row))
        meta = entry.pop("meta")
        out.append({**json.loads(meta), **entry} if meta else entry)
    return out


# --- judgements (harness/judging/) ------------------------------------------------------------
def _has_judgements(db: sqlite3.Connection) -> bool:
    return "judgements" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}


def judged_keys(db: sqlite3.Connection, judge_id: str) -> set[tuple[str, str, str, str, int]]:
    if not _has_judgements(db):
        return set()
    rows = db.execute(f"SELECT {', '.join(_KEY)} FROM judgements WHERE judge_id=? AND status != 'error'",
                      (judge_id,))
    return {tuple(r) for r in rows}  # type: ignore[misc]


def judgements(db: sqlite3.Connection, judge_id: str | None) -> "pd.DataFrame":
    import pandas as pd

    cols = list(_JUDGEMENT_COLUMNS)
    if not _has_judgements(db):
        return pd.DataFrame(columns=[c if c != "vals" else "values" for c in cols])
    sql = f"SELECT {', '.join(cols)} FROM judgements"
    params: list[str] = []
    if judge_id is not None:
        sql, params = sql + " WHERE judge_id = ?", [judge_id]
    df = pd.read_sql_query(sql + f" ORDER BY judge_id, {', '.join(_KEY)}", db, params=params)
    for c in ("identity", "vals", "meta"):
        df[c] = [json.loads(x) if isinstance(x, str) else {} for x in df[c]]
    return df.rename(columns={"vals": "values"})


def judges(db: sqlite3.Connection) -> list[tuple[str, dict[str, Any]]]:
    if not _has_judgements(db):
        return []
    rows = db.execute("SELECT judge_id, identity, MIN(judged_at) AS t FROM judgements "
                      "GROUP BY judge_id ORDER BY t").fetchall()
    return [(r[0], json.loads(r[1])) for r in rows]
