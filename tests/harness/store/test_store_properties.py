"""Property-based tests of the result store: whatever text, numbers and
nesting a model, an exception or an env puts into a record, the store commits it,
never loses another record of the same group, and reads back what was stored:
strings losslessly (lone surrogates as ``\\udXXX`` escapes in text columns, as JSON
writes them in ``extra``), integers beyond SQLite's 64 bits as their decimal text
with an ``n`` suffix (found by this test: a bare decimal was rounded to a REAL).
Each example is bounded in time (``deadline``)."""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.store import ResultStore
from harness.store.schema import _storable
from harness.types import EpisodeRecord, RunSpec

#: Any code point, lone surrogates included (what a JSON "\ud800" escape decodes to).
any_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=200)
huge_ints = st.integers(min_value=-(2**200), max_value=2**200)
floats = st.floats(allow_nan=False)
json_leaf = st.one_of(st.none(), st.booleans(), huge_ints, floats, any_text)
#: Deeply nested JSON-like values (up to ~50 levels).
nested = st.recursive(json_leaf, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                        st.dictionaries(any_text, kids, max_size=3)),
                      max_leaves=60)

SETTINGS = settings(max_examples=60, deadline=timedelta(seconds=2), derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _expected_text(value: str) -> str:
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _deep(depth: int) -> object:
    value: object = "leaf"
    for i in range(depth):
        value = {"k": [value, i]}
    return value


@SETTINGS
@given(episode_id=any_text, message=any_text, raw=any_text,
       steps=st.one_of(huge_ints, st.sampled_from([2**63, -(2**63) - 1, 2**63 - 1, -(2**63)])), extra=nested)
def test_any_record_is_committed_with_its_group_and_read_back(tmp_path_factory, episode_id, message, raw, steps,
                                                              extra):
    path = tmp_path_factory.mktemp("store")
    bad = EpisodeRecord("r", "v", "s", "a", episode_id, 0, error_kind="agent", error_message=message,
                        steps=steps, extra={"x": extra})
    good = EpisodeRecord("r", "v", "s", "a", "\0good" if episode_id != "\0good" else "\0other", 1, success=True)
    with ResultStore(path) as store:
        store.begin_run("r", RunSpec(suite="s", split="a", agent="x", variant="v"), {"e": extra}, {"raw": raw})
        written = store.add_many([(bad, [{"call": 0, "raw_output": raw, "prompt": extra}]), good])
        assert written == 2
        recs = {r.seed: r for r in store.records()}
        (row,) = store.transcripts()
    assert recs[1].success  # the other record of the group was committed too
    back = recs[0]
    assert back.episode_id == _expected_text(episode_id)
    assert back.error_message == _expected_text(message)
    assert back.steps == (steps if -(2**63) <= steps < 2**63 else f"{steps}n")
    # extra goes through JSON (ensure_ascii): lossless for every string, surrogates included
    assert back.extra == json.loads(json.dumps({"x": extra}, sort_keys=True, default=str))
    assert row["raw_output"] == _expected_text(raw)


@SETTINGS
@given(value=st.one_of(any_text, huge_ints, floats, st.binary(max_size=50)))
def test_storable_values_bind_in_sqlite(value):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (v)")
    db.execute("INSERT INTO t VALUES (?)", (_storable(value),))
    (back,) = db.execute("SELECT v FROM t").fetchone()
    if isinstance(value, float) and not math.isnan(value):
        assert back == value
    elif isinstance(value, bytes):
        assert back == value


def test_deep_nesting_is_stored_not_a_recursion_error(tmp_path):
    """200 levels of nesting in extra (deeper than any real history) commit and read back."""
    rec = EpisodeRecord("r", "v", "s", "a", "deep", 0, extra={"d": _deep(200)})
    with ResultStore(tmp_path) as store:
        store.begin_run("r", RunSpec(suite="s", split="a", agent="x", variant="v"), {}, {})
        assert store.add_many([rec]) == 1
        (back,) = store.records()
    assert back.extra == json.loads(json.dumps({"d": _deep(200)}))
