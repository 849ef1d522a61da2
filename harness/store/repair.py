"""``harness store repair``: every sound row of a damaged store copied into a new store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from harness.store.database import ResultStore
from harness.store.errors import StoreError
from harness.store.header import _open_raw
from harness.store.integrity import (NOT_A_STORE, UNKNOWN_SCHEMA, UNREADABLE_SCHEMA, Verdict, _row_crc,
                                     inspect_store)
from harness.store.schema import _CRC_TABLES, _JSON_COLUMNS, _KEY, _READ_ERRORS, _SALVAGED_TABLES, STORE_FILENAME, _q

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
