"""One ``vlm`` planner, three suites: the prompt and parser follow the episode's suite
(EB-Manipulation's 7-integer actions, ALFRED's FLARE triplets), through the real runner
with a tiny random-weight checkpoint. Random weights fail the tasks; the pipeline is tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")

FAST = dict(max_new_tokens=8, num_examples=0, image_size=112)


def _run(suite, split: str, planner, tmp_path: Path, limit: int = 2):
    spec = RunSpec(suite=suite.name, split=split, agent="vlm", variant="base", limit=limit, batch_size=limit,
                   record_prompts=True)
    with ResultStore(tmp_path) as store:
        Runner(spec, suite, planner, store).run()
        return store.records(), store.transcripts()


@pytest.mark.slow
@pytest.mark.ci
def test_vlm_on_eb_manipulation(tiny_ckpts: dict[str, Path], tmp_path: Path) -> None:
    pytest.importorskip("robosuite", reason="the EB-Manipulation twin needs the `eb_manipulation` extra")
    from envs.eb_manipulation.suite import EBManipulationSuite
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite="eb_manipulation", model=str(tiny_ckpts["base"]), **FAST)
    records, transcripts = _run(EBManipulationSuite(render=True), "base", planner, tmp_path)
    assert len(records) == 2 and planner.backend.calls >= 1
    for rec in records:
        assert rec.error_kind is None and not rec.success
        # garbage output becomes the original's random action each time (executed, in the history)
        assert rec.planner_output_errors >= 1
    first = transcripts[0]
    assert first["raw_output"] is not None and first["output_error"]
    prompt = json.loads(first["prompt"])  # stored as JSON
    assert "object 1" in prompt[0]["content"][0]["text"]  # the coordinate dictionary is in the prompt
    assert prompt[0]["content"][1] == {"type": "image", "size": [112, 112]}


@pytest.mark.slow
@pytest.mark.ci
def test_vlm_on_alfred_writes_triplet_prompts(tiny_ckpts: dict[str, Path], tmp_path: Path) -> None:
    from envs.alfred.suite import AlfredSuite
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite="alfred", model=str(tiny_ckpts["base"]), **FAST)
    records, transcripts = _run(AlfredSuite(generated_per_split=2), "unseen", planner, tmp_path)
    assert len(records) == 2 and all(r.error_kind is None and not r.success for r in records)
    assert transcripts and all(t["raw_output"] is not None for t in transcripts)


def _identity(planner) -> dict:
    """What the runner hashes of a planner: its declared result-changing settings and identity()."""
    from harness.params import identity_of

    return {"params": identity_of(planner.params), "identity": dict(planner.identity())}


def test_identity_covers_every_suite_prompt(tiny_ckpts: dict[str, Path]) -> None:
    from planners.vlm.planner import VLMPlanner

    a = _identity(VLMPlanner(suite="eb_manipulation", model=str(tiny_ckpts["base"]), **FAST))
    b = _identity(VLMPlanner(suite="eb_manipulation", model=str(tiny_ckpts["base"]), manipulation_shots=2, **FAST))
    c = _identity(VLMPlanner(suite="eb_manipulation", model=str(tiny_ckpts["base"]), on_bad_output="invalid", **FAST))
    d = _identity(VLMPlanner(suite="alfred", model=str(tiny_ckpts["base"]), alfred_k=3, **FAST))
    assert len({str(sorted(x.items())) for x in (a, b, c, d)}) == 4
    with pytest.raises(ValueError, match="on_bad_output"):
        VLMPlanner(suite="eb_manipulation", model=str(tiny_ckpts["base"]), on_bad_output="skip", **FAST)
