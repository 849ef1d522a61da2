"""Token counts of each agent call: the hf backend counts them,
the runner keeps them in the transcript, `harness report` and `harness table` show them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")

from tests.planners.conftest import tiny_ckpts  # noqa: E402,F401 - the session fixture, shared


def test_hf_backend_counts_prompt_and_output_tokens(tiny_ckpts: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec
    from planners.vlm.backends import Generation
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), max_new_tokens=5, num_examples=0, image_size=112)
    conversations = [[{"role": "user", "content": [{"type": "text", "text": "short"}]}],
                     [{"role": "user", "content": [{"type": "text", "text": "a much longer prompt " * 8}]}]]
    texts = planner.backend.generate(conversations)
    for conv, text in zip(conversations, texts):
        alone = planner.backend.processor.apply_chat_template([conv], add_generation_prompt=True, tokenize=True)
        ids = alone["input_ids"] if isinstance(alone, dict) or hasattr(alone, "keys") else alone
        assert isinstance(text, Generation)
        assert text.usage["prompt_tokens"] == len(ids[0])  # the padding of the batch is not counted
        assert 1 <= text.usage["output_tokens"] <= 5
    spec = RunSpec(suite="eb_alfred", split="base", agent="vlm", variant="v", limit=1, record_images=False)
    with ResultStore(tmp_path / "o") as store:
        Runner(spec, EBAlfredSuite(), planner, store).run()
        rows = store.transcripts()
    assert rows and all(r["prompt_tokens"] > 50 and 1 <= r["output_tokens"] <= 5 for r in rows)
