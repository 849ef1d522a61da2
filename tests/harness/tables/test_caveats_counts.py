"""The agent-failure counts of a table cell (harness/tables/caveats.py ``cells``), on records written
by hand so each count is known:

* "mostly unusable" (§) means **more than half** of the cell's agent replies were unusable
  (docs/tables.md): exactly half is not marked, one reply more is; with no agent calls
  recorded (older stores), more than half of the episodes with output errors;
* an episode's unusable replies are at most its agent calls (an episode can report more
  output errors than calls: a call whose reply was retried in-call counts once).
"""

from __future__ import annotations

import pandas as pd
import pytest

from harness.tables import caveats


def cell(episodes: list[tuple[int, int]]) -> dict:
    """The one cell of records with (planner_output_errors, agent_calls) per episode; calls 0:
    a record that counts no agent calls (an older store's, read back as 0)."""
    df = pd.DataFrame([{"run_id": "r", "suite": "s", "split": "t", "episode_id": f"e{i}", "seed": i,
                        "planner_output_errors": errors, "agent_calls": calls, "extra": {}}
                       for i, (errors, calls) in enumerate(episodes)])
    (out,) = caveats.cells(df, pd.Series(["row"] * len(df)), pd.Series(["t"] * len(df)))
    return out


@pytest.mark.parametrize("episodes, unusable, replies, mostly", [
    ([(1, 1), (1, 1), (0, 1), (0, 1)], 2, 4, False),  # exactly half: not "most"
    ([(2, 2), (0, 2)], 2, 4, False),                   # exactly half, in one episode
    ([(1, 1), (1, 1), (1, 1), (0, 1)], 3, 4, True),    # one more than half
    ([(1, 2), (1, 1), (0, 2)], 2, 5, False),           # 2 of 5: under half
    ([(2, 2), (1, 1), (0, 2)], 3, 5, True),            # 3 of 5: over half
    ([(3, 6)], 3, 6, False), ([(4, 6)], 4, 6, True),   # one episode, either side of half
])
def test_mostly_unusable_means_more_than_half_of_the_replies(episodes, unusable, replies, mostly):
    got = cell(episodes)
    assert (got["unusable_replies"], got["replies"], got["mostly_unusable"]) == (unusable, replies, mostly)


@pytest.mark.parametrize("errors, mostly", [
    ([1, 1, 0, 0], False),  # 2 of 4 episodes with output errors: exactly half
    ([1, 1, 1, 0], True),   # 3 of 4
    ([3, 0], False),        # 1 of 2
    ([1, 2, 0], True),      # 2 of 3
])
def test_without_call_counts_most_episodes_with_output_errors_decide(errors, mostly):
    got = cell([(e, 0) for e in errors])
    assert got["replies"] == 0 and got["mostly_unusable"] is mostly
    assert got["output_error_episodes"] == sum(e > 0 for e in errors)


def test_unusable_replies_are_capped_by_each_episodes_call_count():
    # 5 output errors reported in 1 call: 1 unusable reply of 4, not 5 of 4
    got = cell([(5, 1), (0, 3)])
    assert got["unusable_replies"] == 1 and got["replies"] == 4 and got["mostly_unusable"] is False
    # capped per episode, not over the cell: 3 errors in 2 calls + 0 in 2 -> 2 of 4, not 3 of 4
    got = cell([(3, 2), (0, 2)])
    assert got["unusable_replies"] == 2 and got["mostly_unusable"] is False
    # a record without a call count adds no unusable reply to a cell that counts calls
    got = cell([(0, 2), (0, 2), (4, 0)])
    assert got["unusable_replies"] == 0 and got["replies"] == 4 and got["mostly_unusable"] is False
