import sqlite3
import time

import pytest

from harness.tables.selection import latest_frame
from harness.store import ResultStore, StoreError
from harness.types import EpisodeRecord, RunSpec

SPEC = RunSpec(suite="s", split="a", agent="oracle", variant="v")


def rec(ep: str, **kw) -> EpisodeRecord:
    base = dict(run_id="r1", variant="v", suite="s", split="a", episode_id=ep, seed=0)
    base.update(kw)
    return EpisodeRecord(**base)


def test_roundtrip_and_resume_keys(tmp_path):
    with ResultStore(tmp_path) as store:
        other = sqlite3.connect(tmp_path / "results.sqlite")
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # while a run writes
        other.close()
        store.begin_run("r1", SPEC, {"x": 1}, {"git": {}})
        assert store.add(rec("e1", success=True, gc_satisfied=1, gc_total=1, extra={"k": [1]}))
        assert store.add(rec("e2", error_kind="env", error_message="boom"))
        assert store.completed_keys("r1") == {("s", "a", "e1", 0)}
        back = {r.episode_id: r for r in store.records()}
    assert back["e1"].success is True and back["e1"].extra == {"k": [1]}
    assert back["e2"].error_kind == "env"
    assert (tmp_path / "results.sqlite").is_file()
    # the last writer closed: back to a rollback journal, no -wal/-shm left beside the file
    assert sqlite3.connect(tmp_path / "results.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_completed_keys_are_per_run(tmp_path):
    """Two runs share one store and one episode key. Mutation caught: ``completed_keys``
    ignoring ``run_id``."""
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {"agent": 1}, {})
        store.begin_run("r2", SPEC, {"agent": 2}, {})
        assert store.add(rec("e1", run_id="r1", success=True))
        assert store.add(rec("e1", run_id="r2", error_kind="agent"))
        assert store.add(rec("e2", run_id="r2"))
        assert store.completed_keys("r1") == {("s", "a", "e1", 0)}
        assert store.completed_keys("r2") == {("s", "a", "e2", 0)}
        assert store.completed_keys("r3") == set()
        assert len(store.records()) == 3


def test_completed_rows_never_duplicated_or_overwritten(tmp_path):
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        assert store.add(rec("e1", success=True))
        assert not store.add(rec("e1", success=False))
        assert len(store.records()) == 1 and store.records()[0].success


def test_error_row_replaced_when_episode_finishes(tmp_path):
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        store.add(rec("e1", error_kind="timeout"))
        assert store.add(rec("e1", success=True, attempts=2))
        (only,) = store.records()
    assert only.error_kind is None and only.success and only.attempts == 2


def test_sessions_keep_provenance_of_every_invocation(tmp_path):
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {"n": 1})
        store.begin_run("r1", SPEC, {}, {"n": 2})
        assert [p["n"] for p in store.provenance("r1")] == [1, 2]
        assert int(store.runs()["sessions"].iloc[0]) == 2


def test_latest_frame_leaves_out_superseded_runs(tmp_path):
    with ResultStore(tmp_path) as store:
        store.begin_run("old", SPEC, {}, {})
        store.add(rec("e1", run_id="old", success=False))
        store.begin_run("new", SPEC, {"prompt": 2}, {})
        store.add(rec("e1", run_id="new", success=True))
        df, notes = latest_frame(store)
    assert df["run_id"].tolist() == ["new"]
    # the run-selection rule, then the cell's runs: the one shown, the one not shown and how to show it
    assert len(notes) == 2 and notes[0].startswith("Runs:") and "--run old shows it" in notes[1]


def test_readonly_missing_or_garbage_store_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="no result store"):
        ResultStore(tmp_path / "nope", readonly=True)
    bad = tmp_path / "results.sqlite"
    bad.write_text("not a database")
    with pytest.raises(StoreError, match="not a harness result store"):
        ResultStore(tmp_path, readonly=True)


def test_newer_schema_refused(tmp_path):
    with ResultStore(tmp_path) as store:
        store._db.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
        store._db.commit()
    with pytest.raises(StoreError, match="schema version 999"):
        ResultStore(tmp_path, readonly=True)


def count_rows(path) -> int:
    other = sqlite3.connect(path / "results.sqlite")
    try:
        return other.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    finally:
        other.close()


def test_writer_commits_on_flush_and_close(tmp_path):
    """Mutation guarded: a writer that never commits before close (SIGKILL would lose everything)."""
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        writer = store.writer(interval_s=3600, watchdog_s=3600)  # no timed commit in this test
        writer.add(rec("a0"))
        writer.add(rec("a1"))
        assert count_rows(tmp_path) == 0  # the round's records wait together
        writer.flush()
        assert count_rows(tmp_path) == 2
        writer.add(rec("b0"))
        writer.close()
        assert count_rows(tmp_path) == 3


def test_writer_check_commits_once_the_oldest_record_is_due(tmp_path):
    """The runner's check before each agent call groups commits: nothing before
    ``interval_s``, everything waiting after it. Mutations guarded: a check that never
    commits (only close would), one that commits every record at once."""
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        writer = store.writer(interval_s=0.3, watchdog_s=3600)
        writer.add(rec("a0"))
        writer.add(rec("a1"))
        writer.check()
        assert count_rows(tmp_path) == 0
        time.sleep(0.35)
        writer.add(rec("a2"))
        writer.check()
        assert count_rows(tmp_path) == 3 and writer.committed == 3
        writer.close()


def test_writer_commits_on_its_own_while_the_runner_is_busy(tmp_path):
    """Records wait at most the writer's interval, even if the runner's thread never comes
    back (a hung model call). Mutation guarded: commits only on flush/close."""
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        writer = store.writer(interval_s=0.05, watchdog_s=0.05)
        writer.add(rec("a0"))
        writer.add(rec("a1"))
        deadline = time.monotonic() + 30
        while count_rows(tmp_path) < 2:
            assert time.monotonic() < deadline, "the writer never committed on its own"
            time.sleep(0.01)
        assert writer.committed == 2
        writer.close()
        assert count_rows(tmp_path) == 2 and writer.committed == 2


def test_writer_errors_on_its_thread_reach_the_runner(tmp_path):
    """A commit that fails on the writer's thread (disk full) is raised on the runner's thread
    at its next check, and the records stay waiting. Mutation guarded: an error swallowed there."""
    with ResultStore(tmp_path) as store:
        writer = store.writer(interval_s=0.05, watchdog_s=0.05)
        store._db.execute("DROP TABLE episodes")
        store._db.commit()
        writer.add(rec("e1"))
        deadline = time.monotonic() + 30
        while writer._error is None:
            assert time.monotonic() < deadline, "the writer's thread never tried to commit"
            time.sleep(0.01)
        with pytest.raises(StoreError, match="cannot write to result store"):
            writer.check()
        with pytest.raises(StoreError, match="cannot write to result store"):
            writer.close()


def test_writer_reports_write_errors(tmp_path):
    with ResultStore(tmp_path) as store:
        writer = store.writer()
        store._db.execute("DROP TABLE episodes")
        store._db.commit()
        writer.add(rec("e1"))
        with pytest.raises(StoreError, match="cannot write to result store"):
            writer.close()


def test_records_keep_none_and_integers_when_rows_differ(tmp_path):
    """Mutation guarded: records built through pandas turn NULL into NaN and ints into floats
    when other rows of the same column have values."""
    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        store.add(rec("e1", error_kind="env", error_message="boom", expert_length=None))
        store.add(rec("e2", success=True, expert_length=7))
        back = {r.episode_id: r for r in store.records()}
    assert back["e2"].error_kind is None and back["e2"].error_message is None
    assert back["e1"].expert_length is None and back["e2"].expert_length == 7
    assert type(back["e2"].expert_length) is int and back["e2"].success is True


def test_a_schema_2_store_is_read_and_migrated_to_path_length(tmp_path):
    """Schema 3 added ``path_length``: a schema-2 store (checksummed rows, no such column) reads
    as None, and opened for writing gets the column with every row re-sealed, so it stays sound.
    Mutation caught: a migration that adds the column without re-sealing the checksums."""
    from harness.store.integrity import _crc_sql, _register_crc, inspect_store
    from harness.types import SCHEMA_VERSION

    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        store.add(rec("e1", steps=4, expert_length=4))
    db = sqlite3.connect(tmp_path / "results.sqlite")
    _register_crc(db)
    db.execute("ALTER TABLE episodes DROP COLUMN path_length")
    db.execute(f"UPDATE episodes SET crc = {_crc_sql(db, 'episodes')}")  # as a schema-2 harness sealed it
    db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    db.commit()
    db.close()
    assert inspect_store(tmp_path).kind == "sound"
    with ResultStore(tmp_path, readonly=True) as store:
        (old,) = store.records()
        assert old.path_length is None and store.frame()["path_length"].isna().all()
    with ResultStore(tmp_path) as store:
        assert store.schema_version == SCHEMA_VERSION == 4
        store.add(rec("e2", steps=1, expert_length=9, path_length=12))
        back = {r.episode_id: r.path_length for r in store.records()}
    assert back == {"e1": None, "e2": 12}
    assert inspect_store(tmp_path).kind == "sound"


def test_a_schema_3_store_is_read_and_migrated_to_values(tmp_path):
    """Schema 4 added ``values`` (per-episode metric values): a schema-3 store reads them as {}
    and is re-sealed when migrated; a new record's values round-trip as JSON numbers or None.
    Mutation caught: a migration that adds the column without re-sealing the checksums."""
    from harness.store.integrity import _crc_sql, _register_crc, inspect_store
    from harness.types import SCHEMA_VERSION

    with ResultStore(tmp_path) as store:
        store.begin_run("r1", SPEC, {}, {})
        store.add(rec("e1", steps=4))
    db = sqlite3.connect(tmp_path / "results.sqlite")
    _register_crc(db)
    db.execute('ALTER TABLE episodes DROP COLUMN "values"')
    db.execute(f"UPDATE episodes SET crc = {_crc_sql(db, 'episodes')}")  # as a schema-3 harness sealed it
    db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    db.commit()
    db.close()
    assert inspect_store(tmp_path).kind == "sound"
    with ResultStore(tmp_path, readonly=True) as store:
        (old,) = store.records()
        assert old.values == {} and list(store.frame()["values"]) == [{}]
    with ResultStore(tmp_path) as store:
        assert store.schema_version == SCHEMA_VERSION == 4
        store.add(rec("e2", values={"accuracy": 1, "judge_score": None, "iou": 0.25}))
        back = {r.episode_id: r.values for r in store.records()}
    assert back == {"e1": {}, "e2": {"accuracy": 1, "judge_score": None, "iou": 0.25}}
    assert inspect_store(tmp_path).kind == "sound"
