"""Several stores read as one: the same episode of the same run stored with different results
is refused in one line naming it (or settled by --prefer), never by the stores' order."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from harness.cli.entry import main
from harness.types import EpisodeRecord
from tests.harness.tables.test_table_selection import write_store


def records(successes: list[bool], error_at: int | None = None) -> list[EpisodeRecord]:
    out = []
    for i, ok in enumerate(successes):
        rec = EpisodeRecord("base-s1", "base", "s1", "a", f"e{i}", 0, success=ok, steps=3)
        if i == error_at:
            rec.success, rec.error_kind, rec.error_message = False, "agent", "server down"
        out.append(rec)
    return out


@pytest.fixture
def stores(tmp_path):
    write_store(tmp_path / "a", records([True, False, True, False]))
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    write_store(tmp_path / "b", records([True, True, True, False]))  # e1 disagrees with a
    write_store(tmp_path / "half", records([True, False, True, False], error_at=2))  # an error where a finished
    write_store(tmp_path / "other", [EpisodeRecord("cfg-s1", "cfg_sft", "s1", "a", f"e{i}", 0, success=True)
                                     for i in range(4)])
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_disagreeing_stores_are_refused_naming_the_first_episode(stores, capsys):
    a, b = str(stores / "a"), str(stores / "b")
    code, out, err = run(capsys, "table", a, b)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "episode s1/a/e1 seed 0" in err and "--prefer" in err
    assert "success" in err
    assert run(capsys, "table", b, a) == (code, out, err)
    code, out, err = run(capsys, "export", a, b)
    assert code == 2 and "episode s1/a/e1" in err and out == ""
    code, _, err = run(capsys, "export", a, b, "--all-runs")
    assert code == 2 and "episode s1/a/e1" in err


def test_prefer_settles_it_whatever_the_order(stores, capsys):
    a, b = str(stores / "a"), str(stores / "b")
    for prefer, successes in ((a, 2), (b, 3)):
        for order in ((a, b), (b, a)):
            code, out, _ = run(capsys, "export", *order, "--prefer", prefer)
            assert code == 0
            assert sum(json.loads(line)["success"] for line in out.splitlines()) == successes
        assert run(capsys, "table", a, b, "--prefer", prefer) == run(capsys, "table", b, a, "--prefer", prefer)
    code, _, err = run(capsys, "table", a, b, "--prefer", str(stores / "nope"))
    assert code == 2 and "--prefer" in err


def test_every_pair_reads_the_same_in_both_orders(stores, capsys):
    names = ["a", "copy", "b", "half", "other"]
    for x, y in itertools.combinations(names, 2):
        for command in (["table"], ["table", "--format", "json"], ["export"], ["export", "--all-runs"]):
            one = run(capsys, *command, str(stores / x), str(stores / y))
            two = run(capsys, *command, str(stores / y), str(stores / x))
            if command == ["table"]:
                assert one == two, (x, y)
            elif command[0] == "table":  # the JSON lists the stores read, as given; all else is the same
                if one[0] == 0:
                    a, b = json.loads(one[1]), json.loads(two[1])
                    assert sorted(a.pop("stores")) == sorted(b.pop("stores")) and a == b, (x, y)
                else:
                    assert one == two
            else:  # the export names each row's store; everything else is the same
                strip = lambda text: sorted(  # noqa: E731
                    json.dumps({k: v for k, v in json.loads(line).items() if k not in ("store", "wall_time_s")})
                    for line in text.splitlines())
                assert one[0] == two[0] and strip(one[1]) == strip(two[1]) and one[2] == two[2], (x, y)
    # a finished row wins over an error record, in either order
    code, out, _ = run(capsys, "export", str(stores / "half"), str(stores / "a"))
    assert code == 0 and sum(json.loads(line)["success"] for line in out.splitlines()) == 2
