"""Is a store sound? Row checksums, and the verdict ``harness store check`` prints (and every
open of a store is refused unless it is :data:`SOUND`)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.store.errors import damaged_message
from harness.store.header import _HEADER_REBUILT, _open_raw
from harness.store.schema import (_CRC_TABLES, _JSON_COLUMNS, _READ_ERRORS, _SALVAGED_TABLES, _SQLITE_MAGIC,
                                  _STORE_TABLES, _UNIQUE_KEYS, APPLICATION_ID, _q)
from harness.types import SCHEMA_VERSION

#: ``harness store check`` verdicts and their exit statuses (2 stays "bad input", as everywhere).
SOUND, DAMAGED, UNKNOWN_SCHEMA, NOT_A_STORE = "sound", "damaged", "unknown schema version", "not a harness store"
EXIT_STATUS = {SOUND: 0, DAMAGED: 1, UNKNOWN_SCHEMA: 3, NOT_A_STORE: 4}


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


#: Problems kept per check (the count of all of them is kept too).
_MAX_PROBLEMS = 20

#: The problem named when SQLite cannot read a store's schema (its list of tables).
UNREADABLE_SCHEMA = "SQLite cannot read its schema"
#: What follows it when ``repair`` cannot read the schema either: nothing can be salvaged.
UNSALVAGEABLE = ("`harness store repair` cannot salvage it either (it reads the same schema): restore the file "
                 "from a copy, or start a new output directory")
#: The problem ``store check`` names for a store whose header alone is damaged.
DAMAGED_HEADER = ("its header (the file's first 100 bytes) is damaged but its pages read "
                  "(the header was rebuilt on a private copy)")


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
