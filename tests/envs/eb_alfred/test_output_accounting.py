"""What each parser verdict costs an EB-ALFRED episode, run end to end (real household suite).

EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04:
- evaluator/eb_alfred_evaluator.py:103-120: ``json_to_action`` returning -1 adds one invalid
  action and no env step; :161 ``planner_output_error`` is the planner's ``output_json_error``,
  which vlm_planner.py:166-174 increments only when the parser raised (an out-of-range first
  id, :159-163, is -1 without it);
- evaluator :89-102: -2 (empty plan) ends the episode;
- envs/eb_alfred/EBAlfEnv.py:296-302: ``step`` counts the step, then raises
  NotImplementedError for an id that is not an ``int`` (5.0, True, NaN); the evaluator catches
  it (:150-152) without an invalid action or a history entry (update_info is skipped) and
  plans again.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from envs.eb_alfred.protocol import MAX_STEPS
from envs.eb_alfred.suite import EBAlfredSuite
from harness.interfaces import AgentRequest
from harness.run.runner import Runner
from harness.types import RunSpec
from envs.eb_alfred.parse import parse_plan


class Scripted:
    """Replies with the next text of a script, parsed by the ``embodiedbench`` mode."""

    name = "scripted_text"
    privileged = False
    reads_images = False

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self.seen: list[int] = []

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "texts": self.texts}

    def reset(self, episode: Any) -> None:
        self.k = 0

    def act(self, requests: Sequence[AgentRequest]) -> list[Any]:
        out = []
        for r in requests:
            self.seen.append(len(r.history))
            # A bound on the calls, so that a broken step rule fails instead of looping.
            text = self.texts[min(self.k, len(self.texts) - 1)] if self.k < 3 * MAX_STEPS else plan()
            self.k += 1
            out.append(parse_plan(text, r.observation["actions"]).reply(text))
        return out


def plan(*ids: Any) -> str:
    return json.dumps({"executable_plan": [{"action_id": i, "action_name": "x"} for i in ids]})


def run(texts: Sequence[str]) -> tuple[Any, Scripted]:
    suite = EBAlfredSuite(render=False, generated_per_split=1)
    agent = Scripted(texts)
    spec = RunSpec(suite=suite.name, split="seen", agent=agent.name, variant=agent.name, limit=1)
    (record,) = Runner(spec, suite, agent, None).run().records
    return record, agent


def test_output_errors_and_invalid_first_ids_are_counted_apart() -> None:
    record, _ = run([plan(10_000), "not json", plan(0, "x"), plan(-1), '{"executable_plan": {}}'])
    assert record.invalid_actions == 4  # every unusable output is one invalid action ...
    assert record.planner_output_errors == 2  # ... but only the two the parser raised on are output errors
    assert record.steps == 0 and record.empty_plan and record.agent_calls == 5


def test_non_int_ids_cost_one_step_each_and_replan() -> None:
    record, agent = run([plan(0.0), plan(True, 1, 2), plan(float("nan")), '{"executable_plan": ""}'])
    assert record.steps == 3  # one per reply: the rest of a plan is not run after the raise
    assert record.invalid_actions == 0 and record.planner_output_errors == 0
    assert agent.seen == [0, 0, 0, 0]  # no history line: each call sees the same history
    assert record.empty_plan and "history" not in record.extra


def test_non_int_ids_run_into_the_step_limit() -> None:
    record, agent = run([plan(1.0)])
    assert record.steps == MAX_STEPS and record.termination == "max_steps"
    assert record.invalid_actions == 0 and len(agent.seen) == MAX_STEPS
