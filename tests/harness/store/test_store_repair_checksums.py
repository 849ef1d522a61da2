"""``repair`` (harness/store/repair.py ``repair_store``) drops exactly the rows whose checksum fails,
in every checksummed table, and keeps every other row as it was: a changed value that SQLite
itself cannot see (a whole, well-formed row rewritten with its old checksum) is caught by the
checksum and the row is left out, counted in the report. A row without a checksum (written by
an older harness) is kept when its JSON decodes, and dropped when it does not.

The store is written by a real ``harness run`` of the one-step QA suite of
tests/harness/judge_fixtures.py (episodes, a session, a transcript per answer) and a verdict
per answer stored through ``ResultStore.add_judgement``; the damage is done with SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.store import SOUND, ResultStore, inspect_store, repair_store
from tests.harness import judge_fixtures as fx

N = 6  # the suite's questions: episodes, transcripts and verdicts
TABLES = ("runs", "sessions", "episodes", "transcripts", "judgements")


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


@pytest.fixture
def store(tmp_path) -> Path:
    from harness.cli.entry import main

    fx.register()
    out = tmp_path / "out"
    assert main(["run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
                 "progress=false"]) == 0
    with ResultStore(out) as s:
        for r in s.frame().to_dict("records"):
            assert s.add_judgement({**{k: r[k] for k in ("run_id", "suite", "split", "episode_id", "seed")},
                                    "judge_id": "j", "judge": "j", "identity": "{}", "status": "ok",
                                    "vals": json.dumps({"judge_score": 1.0}), "reason": None, "raw_reply": "SCORE: 1",
                                    "prompt": None, "meta": "{}", "judged_at": 1.0})
    assert inspect_store(out).kind == SOUND
    return out


def table_rows(out: Path, table: str) -> list[tuple]:
    """Every row of ``table`` without its checksum, in key order."""
    db = sqlite3.connect(out / "results.sqlite")
    try:
        cols = sorted(r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] not in ("crc", "session_id"))
        return sorted(db.execute(f"SELECT {', '.join(f'[{c}]' for c in cols)} FROM {table}").fetchall(), key=repr)
    finally:
        db.close()


def damage(out: Path, *statements: str) -> None:
    """Rewrite rows through SQLite, their stored checksums left as they were (what a flipped
    bit in a value does, with every page still well-formed)."""
    db = sqlite3.connect(out / "results.sqlite")
    with db:
        for sql in statements:
            assert db.execute(sql).rowcount == 1, sql
    db.close()


def test_repair_drops_each_row_whose_checksum_fails_and_keeps_the_rest(store, tmp_path):
    before = {t: table_rows(store, t) for t in TABLES}
    assert [len(before[t]) for t in TABLES] == [1, 1, N, N, N]
    # One value changed in a row of each table: no JSON column, so only the checksum can tell.
    damage(store,
           "UPDATE sessions SET started_at = started_at + 1",
           "UPDATE episodes SET steps = steps + 1 WHERE episode_id = 'test/001'",
           "UPDATE transcripts SET raw_output = 'a better answer' WHERE episode_id = 'test/002'",
           "UPDATE judgements SET raw_reply = 'SCORE: 10' WHERE episode_id = 'test/003'")
    assert inspect_store(store).kind != SOUND
    report = repair_store(store, tmp_path / "repaired")
    assert report.corrupt == 4
    assert {t: report.get(t) for t in TABLES} == {"runs": (1, 0), "sessions": (0, 1), "episodes": (N - 1, 1),
                                                   "transcripts": (N - 1, 1), "judgements": (N - 1, 1)}
    fixed = tmp_path / "repaired"
    assert inspect_store(fixed).kind == SOUND
    assert table_rows(fixed, "runs") == before["runs"] and table_rows(fixed, "sessions") == []
    for table, gone in (("episodes", "test/001"), ("transcripts", "test/002"), ("judgements", "test/003")):
        assert table_rows(fixed, table) == [r for r in before[table] if gone not in r], table  # the rest as it was
    with ResultStore(fixed, readonly=True) as s:
        assert "test/001" not in set(s.frame().episode_id)


def test_a_row_without_a_checksum_is_kept_when_its_json_decodes(store, tmp_path):
    """Rows an older harness wrote carry no checksum: kept on their JSON alone."""
    before = table_rows(store, "episodes")
    damage(store,
           "UPDATE episodes SET crc = NULL WHERE episode_id = 'test/000'",
           "UPDATE episodes SET crc = NULL, extra = '{not json' WHERE episode_id = 'test/005'",
           "UPDATE judgements SET crc = NULL WHERE episode_id = 'test/000'")
    report = repair_store(store, tmp_path / "repaired")
    assert report.corrupt == 1
    assert report.get("episodes") == (N - 1, 1) and report.get("judgements") == (N, 0)
    assert table_rows(tmp_path / "repaired", "episodes") == [r for r in before if "test/005" not in r]
