"""A private copy of a store file that may be damaged, to inspect or salvage: the store itself is
never touched, and a copy whose header alone is damaged gets it rebuilt."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

from harness.store.errors import StoreError
from harness.store.locking import _not_regular
from harness.store.schema import _READ_ERRORS, _SQLITE_MAGIC, _STORE_TABLES, APPLICATION_ID, STORE_FILENAME

#: Marker beside a private copy whose damaged header :func:`_rebuild_header` rewrote.
_HEADER_REBUILT = "header-rebuilt"


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
