"""A live episode holds at most SPOOL_CHARS characters per agent call (harness/util/spool.py): a
long reply waits on disk until the episode's record and transcript are committed, and is
stored exactly as it came."""

from __future__ import annotations

import gc
import json
import os

from harness.cli.entry import main
from harness.util.spool import SPOOL_CHARS, Spooled, spool, unspool
from harness.store import ResultStore
from harness.check.scripted import scripted_replies


def test_a_long_text_round_trips_through_the_disk_and_its_file_goes():
    text = "\U0001F600" * SPOOL_CHARS + "\ud800 tail"  # a lone surrogate too (from a JSON escape)
    held = spool(text)
    assert isinstance(held, Spooled) and len(held) == len(text) and os.path.isfile(held.path)
    assert unspool(held) == text
    short = "x" * SPOOL_CHARS
    assert spool(short) is short and unspool(short) is short
    path = held.path
    del held
    gc.collect()
    assert not os.path.exists(path)


def test_a_live_episode_keeps_long_replies_on_disk_and_the_store_gets_them_whole(tmp_path, monkeypatch):
    long_plan = json.dumps({"visual_state_description": "\U0001F600" * 50_000 + "\ud800",
                            "reasoning_and_reflection": "r", "language_plan": "l",
                            "executable_plan": [{"action_id": 0, "action_name": "find a Cart"}]})
    held: list = []
    add_many = ResultStore.add_many

    def watching(self, items):
        for item in items:
            for entry in (item[1] if isinstance(item, tuple) else ()):
                held.append(entry["raw_output"])
        return add_many(self, items)

    monkeypatch.setattr(ResultStore, "add_many", watching)
    out = tmp_path / "o"
    with scripted_replies([long_plan, long_plan, json.dumps({"executable_plan": []})], name="long"):
        assert main(["run", "suite=eb_alfred", "split=seen", "planner=vlm", "planner.params.backend=scripted",
                     "planner.params.script=long", "planner.params.model=scripted-model", "limit=2",
                     "suite.params.render=false", "suite.params.generated_per_split=40", f"out={out}",
                     "progress=false"]) == 0
    assert held and all(isinstance(v, Spooled) or v is None or len(v) <= SPOOL_CHARS for v in held)
    assert any(isinstance(v, Spooled) for v in held)
    with ResultStore(out, readonly=True) as store:
        stored = [t["raw_output"] for t in store.transcripts()]
    assert long_plan.replace("\ud800", "\\ud800") in stored  # lone surrogates are stored escaped
