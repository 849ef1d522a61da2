"""Per-episode values as a record keeps them (harness/run/runner.py): names to JSON numbers or
None. A value that is NaN or infinite (Python's or numpy's) is stored as None -- no value --
never as ``NaN``/``Infinity`` (not JSON: other readers of the store would fail on it) nor as a
number a cell would average; booleans become 0/1; what is not a number becomes None.

The real runner and store, with the one-step QA suite of tests/harness/judge_fixtures.py
whose env reports the values below at the end of each episode.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np

from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import INFO_VALUES, RunSpec
from tests.harness import judge_fixtures as fx

REPORTED = {"nan": math.nan, "inf": math.inf, "minus_inf": -math.inf, "np_nan": np.float64("nan"),
            "np_inf": np.float32("inf"), "half": 0.5, "three": 3, "np_two": np.int64(2), "yes": True, "no": False,
            "none": None, "text": "n/a", "big": 1e308}
STORED = {"nan": None, "inf": None, "minus_inf": None, "np_nan": None, "np_inf": None, "half": 0.5, "three": 3,
          "np_two": 2.0, "yes": 1, "no": 0, "none": None, "text": None, "big": 1e308}


class ValuesEnv(fx.QAEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, INFO_VALUES: dict(REPORTED)}


class ValuesSuite(fx.QASuite):
    def make_env(self) -> ValuesEnv:
        return ValuesEnv()


def test_nan_and_infinite_values_are_stored_as_none(tmp_path):
    spec = RunSpec(suite=fx.SUITE_NAME, split="test", agent="answerer", variant="v", limit=2, batch_size=2)
    with ResultStore(tmp_path / "out") as store:
        records = Runner(spec, ValuesSuite(questions=2), fx.Answerer(), store).run().records
        frame = store.frame()
    assert [r.values for r in records] == [STORED, STORED]
    exact = json.dumps(STORED, sort_keys=True)  # 3 not 3.0, 1 not true (== would take either)
    assert [json.dumps(r.values, sort_keys=True) for r in records] == [exact, exact]
    assert list(frame["values"]) == [STORED, STORED]
    db = sqlite3.connect(tmp_path / "out" / "results.sqlite")
    try:
        texts = [t for (t,) in db.execute('SELECT "values" FROM episodes')]
    finally:
        db.close()

    def refuse(constant: str):
        raise AssertionError(f"{constant} in a stored value")

    assert [json.loads(t, parse_constant=refuse) for t in texts] == [STORED, STORED]  # strict JSON
    assert [json.dumps(json.loads(t), sort_keys=True) for t in texts] == [exact, exact]
