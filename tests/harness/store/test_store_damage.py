"""The result store under damage: a store built by ``harness run`` is copied and each copy
damaged in one way (bytes flipped in every table and index, a cut tail, a deleted ``-wal``,
schema versions 99 / 0 / missing, a foreign SQLite file, an episode key stored twice).

For every copy: ``harness store check`` gives the documented verdict and exit status, and
``run``, ``table`` and ``report`` agree with it -- on a copy it calls sound they read exactly
the original's data (the same table; a rerun resumes all 40 episodes and writes no second
row), on any other copy they refuse in one line (exit 2) and write nothing. ``repair`` of a
damaged copy gives a store that checks sound and holds no key twice; it refuses a file that
is not a harness store. Real SQLite files, the real EB-ALFRED suite and the real CLI
(in-process: ``harness.cli.entry.main``; a few cases also as real processes, for the traceback).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import entry as cli
from harness.store import ResultStore, inspect_store
from harness.types import RunSpec

REPO = Path(__file__).resolve().parents[3]
FAST = ["suite.params.render=false", "suite.params.generated_per_split=40", "progress=false"]
RUN = ["run", "planner=random", "split=seen", "limit=40", *FAST]
N = 40


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def cli_main(capsys, *args: str) -> tuple[int, str, str]:
    """The real CLI in this process (an uncaught exception -- a traceback -- fails the test)."""
    capsys.readouterr()
    status = cli.main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def snapshot(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


def duplicate_keys(d: Path) -> int:
    db = sqlite3.connect(d / "results.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM episodes NOT INDEXED GROUP BY run_id, suite, split, "
                          "episode_id, seed HAVING COUNT(*) > 1)").fetchone()[0]
    finally:
        db.close()


def rows(d: Path) -> int:
    db = sqlite3.connect(d / "results.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM episodes NOT INDEXED").fetchone()[0]
    finally:
        db.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, str]:
    """A 40-episode store made by `harness run`, and its table."""
    root = tmp_path_factory.mktemp("src")
    assert cli.main([*RUN, f"out={root / 'o'}"]) == 0
    with ResultStore(root / "o", readonly=True):
        pass
    status = subprocess.run([sys.executable, "-m", "harness.cli", "table", str(root / "o")], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert status.returncode == 0, status.stderr
    return root / "o", status.stdout


def copy_of(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


def btree_pages() -> dict[str, list[int]]:
    """{table or index name: its pages} of the source store (SQLite's dbstat)."""
    return _PAGES


_PAGES: dict[str, list[int]] = {}


def _pages_of(file: Path) -> dict[str, list[int]]:
    db = sqlite3.connect(file)
    try:
        out: dict[str, list[int]] = {}
        for name, pageno in db.execute("SELECT name, pageno FROM dbstat ORDER BY pageno"):
            out.setdefault(name, []).append(pageno)
        return out
    finally:
        db.close()


def flip(file: Path, page: int, offset: int, nbytes: int, mask: int = 0xFF) -> None:
    """XOR ``nbytes`` bytes at ``offset`` of ``page`` (1-based) with ``mask``."""
    data = bytearray(file.read_bytes())
    size = int.from_bytes(data[16:18], "big") or 65536
    start = (page - 1) * size + offset
    for i in range(start, min(start + nbytes, len(data))):
        data[i] ^= mask
    file.write_bytes(bytes(data))


def assert_consistent(d: Path, table: str, capsys, *, expect: str | None = None) -> str:
    """check's verdict, and run / table / report agreeing with it. Returns the verdict."""
    status, _, err = cli_main(capsys, "store", "check", str(d))
    line = one_line(err)
    verdict = {0: "sound", 1: "damaged", 3: "unknown schema version", 4: "not a harness store"}[status]
    assert f": {verdict}" in line, line
    if expect is not None:
        assert verdict == expect, line
    before = snapshot(d)
    status, out, err = cli_main(capsys, "table", str(d))
    if verdict == "sound":
        assert status == 0 and out == table, err  # the data is intact: the same table as the original
    else:
        assert status == 2, err
        line = one_line(err)
        assert "harness store check" in line or "not a harness result store" in line, line
        status, _, err = cli_main(capsys, "report", str(d))
        assert status == 2 and "harness store check" in one_line(err) or "not a harness" in err, err
        assert snapshot(d) == before  # table / report write nothing
    status, _, err = cli_main(capsys, *RUN, f"out={d}")
    if verdict == "sound":
        assert status == 0 and "0 episodes run, 40 resumed" in err and f"{N}/{N} done" in err, err
        assert rows(d) == N and duplicate_keys(d) == 0
        assert inspect_store(d).kind == "sound"
    else:
        assert status == 2, err  # never "resumed" on damage
        line = one_line(err)
        assert "harness store check" in line or "not a harness result store" in line, line
        assert snapshot(d) == before, "a refused run wrote to the store"
    return verdict


def assert_repair(d: Path, capsys) -> None:
    """repair of a damaged copy: a new store that checks sound, holds no key twice, and resumes."""
    status, _, err = cli_main(capsys, "store", "repair", str(d))
    line = one_line(err)
    fixed = d.with_name(d.name + "-repaired")
    if status == 2:  # the documented other outcome: SQLite cannot read the schema at all
        assert "nothing in" in line and "can be salvaged" in line, line
        assert not fixed.exists()
        return
    assert status == 0, err
    assert inspect_store(fixed).kind == "sound"
    assert duplicate_keys(fixed) == 0
    status, _, err = cli_main(capsys, *RUN, f"out={fixed}")
    assert status == 0 and f"{N}/{N} done" in err, err
    assert rows(fixed) == N and duplicate_keys(fixed) == 0


# --- bit flips in every table and index ------------------------------------------------------
def content_area(file: Path, page: int) -> tuple[int, int]:
    """Where a b-tree page's cells lie: (start, end) offsets in the page (SQLite's file format,
    section 1.6: the page header's 2-byte "start of the cell content area" at offset 5)."""
    with open(file, "rb") as fh:
        fh.seek((page - 1) * PAGE_SIZE + (100 if page == 1 else 0))
        header = fh.read(8)
    start = int.from_bytes(header[5:7], "big") or 65536
    return start, PAGE_SIZE


def _flip_cases() -> list[tuple[str, int, float, int, int]]:
    """(b-tree, which of its pages: 0 first / -1 last, where in its cells (0..1), bytes, mask).

    16 bytes inverted (text that no longer decodes, a broken record or cell), and single
    bits (a digit or a flag that still decodes: only a checksum sees those).
    """
    names = ["sqlite_schema", "meta", "sqlite_autoindex_meta_1", "runs", "sqlite_autoindex_runs_1", "sessions",
             "sqlite_sequence", "episodes", "sqlite_autoindex_episodes_1", "transcripts",
             "sqlite_autoindex_transcripts_1"]
    hits = ((-1, 0.5, 16, 0xFF), (-1, 0.9, 1, 0x01), (0, 0.3, 1, 0x04))
    return [(name, *hit) for name in names for hit in hits]


@pytest.mark.parametrize("name, which, where, nbytes, mask", _flip_cases())
def test_flipped_bytes_in_every_table_and_index(source, tmp_path, capsys, name, which, where, nbytes, mask):
    src, table = source
    if not _PAGES:
        _PAGES.update(_pages_of(src / "results.sqlite"))
    pages = _PAGES.get(name)
    assert pages, f"no b-tree {name} in {sorted(_PAGES)}"
    d = copy_of(src, tmp_path / "o")
    start, end = content_area(d / "results.sqlite", pages[which])
    flip(d / "results.sqlite", pages[which], start + int((end - start - nbytes) * where), nbytes, mask)
    verdict = assert_consistent(d, table, capsys)
    assert verdict in ("sound", "damaged")  # a flip in the data is never "unknown schema" or "foreign"
    VERDICTS[(name, which, where)] = verdict
    if verdict == "damaged":
        assert_repair(d, capsys)


def test_most_flips_were_damage(source):
    """The matrix above is not vacuous: most of its flips hit stored data and were caught
    (the rest landed in unused bytes, and for those every command read the original data)."""
    if len(VERDICTS) < len(_flip_cases()):
        pytest.skip("needs the whole flip matrix in this session")
    damaged = sum(v == "damaged" for v in VERDICTS.values())
    assert damaged >= len(VERDICTS) // 2, VERDICTS


PAGE_SIZE = 4096
VERDICTS: dict[tuple, str] = {}


@pytest.mark.ci
def test_the_reported_flips_are_refused(source, tmp_path, capsys):
    """The two reported cases: 16 bytes flipped in the episodes' key index (the rerun used to
    write an episode twice), and 32 bytes in the middle of an episodes page."""
    src, table = source
    pages = _pages_of(src / "results.sqlite")
    d = copy_of(src, tmp_path / "index")
    flip(d / "results.sqlite", pages["sqlite_autoindex_episodes_1"][-1], PAGE_SIZE - 200, 16)
    assert assert_consistent(d, table, capsys, expect="damaged") == "damaged"
    assert_repair(d, capsys)
    d = copy_of(src, tmp_path / "page")
    ep = pages["episodes"]
    flip(d / "results.sqlite", ep[len(ep) // 2], 2048, 32)
    assert assert_consistent(d, table, capsys, expect="damaged") == "damaged"
    assert_repair(d, capsys)


def test_a_flip_in_a_value_is_caught_by_its_checksum(source, tmp_path, capsys):
    """A flip that leaves every page well-formed (a success flag 0 -> 1 in place): SQLite's
    integrity check cannot see it, the row's checksum does."""
    src, table = source
    d = copy_of(src, tmp_path / "o")
    db = sqlite3.connect(d / "results.sqlite")
    # Rewritten through SQLite, the stored checksum left as it was: what a flipped bit would do.
    db.execute("UPDATE episodes SET success = 1 - success WHERE rowid = 5")
    db.commit()
    db.close()
    assert assert_consistent(d, table, capsys, expect="damaged") == "damaged"
    assert_repair(d, capsys)


# --- a cut tail, a deleted -wal ---------------------------------------------------------------------
@pytest.mark.ci
@pytest.mark.parametrize("cut", [1000, 4096, 20000])
def test_a_cut_tail_is_damage(source, tmp_path, capsys, cut):
    src, table = source
    d = copy_of(src, tmp_path / "o")
    file = d / "results.sqlite"
    file.write_bytes(file.read_bytes()[:-cut])
    assert assert_consistent(d, table, capsys, expect="damaged") == "damaged"
    res = harness("table", str(d), cwd=tmp_path)  # a real process: no traceback (it was a JSONDecodeError)
    assert res.returncode == 2 and "Traceback" not in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    assert_repair(d, capsys)


def test_a_deleted_wal(source, tmp_path, capsys):
    """A store copied while a run had it open in WAL mode, then its -wal deleted: the episodes
    committed to the WAL are gone, the rest must be consistent (or refused)."""
    src, table = source
    live = copy_of(src, tmp_path / "live")
    store = ResultStore(live)
    try:
        db = store._db
        db.execute("PRAGMA wal_autocheckpoint=0")
        # a second run, committed to the WAL only
        store.begin_run("wal-only", RunSpec(suite="eb_alfred", split="seen", agent="random", variant="other"), {}, {})
        assert (live / "results.sqlite-wal").stat().st_size > 0
        d = tmp_path / "o"
        d.mkdir()
        for name in ("results.sqlite", "results.sqlite-shm"):
            shutil.copyfile(live / name, d / name)
    finally:
        store.close()
    assert assert_consistent(d, table, capsys) == "sound"


# --- schema versions, a foreign file -------------------------------------------------------------------
@pytest.mark.ci
@pytest.mark.parametrize("value", ["99", "0", None, "abc"])
def test_unknown_schema_versions(source, tmp_path, capsys, value):
    src, table = source
    d = copy_of(src, tmp_path / "o")
    db = sqlite3.connect(d / "results.sqlite")
    if value is None:
        db.execute("DELETE FROM meta WHERE key='schema_version'")
    else:
        db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (value,))
    db.commit()
    db.close()
    assert assert_consistent(d, table, capsys, expect="unknown schema version")
    status, _, err = cli_main(capsys, "store", "repair", str(d))
    assert status == 3 and "unknown schema version" in one_line(err)
    assert not (tmp_path / "o-repaired").exists()


@pytest.mark.ci
def test_a_foreign_sqlite_file(tmp_path, capsys):
    d = tmp_path / "o"
    d.mkdir()
    db = sqlite3.connect(d / "results.sqlite")
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.execute("INSERT INTO notes (text) VALUES ('mine')")
    db.commit()
    db.close()
    assert assert_consistent(d, "", capsys, expect="not a harness store")
    status, _, err = cli_main(capsys, "store", "repair", str(d))
    assert status == 4 and "not a harness store" in one_line(err)
    assert not (tmp_path / "o-repaired").exists()
    (d / "results.sqlite").write_bytes(b"just some text, not SQLite at all\n" * 10)
    assert assert_consistent(d, "", capsys, expect="not a harness store")


# --- an episode key stored twice --------------------------------------------------------------------------
def _with_duplicates(d: Path, rowids: tuple[int, ...]) -> None:
    """Drop the key's unique index (as damage to the schema would) and store rows a second time."""
    db = sqlite3.connect(d / "results.sqlite")
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name='episodes'").fetchone()[0]
    unkeyed = sql[:sql.index("PRIMARY KEY")].rstrip().rstrip(",") + "\n)"
    db.execute("PRAGMA writable_schema=ON")
    db.execute("UPDATE sqlite_master SET sql=? WHERE name='episodes'", (unkeyed,))
    db.execute("DELETE FROM sqlite_master WHERE name='sqlite_autoindex_episodes_1'")
    db.commit()
    db.close()
    db = sqlite3.connect(d / "results.sqlite")
    db.execute("VACUUM")  # no orphaned index pages: only the duplicates themselves are wrong
    for rowid in rowids:
        db.execute("INSERT INTO episodes SELECT * FROM episodes WHERE rowid = ?", (rowid,))
    db.commit()
    db.close()


@pytest.mark.ci
def test_duplicated_keys_are_damage_and_repair_drops_them(source, tmp_path, capsys):
    src, table = source
    d = copy_of(src, tmp_path / "o")
    _with_duplicates(d, (3, 7))
    assert duplicate_keys(d) == 2
    assert assert_consistent(d, table, capsys, expect="damaged") == "damaged"
    problems = " | ".join(inspect_store(d).problems)
    assert "no longer declares its key" in problems, problems  # the schema lost "unique by construction"
    assert "holds the key" in problems and "twice" in problems, problems  # and the rows show it
    status, _, err = cli_main(capsys, "store", "repair", str(d))
    line = one_line(err)
    assert status == 0 and "dropped 2 duplicate episode row(s)" in line, line
    fixed = tmp_path / "o-repaired"
    assert duplicate_keys(fixed) == 0 and rows(fixed) == N and inspect_store(fixed).kind == "sound"
    status, out, _ = cli_main(capsys, "table", str(fixed))
    assert status == 0 and out == table

