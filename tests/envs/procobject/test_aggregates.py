"""ProcObject-10K's overall figures are pooled over questions, as its paper reports them ("the mean
IoU across all samples", its section on grounding metrics): the suite declares no ``mean_over``, so
a breakdown's ``all`` row (the mean over every question) is the paper's figure and no
mean-over-types row is printed."""

from __future__ import annotations

import pytest

from envs.procobject.plugin import SUITE
from harness.scoring.summaries import records_frame
from harness.tables.build import breakdown_table
from harness.tables.columns import ALL
from harness.types import EpisodeRecord


def test_procobject_pools_questions_as_its_paper_does():
    assert SUITE.mean_over is None
    ious = {"mistakes": [0.0, 0.0, 0.0, 0.6], "readiness": [1.0]}
    df = records_frame([EpisodeRecord(run_id="r", variant="base", suite="procobject", split="test",
                                      episode_id=f"{t}{i}", seed=0, task_type=t, values={"iou": v})
                        for t, vs in ious.items() for i, v in enumerate(vs)])
    t = breakdown_table(df, by="task_type", metrics=("miou",))
    assert list(t.index) == ["mistakes", "readiness", ALL]
    assert t.at[ALL, ("base", "miou")] == pytest.approx(1.6 / 5)  # not (0.15 + 1.0) / 2
