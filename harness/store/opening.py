"""Opening a store file: verified first (refused unless sound), read-only as one snapshot (or
from a private copy where SQLite cannot read it in place), writable under the one-writer lock,
created or migrated to the current schema."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

from harness.store.errors import StoreError, _db_error, _space_hint
from harness.store.integrity import (DAMAGED, NOT_A_STORE, SOUND, UNREADABLE_SCHEMA, _crc_sql, _register_crc,
                                     inspect_db, inspect_store)
from harness.store.locking import _lock, _missing_dirs, _not_regular, _remove_empty, _unlock
from harness.store.schema import (_ADDED_COLUMNS, _CRC_TABLES, _SCHEMA, APPLICATION_ID, STORE_FILENAME,
                                  _column_type, _ro_uri)
from harness.types import SCHEMA_VERSION


def verify(db: sqlite3.Connection, path: Path, file: Path) -> int | None:
    """The schema version of the store open in ``db`` (``path``, read from ``file``); StoreError
    (one line) unless :func:`inspect_db` finds the store sound."""
    verdict = inspect_db(db, file)
    if verdict.kind == NOT_A_STORE or (verdict.kind == DAMAGED and verdict.problems
                                       and ("header" in verdict.problems[0]
                                            or verdict.problems[0].startswith(UNREADABLE_SCHEMA))):
        # What `harness store check` says, one verdict for every command: a store whose
        # header alone is damaged is "damaged" (and repairable), not "not a harness store".
        second = inspect_store(path)
        if second.kind == DAMAGED:
            verdict = second
    if verdict.kind != SOUND:
        raise StoreError(verdict.open_message(path))
    return verdict.schema_version


def open_readonly(path: Path) -> tuple[sqlite3.Connection, str | None, int | None]:
    """(connection, private copy's folder or None, schema version) of the verified store at ``path``,
    a read transaction begun: one snapshot from the check to the close."""
    odd = _not_regular(path)
    if odd is not None:
        raise StoreError(odd)
    if not path.is_file():
        raise StoreError(f"no result store at {path} (run `harness run ...` with this output directory first)")
    db = None
    try:
        db = sqlite3.connect(_ro_uri(path), uri=True)
        db.execute("BEGIN")  # one snapshot from the check to close()
        return db, None, verify(db, path, path)
    except sqlite3.OperationalError as exc:
        # A WAL-mode store (a run in progress, or one killed) in a directory we
        # cannot write: SQLite cannot create its -shm there. Read a private
        # copy of the file and its WAL instead: same rows, nothing left behind.
        if "unable to open" not in str(exc) and "readonly" not in str(exc):
            raise StoreError(_db_error("read", path, exc)) from None
        if db is not None:  # connect itself may be what failed
            db.close()
        return _open_copy(path)
    except sqlite3.DatabaseError as exc:
        raise StoreError(_db_error("read", path, exc)) from None


def _open_copy(path: Path) -> tuple[sqlite3.Connection, str, int | None]:
    tmpdir = tempfile.mkdtemp(prefix="harness-store-")
    try:
        for suffix in ("", "-wal"):
            src = Path(str(path) + suffix)
            if src.is_file():
                shutil.copyfile(src, Path(tmpdir) / (STORE_FILENAME + suffix))
        db = sqlite3.connect(Path(tmpdir) / STORE_FILENAME)
        db.execute("BEGIN")
        return db, tmpdir, verify(db, path, Path(tmpdir) / STORE_FILENAME)
    except (OSError, sqlite3.DatabaseError) as exc:
        raise StoreError(_db_error("read", path, exc)) from None


def open_writable(path: Path, command: str | None) -> tuple[sqlite3.Connection, int]:
    """(connection, lock file descriptor) of the store at ``path``, held by this process alone
    (``command``: what writes, see :func:`_lock`), created or migrated to :data:`SCHEMA_VERSION`.
    A failed open leaves no store file, lock or output folder it made behind."""
    new_dirs = _missing_dirs(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(new_dirs)
        raise StoreError(f"cannot create output directory {path.parent}: {exc.strerror or exc}") from None
    odd = _not_regular(path)
    if odd is not None:  # before the lock and SQLite: a FIFO would read as an I/O error
        _remove_empty(new_dirs)
        raise StoreError(odd)
    created = not path.exists()
    existed = path.is_file() and path.stat().st_size > 0
    lock_fd: int | None = None
    db: sqlite3.Connection | None = None
    try:
        lock_fd = _lock(path, command)  # before reading a byte: one writer at a time
        db = sqlite3.connect(path, timeout=30, check_same_thread=False)  # RecordWriter's thread
        _register_crc(db)
        if existed:
            verify(db, path, path)  # refuse a foreign, unknown or damaged file before writing a byte
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against process crashes (SIGKILL) in WAL mode;
        # only an OS crash / power loss can lose the last commits.
        db.execute("PRAGMA synchronous=NORMAL")
        with db:
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            migrate(db)
        return db, lock_fd
    except (sqlite3.DatabaseError, StoreError, OSError) as exc:
        if db is not None:
            db.close()
        if created:  # e.g. a full disk: leave no empty or half-made store behind
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        if lock_fd is not None:
            _unlock(path, lock_fd)
        _remove_empty(new_dirs)  # ... nor an empty output folder
        if isinstance(exc, StoreError):
            raise
        if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
            raise StoreError(f"cannot open result store {path}: {exc.strerror or exc} "
                             f"({_space_hint(command)})") from None
        raise StoreError(_db_error("open", path, exc, command)) from None


def migrate(db: sqlite3.Connection) -> None:
    """Bring an older store up to :data:`SCHEMA_VERSION` (inside the open transaction)."""
    columns = {r[1] for r in db.execute("PRAGMA table_info(episodes)")}
    added = False
    for name, default in _ADDED_COLUMNS.items():
        if name not in columns:
            db.execute(f'ALTER TABLE episodes ADD COLUMN "{name}" {_column_type(name)} DEFAULT {default}')
            added = True
            if name == "empty_plan":
                db.execute("UPDATE episodes SET empty_plan = (termination = 'empty_plan')")
    if added and "crc" in columns:  # the rows' checksums cover every column: re-seal (verified above)
        db.execute(f"UPDATE episodes SET crc = {_crc_sql(db, 'episodes')}")
    if not any(r[1] == "meta" for r in db.execute("PRAGMA table_info(transcripts)")):
        db.execute("ALTER TABLE transcripts ADD COLUMN meta TEXT")  # additive: no schema bump
    # Row checksums (additive too): an older store, verified above, gets them for every row.
    for table in _CRC_TABLES:
        if "crc" not in {r[1] for r in db.execute(f"PRAGMA table_info({table})")}:
            db.execute(f"ALTER TABLE {table} ADD COLUMN crc INTEGER")
            db.execute(f"UPDATE {table} SET crc = {_crc_sql(db, table)}")
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
