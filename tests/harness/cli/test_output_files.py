"""Files a user names for a command to write: an input store is never overwritten, an existing
file only with --force, the write is a rename of a finished temporary file, and disk or path
errors are one line (exit 2) with nothing partial left."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.entry import main
from harness.store import STORE_FILENAME
from tests.harness.tables.test_table_selection import two_suites, write_store

ROOT = Path(__file__).resolve().parents[3]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path) -> Path:
    write_store(tmp_path / "o", two_suites())
    return tmp_path / "o"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("force", [False, True])
def test_export_never_overwrites_its_input_store(store, capsys, force):
    db = store / STORE_FILENAME
    before = digest(db)
    argv = ["export", str(store), "-o", str(db)] + (["--force"] if force else [])
    assert main(argv) == 2
    assert "input store" in one_error_line(capsys)
    assert digest(db) == before
    # the store still reads whole
    assert main(["export", str(store)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 24
    # the store named as its .sqlite file is the same input
    assert main(["export", str(db), "-o", str(db)]) == 2 and digest(db) == before


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal", ".lock"])
@pytest.mark.parametrize("exists", [False, True])
def test_export_force_refuses_every_file_of_the_input_store(store, capsys, suffix, exists):
    """The store's -wal, -shm, -journal and .lock too, whether a run left them there or not:
    a JSONL file written as results.sqlite-wal would be read by SQLite as the store's WAL."""
    target = store / (STORE_FILENAME + suffix)
    if exists:
        target.write_bytes(b"")
    before = sorted(p.name for p in store.iterdir())
    assert main(["export", str(store), "-o", str(target), "--force"]) == 2
    assert "input store" in one_error_line(capsys)
    assert sorted(p.name for p in store.iterdir()) == before and (not exists or target.read_bytes() == b"")
    link = store.parent / "link.jsonl"  # a symlink to one of them, even before it exists
    link.symlink_to(target)
    assert main(["export", str(store), "-o", str(link), "--force"]) == 2
    assert "input store" in one_error_line(capsys)


def test_an_existing_file_is_replaced_only_with_force(store, tmp_path, capsys):
    out = tmp_path / "e.jsonl"
    out.write_text("keep me\n")
    assert main(["export", str(store), "-o", str(out)]) == 2
    assert "--force" in one_error_line(capsys) and out.read_text() == "keep me\n"
    assert main(["export", str(store), "-o", str(out), "--force"]) == 0
    assert len([json.loads(line) for line in out.read_text().splitlines()]) == 24
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("target", ["missing/e.jsonl", "."])
def test_path_errors_are_one_line(store, tmp_path, capsys, target):
    out = tmp_path / target
    assert main(["export", str(store), "-o", str(out)]) == 2
    one_error_line(capsys)
    assert not (tmp_path / "missing").exists()


def test_a_full_disk_leaves_nothing_partial(store, tmp_path):
    """A file-size limit (what a full disk looks like to a writer: the write fails midway)."""
    out = tmp_path / "e.jsonl"
    out.write_text("old\n")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000)); "
            "from harness.cli.entry import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "export", str(store), "-o", str(out), "--force"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot write" in proc.stderr
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl", "o"]


def test_report_dest_refuses_an_existing_file_without_force(store, tmp_path, capsys):
    dest = tmp_path / "r.html"
    dest.write_text("mine")
    assert main(["report", str(store), "--dest", str(dest)]) == 2
    assert "--force" in one_error_line(capsys) and dest.read_text() == "mine"
    assert main(["report", str(store), "--dest", str(dest), "--force"]) == 0
    assert "<html" in dest.read_text().lower()
