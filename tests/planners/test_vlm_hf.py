"""The ``hf`` backend on tiny random-weight checkpoints (Qwen2-VL, Qwen2.5-VL, LoRA adapters)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.helpers import eb_alfred_requests

from envs.eb_alfred.suite import EBAlfredSuite
from harness.interfaces import Agent, AgentReply
from harness.params import identity_of
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec
from harness.util.checkpoint_identity import checkpoint_identity

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")

#: Enough to exercise decoding; random weights never stop on their own.
FAST = dict(max_new_tokens=6, num_examples=0, image_size=112)




@pytest.mark.parametrize("family", ["base", "qwen2"])
def test_batched_act_on_both_families(tiny_ckpts: dict[str, Path], family: str) -> None:
    from planners.vlm.planner import VLMPlanner

    # qwen2: the checkpoint's own (image-only) processor class via trust_remote_code, as
    # `transformers serve` loads it; base: the stock class rebuilt without its video half.
    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts[family]), trust_remote_code=family == "qwen2", **FAST)
    expected = "ImageOnlyQwen2VLProcessor" if family == "qwen2" else "ImageOnlyQwen2_5_VLProcessor"
    assert type(planner.backend.processor).__name__ == expected
    assert isinstance(planner, Agent) and planner.reads_images and not planner.privileged
    requests = eb_alfred_requests(3)
    replies = planner.act(requests)
    assert planner.backend.calls == 1 and planner.backend.served == 3  # one generate for all three
    assert len(replies) == 3
    for reply in replies:
        assert isinstance(reply, AgentReply) and isinstance(reply.raw_output, str)
        # Random weights: an unusable output is an error verdict with no actions, never an exception.
        assert (reply.output_error is None) or (list(reply.actions) == [])
        assert reply.prompt[0]["content"][0] == {"type": "image", "size": [112, 112]}
    # Greedy decoding: the same request gives the same text.
    again = planner.act(requests[:1])[0]
    assert again.raw_output == planner.act(requests[:1])[0].raw_output


def test_adapters_load_and_enter_the_identity(tiny_ckpts: dict[str, Path]) -> None:
    from peft import PeftModel

    from planners.vlm.planner import VLMPlanner

    base = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), **FAST)
    favor = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["favor"]), **FAST)
    cfg = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["cfg"]), **FAST)
    merged = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["cfg"]),
                        merge_adapter=True, **FAST)
    assert isinstance(favor.backend.model, PeftModel) and not isinstance(merged.backend.model, PeftModel)
    # What the runner hashes: the declared result-changing settings beside identity().
    ids = [json.dumps([identity_of(p.params), p.identity()], sort_keys=True) for p in (base, favor, cfg, merged)]
    assert len(set(ids)) == 4
    assert base.identity()["backend"]["model"] == cfg.identity()["backend"]["model"]
    # The adapter changes the model's output distribution (LoRA B is non-zero).
    import torch

    req = eb_alfred_requests(1)
    conv = [base.adapter.prompts.messages(r.episode.instruction, r.observation["actions"], (), r.observation["image"],
                                          False) for r in req]
    inputs = base.backend.processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=True,
                                                        return_dict=True, return_tensors="pt")
    with torch.inference_mode():
        a = base.backend.model(**inputs).logits[0, -1]
        b = cfg.backend.model(**inputs).logits[0, -1]
        c = merged.backend.model(**inputs).logits[0, -1]
    assert not torch.allclose(a, b) and torch.allclose(b, c, atol=1e-4)


def test_unknown_and_misplaced_parameters_are_errors(tiny_ckpts: dict[str, Path]) -> None:
    from planners.vlm.planner import VLMPlanner

    with pytest.raises(TypeError):
        VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), temperature=0.7)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="base_url"):
        VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="needs model"):
        VLMPlanner(suite="eb_alfred")
    with pytest.raises(ValueError, match="parser"):
        VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), parser="strict")


def test_runner_records_output_errors_and_transcripts(tiny_ckpts: dict[str, Path], tmp_path: Path) -> None:
    """Random weights produce no usable plan: every call is one invalid action without an env
    step, the episode ends at EB-ALFRED's 10 invalid actions, and the raw outputs are kept."""
    from planners.vlm.planner import VLMPlanner

    suite = EBAlfredSuite(render=True, generated_per_split=2)
    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["favor"]), **FAST)
    spec = RunSpec(suite=suite.name, split="seen", agent="vlm", variant="favor_sft", limit=2, record_prompts=True)
    store = ResultStore(tmp_path)
    summary = Runner(spec, suite, planner, store).run()
    assert len(summary.records) == 2
    for r in summary.records:
        assert r.error_kind is None and not r.success
        assert r.steps == 0 and r.planner_output_errors == 10
    assert planner.backend.calls == 10  # both episodes served by each call
    rows = store.transcripts([summary.run_id])
    store.close()
    assert len(rows) == 20
    for row in rows:
        assert isinstance(row["raw_output"], str) and row["output_error"] and row["actions"] == 0
        assert "## Now the human instruction is:" in str(row["prompt"])
    # Unusable output is not added to the history: every prompt of an episode is the same.
    by_episode: dict[str, set] = {}
    for row in rows:
        by_episode.setdefault(row["episode_id"], set()).add(str(row["prompt"]))
    assert all(len(prompts) == 1 for prompts in by_episode.values())
    for r in summary.records:
        assert r.invalid_actions == 10 and r.termination == "max_invalid"


def test_checkpoint_identity_is_cheap_and_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.util.checkpoint_identity as hasher

    monkeypatch.setattr(hasher, "FULL_HASH_BYTES", 1 << 20)  # the 4 MiB weights below are sampled
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"hidden_size": 8}')
    header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 20], "data_offsets": [0, 4 << 20]}}).encode()
    data = bytearray(4 << 20)
    (ckpt / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(data))
    first = checkpoint_identity(ckpt)
    assert first == checkpoint_identity(ckpt) and first["mode"] == "sampled"
    # A different trained value at a sampled position (the start of the data) changes it.
    data[0] = 1
    (ckpt / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(data))
    second = checkpoint_identity(ckpt)
    assert second != first
    # Every byte counts with full=True.
    data[2 << 20] = 7
    (ckpt / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(data))
    assert checkpoint_identity(ckpt, full=True)["mode"] == "full"
    (ckpt / "config.json").write_text('{"hidden_size": 9}')
    assert checkpoint_identity(ckpt) != second
    assert checkpoint_identity("org/some-model") == {"name": "org/some-model", "local": False}


@pytest.mark.parametrize("dtype", ["auto", "bfloat16"])
def test_batched_generation_equals_one_by_one(tiny_ckpts: dict[str, Path], dtype: str) -> None:
    """Left padding must not change what a conversation gets: the padding-aware CPU attention
    (planners/vlm/attention.py) runs each row's prefill on its own tokens. Also in bfloat16, the
    precision real checkpoints are saved in (benchmarks/planner_batching.py --weight-bound runs
    in it). Mutation guarded: a prefill that lets real tokens attend to the padding."""
    from planners.vlm.attention import NAME
    from planners.vlm.planner import VLMPlanner

    # Free decoding: the schema's grammar forces the first tokens whatever the logits say.
    # 24 tokens: the random model's first 12 are the same for four of these prompts; later ones differ.
    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), max_new_tokens=24, num_examples=2,
                         image_size=112,
                         dtype=dtype, json_schema=False)
    assert str(next(planner.backend.model.parameters()).dtype) == ("torch.bfloat16" if dtype != "auto"
                                                                   else "torch.float32")
    assert planner.identity()["backend"]["attn_implementation"] == NAME
    requests = eb_alfred_requests(6)  # different scenes: different prompt lengths, so real padding
    batched = planner.act(requests)
    alone = [planner.act([r])[0] for r in requests]
    assert [b.raw_output for b in batched] == [a.raw_output for a in alone]
    assert len({a.raw_output for a in alone}) > 1  # the replies depend on the prompt


@pytest.mark.parametrize("batch", [3, 1])
def test_static_cache_gives_the_default_cache_logits(tiny_ckpts: dict[str, Path], batch: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-place KV cache (transformers' StaticCache, ``cache_implementation="static"``, whose
    unfilled tail planners/vlm/attention.py leaves out) must change speed only: every step's
    logits equal those of transformers' default DynamicCache, bit for bit, left-padded (3
    prompts of different lengths) and alone (no padding). The backend must actually use it.
    Mutations guarded: the unfilled tail attended (crash or different logits), the filled part
    cut one slot short, the backend not asking for the static cache."""
    import torch
    from transformers.cache_utils import StaticCache

    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), max_new_tokens=12, num_examples=1,
                         image_size=112)
    backend = planner.backend
    conversations = []
    monkeypatch.setattr(backend, "generate", lambda c, **kw: conversations.extend(c) or ["{}"] * len(c))
    planner.act(eb_alfred_requests(3)[:batch])
    monkeypatch.undo()
    inputs = backend.processor.apply_chat_template(
        conversations, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt",
        processor_kwargs={"padding": True})
    common = dict(do_sample=False, max_new_tokens=12, temperature=None, top_p=None, top_k=None,
                  pad_token_id=backend.processor.tokenizer.pad_token_id, return_dict_in_generate=True,
                  output_logits=True)
    with torch.inference_mode():
        default = backend.model.generate(**inputs, **common)
        static = backend.model.generate(**inputs, **common, cache_implementation="static")
    assert len(default.logits) == len(static.logits) == 12
    assert all(torch.equal(a, b) for a, b in zip(default.logits, static.logits))
    assert torch.equal(default.sequences, static.sequences)

    updates = []
    real_update = StaticCache.update
    monkeypatch.setattr(StaticCache, "update", lambda self, *a, **k: updates.append(1) or real_update(self, *a, **k))
    backend.generate(conversations[:2])
    assert len(updates) >= 12  # every layer, every step


def test_constrained_decoding_keeps_every_reply_inside_the_schema(tiny_ckpts: dict[str, Path]) -> None:
    """``json_schema=true`` on the hf backend (EmbodiedBench gives local models the schema as
    ``response_format``: planner/remote_model.py:95-121 at b247936): every reply of a random-weight
    model is a prefix of a schema-valid object, which the same model's free replies are not."""
    xgr = pytest.importorskip("xgrammar")
    from planners.vlm.planner import VLMPlanner
    from envs.eb_alfred.prompt import OUTPUT_SCHEMA

    fast = dict(FAST, max_new_tokens=40)
    on = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), json_schema=True, **fast)
    off = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), json_schema=False, **fast)
    assert on.identity()["backend"]["guided_decoding"].startswith("xgrammar==")
    assert off.identity()["backend"]["json_schema"] is False and on.identity() != off.identity()
    requests = eb_alfred_requests(3)
    grammar = on.backend._grammar(OUTPUT_SCHEMA)

    def inside(text: str) -> bool:
        return xgr.GrammarMatcher(grammar).accept_string(text)

    constrained = [r.raw_output for r in on.act(requests)]
    assert all(t.startswith('{"') and inside(t) for t in constrained), constrained
    assert not any(inside(r.raw_output) for r in off.act(requests))
