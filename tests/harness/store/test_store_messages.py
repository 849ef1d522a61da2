"""The store's refusals say what is true: which command holds a store another writer wants, a
fix that fits the command refused (only ``harness run`` has an ``out=`` to change), and what
sits where the store file goes when it is not a file. A relative data folder is stored
absolute, so a later command run from another folder finds the data."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from harness.cli.entry import main
from harness.store import STORE_FILENAME, ResultStore, StoreError
from harness.store.errors import _db_error
from harness.store.locking import _holder

FAST = ["suite.params.render=false", "suite.params.generated_per_split=4", "progress=false"]


def _refusal(out: Path, holder: str, writer: str) -> str:
    with ResultStore(out, writer=holder):
        with pytest.raises(StoreError) as info:
            ResultStore(out, writer=writer)
    return str(info.value)


def test_a_second_writer_is_told_which_command_holds_the_store(tmp_path):
    """Mutation caught: every holder called "another `harness run`", every refused writer told to
    give another ``out=``."""
    out = tmp_path / "o"
    line = _refusal(out, "harness judge", "harness run")
    assert f"being written by `harness judge` (pid {os.getpid()} on " in line, line
    assert "another `harness run`" not in line and "give another `out=`" in line  # run has an out=
    line = _refusal(out, "harness run", "harness judge")
    assert f"being written by `harness run` (pid {os.getpid()} on " in line, line
    assert "out=" not in line and "then run `harness judge` again" in line, line
    line = _refusal(out, "harness store repair", "harness judge")
    assert "being written by `harness store repair` (pid" in line
    # A lock file that names no command (an older harness): "another process", nothing invented.
    assert _holder("pid 12 on host, since 2025-01-01 12:00:00") == "another process (pid 12 on host, since 2025-01-01 12:00:00)"
    assert _holder("") == "another process (unknown)"


def test_harness_run_refused_while_a_judge_writes_names_the_judge(tmp_path, capsys):
    out = tmp_path / "o"
    with ResultStore(out, writer="harness judge"):
        status = main(["run", "planner=random", "split=seen", "limit=1", *FAST, f"out={out}"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1, err
    assert "being written by `harness judge` (pid" in err[0] and "another `harness run`" not in err[0], err[0]


@pytest.mark.parametrize("writer, hint", [("harness run", True), ("harness judge", False), (None, False)])
def test_a_full_disk_names_out_only_to_harness_run(writer, hint):
    line = _db_error("write to", Path("o") / STORE_FILENAME, sqlite3.OperationalError("database or disk is full"),
                     writer)
    assert "free disk space" in line and ("choose another `out=`" in line) == hint, line


def test_a_fifo_where_the_store_goes_is_named_as_such(tmp_path, capsys):
    """Mutation caught: the FIFO reported as a disk I/O error with "free disk space"."""
    out = tmp_path / "o"
    out.mkdir()
    os.mkfifo(out / STORE_FILENAME)
    for readonly in (False, True):
        with pytest.raises(StoreError) as info:
            ResultStore(out, readonly=readonly, writer=None if readonly else "harness run")
        assert "is not a regular file: it is a FIFO (named pipe)" in str(info.value), str(info.value)
        assert "disk" not in str(info.value)
    for args in (["table", str(out)], ["store", "check", str(out)],
                 ["run", "planner=random", "split=seen", "limit=1", *FAST, f"out={out}"]):
        assert main(args) == 2, args
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and "not a regular file: it is a FIFO" in err[0], (args, err)
    assert (out / STORE_FILENAME).is_fifo() and sorted(p.name for p in out.iterdir()) == [STORE_FILENAME]
    (out / STORE_FILENAME).unlink()
    (out / STORE_FILENAME).mkdir()
    with pytest.raises(StoreError, match="it is a directory"):
        ResultStore(out, readonly=True)


def test_a_relative_data_dir_is_stored_absolute(tmp_path, monkeypatch, data_dir):
    """``harness judge`` (or ``harness report``) from another folder rebuilds the suite from the
    stored parameters: a data folder stored as given ("data") would not be found there.
    Mutation caught: the relative path stored as given."""
    from harness.run.config import compose
    from harness.run.spec import to_run_spec

    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(data_dir)
    monkeypatch.chdir(work)
    spec = to_run_spec(compose(["suite=eb_alfred", "split=base", "suite.params.data_dir=data"]))
    assert spec.suite_params["data_dir"] == str(work / "data")
    assert to_run_spec(compose(["suite=eb_alfred", "split=base", f"suite.params.data_dir={data_dir}"])
                       ).suite_params["data_dir"] == str(data_dir)  # an absolute one as given
    assert main(["run", "suite=eb_alfred", "split=base", "planner=oracle", "limit=1", "suite.params.data_dir=data",
                 "suite.params.render=false", "progress=false", "out=o"]) == 0
    monkeypatch.chdir(tmp_path)
    with ResultStore(work / "o", readonly=True) as store:
        (spec_json,) = store.runs()["spec"]
    assert json.loads(spec_json)["suite_params"]["data_dir"] == str(work / "data")
