"""A store whose header alone is damaged (its first 100 bytes zeroed, every page intact):
``store check`` names it damaged with the command that recovers it, and ``store repair``
salvages every episode from it; the damaged file is left as it was."""

from __future__ import annotations

import hashlib
import json

import pytest

from harness.cli.entry import main
from harness.store import STORE_FILENAME
from tests.harness.tables.test_table_selection import two_suites, write_store


@pytest.mark.parametrize("fill", [b"\0", b"\xff"])
def test_a_damaged_header_is_named_and_repaired(tmp_path, capsys, fill):
    out = tmp_path / "o"
    write_store(out, two_suites())
    db = out / STORE_FILENAME
    data = bytearray(db.read_bytes())
    data[:100] = fill * 100
    db.write_bytes(bytes(data))
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    assert main(["store", "check", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "damaged" in err and "header" in err and f"harness store repair {out}" in err, err
    assert "\n" not in err

    assert main(["store", "repair", str(out)]) == 0
    err = capsys.readouterr().err
    assert "salvaged 24 episode(s) (0 lost" in err, err
    repaired = tmp_path / "o-repaired"
    assert main(["store", "check", str(repaired)]) == 0
    capsys.readouterr()
    assert main(["export", str(repaired)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 24 and sum(r["success"] for r in rows) == 10
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # the damaged store untouched


def test_a_file_that_is_no_sqlite_at_all_is_still_not_a_store(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / STORE_FILENAME).write_bytes(b"x" * 8192)
    assert main(["store", "check", str(out)]) == 4
    assert "not a harness store" in capsys.readouterr().err


def _zeroed(tmp_path, start: int, end: int):
    out = tmp_path / "o"
    write_store(out, two_suites())
    db = out / STORE_FILENAME
    data = bytearray(db.read_bytes())
    data[start:end] = b"\0" * (end - start)
    db.write_bytes(bytes(data))
    return out, hashlib.sha256(db.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", ["table", "report", "export", "run"])
def test_every_command_gives_check_s_verdict_on_a_zeroed_header(tmp_path, capsys, command):
    out, before = _zeroed(tmp_path, 0, 100)
    args = {"table": ["table", str(out)], "report": ["report", str(out)], "export": ["export", str(out)],
            "run": ["run", "suite=eb_alfred", "planner=random", "limit=1", "suite.params.render=false",
                    "progress=false", f"out={out}"]}[command]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "damaged" in err and "header" in err, err
    assert f"harness store repair {out}" in err and "not a harness" not in err, err
    assert hashlib.sha256((out / STORE_FILENAME).read_bytes()).hexdigest() == before


def test_a_zeroed_page_size_field_is_rebuilt_and_every_episode_salvaged(tmp_path, capsys):
    out, before = _zeroed(tmp_path, 16, 18)
    assert main(["store", "check", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "damaged" in err and "header" in err and f"harness store repair {out}" in err, err
    assert main(["table", str(out)]) == 2
    assert f"harness store repair {out}" in capsys.readouterr().err
    assert main(["store", "repair", str(out)]) == 0
    err = capsys.readouterr().err
    assert "salvaged 24 episode(s) (0 lost" in err, err
    assert main(["store", "check", str(tmp_path / "o-repaired")]) == 0
    assert hashlib.sha256((out / STORE_FILENAME).read_bytes()).hexdigest() == before


def test_a_bad_schema_format_byte_is_rebuilt_and_an_unreadable_schema_promises_nothing(tmp_path, capsys):
    """A schema format number SQLite cannot read (header bytes 44-47: 1 to 4) is a header field
    the format fixes: rebuilt on the private copy, every episode salvaged, as the messages say.
    Where SQLite cannot read the schema even so (page 1's b-tree overwritten), no command
    promises that ``store repair`` salvages anything: it cannot. Mutations caught: the schema
    format left out of the header's checks (repair then salvages nothing after promising it),
    and the promise made for an unreadable schema."""
    out = tmp_path / "o"
    write_store(out, two_suites())
    db = out / STORE_FILENAME
    data = bytearray(db.read_bytes())
    data[44:48] = (9).to_bytes(4, "big")
    db.write_bytes(bytes(data))
    assert main(["store", "check", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "header" in err and f"harness store repair {out}` copies every sound record" in err, err
    assert main(["table", str(out)]) == 2
    assert f"harness store repair {out}" in capsys.readouterr().err
    assert main(["store", "repair", str(out)]) == 0
    assert "salvaged 24 episode(s) (0 lost" in capsys.readouterr().err

    out = tmp_path / "p"
    write_store(out, two_suites())
    db = out / STORE_FILENAME
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * 3996  # page 1's b-tree: sqlite_master
    db.write_bytes(bytes(data))
    for args, status in ((["store", "check", str(out)], 1), (["table", str(out)], 2), (["report", str(out)], 2)):
        assert main(args) == status, args
        err = capsys.readouterr().err.strip()
        assert "SQLite cannot read its schema" in err and "cannot salvage it either" in err, (args, err)
        assert "copies every sound record" not in err and "\n" not in err, (args, err)
    assert main(["store", "repair", str(out)]) == 2
    assert "nothing in" in capsys.readouterr().err and not (tmp_path / "p-repaired").exists()
