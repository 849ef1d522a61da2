"""The ``vlm`` planner passes the agent conformance checks (harness.check.conformance.check_agent)
with a tiny random-weight checkpoint loaded through the real ``hf`` backend: one reset per
attempt, determinism, records equal lockstep / pipelined / process executor, and (on
EB-Manipulation, where the tiny model's garbage answers become the suite's seeded random
actions) fallback draws that differ between calls and episodes.

The identity check varies every declared field and runs episodes for each: with a model
that is one build per field, so it is left to the declaration tests
(tests/planners/test_vlm_contract.py)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from harness.check.conformance import check_agent

CHECKS = ["contract", "reset", "determinism", "schedule", "draws"]


@pytest.mark.slow
@pytest.mark.ci
def test_vlm_conforms_on_eb_alfred(tiny_ckpts):
    report = check_agent("vlm", "eb_alfred", agent_params={"model": str(tiny_ckpts["base"]), "max_new_tokens": 24},
                         suite_params={"generated_per_split": 4}, episodes=2, checks=CHECKS)
    assert report.passed == CHECKS


@pytest.mark.slow
def test_vlm_conforms_on_eb_manipulation(tiny_ckpts):
    if importlib.util.find_spec("mujoco") is None:
        if os.environ.get("REQUIRE_EB_MANIPULATION") == "1":
            pytest.fail("EB-Manipulation needs mujoco (REQUIRE_EB_MANIPULATION=1)", pytrace=False)
        pytest.skip("EB-Manipulation needs the eb_manipulation extra (mujoco)")
    report = check_agent("vlm", "eb_manipulation", agent_params={"model": str(tiny_ckpts["base"]), "max_new_tokens": 24},
                         suite_params={"image_size": 64}, episodes=2, checks=CHECKS)
    assert report.passed == CHECKS
