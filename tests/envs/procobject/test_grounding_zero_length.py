"""A reference of zero length (its evidence only points, [s, s]: the data loader accepts them)
has no defined grounding, like an empty one: IoG would divide by zero. The question is left
out of the grounding means and counted (``no_reference``); the env stores no grounding value
for it and does not fail."""

from __future__ import annotations

import pytest

from envs.procobject.grounding import ground, summarize
from envs.procobject.suite import ProcObjectEnv
from harness.types import EpisodeSpec

POINTS = ([[3, 3]], [[3, 3], [7, 7]], [[0, 0]])


@pytest.mark.parametrize("reference", POINTS)
@pytest.mark.parametrize("predicted", [[], [[0, 5]], [[3, 3]], [[2, 4], [6, 8]]])
def test_a_zero_length_reference_has_no_grounding(predicted, reference):
    assert ground(predicted, reference) is None


def test_it_is_counted_and_left_out_of_the_means():
    s = summarize([ground([[0, 5]], [[2, 2]]), ground([[0, 4]], [[0, 4]]), ground([], [[1, 1], [2, 2]])])
    assert s == {"n": 3, "scored": 1, "no_reference": 2, "mIoU": 1.0, "mIoP": 1.0, "mIoG": 1.0,
                 "IoU@0.3": 1.0, "IoU@0.5": 1.0}
    # a point beside a real span adds no length and changes nothing
    assert ground([[0, 4]], [[0, 4], [9, 9]]) == ground([[0, 4]], [[0, 4]])


def test_the_env_stores_no_grounding_for_it():
    episode = EpisodeSpec(suite="procobject", split="test", episode_id="1", seed=0, instruction="What is poured?",
                          metadata={"answer": "water", "evidence": [[3.0, 3.0]], "clip_start": 0.0, "clip_end": 20.0})
    answered = ProcObjectEnv().answer(episode, '{"answer": "water", "evidence": [[0, 5]]}')
    assert answered.values == {"unreadable": 0, "span_problems": 0}
