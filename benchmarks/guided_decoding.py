"""Per-token cost of the hf backend's constrained JSON decoding (xgrammar).

Two measurements, both on the CPU:

1. **Grammar work per decoding step at a real vocabulary size.** xgrammar's
   cost per step is filling the allowed-token bitmask (and accepting the
   chosen token); it grows with the vocabulary, not with the model. No real
   tokenizer is on this machine, so the vocabulary is synthetic: 151,665
   entries (Qwen2.5-VL's tokenizer size) made of every printable ASCII
   character and seeded random strings of 2-12 characters drawn from
   letters, digits, spaces and JSON punctuation. A schema-valid EB-ALFRED
   reply is fed one character-token at a time; each step's
   ``fill_next_token_bitmask`` + ``accept_token`` is timed.
2. **End to end on the tiny test checkpoint** (tests/planners/tiny_vlm.py,
   vocabulary 2,048): the same 4 requests with and without ``json_schema``,
   ``max_new_tokens`` new tokens each (random weights rarely stop), per new token.

    python benchmarks/guided_decoding.py [--steps 400] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VOCAB = 151_665


def synthetic_vocab(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + ' _,.:{}[]"'
    vocab = list(dict.fromkeys(string.printable))
    seen = set(vocab)
    while len(vocab) < n:
        tok = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 12)))
        if tok not in seen:
            seen.add(tok)
            vocab.append(tok)
    return vocab


def grammar_step_cost(steps: int) -> dict[str, float]:
    import xgrammar as xgr

    from envs.eb_alfred.prompt import OUTPUT_SCHEMA

    vocab = synthetic_vocab(VOCAB)
    vocab.append("</s>")
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, stop_token_ids=[len(vocab) - 1])
    t0 = time.perf_counter()
    compiled = xgr.GrammarCompiler(info).compile_json_schema(json.dumps(OUTPUT_SCHEMA))
    compile_s = time.perf_counter() - t0
    reply = json.dumps({"visual_state_description": "An apple on the counter, a closed fridge.",
                        "reasoning_and_reflection": "Find the apple, pick it up, then cool it in the fridge.",
                        "language_plan": "1. find a Apple 2. pick up the Apple 3. find a Fridge",
                        "executable_plan": [{"action_id": i, "action_name": f"action {i}"} for i in range(12)]})
    index = {t: i for i, t in enumerate(vocab)}
    tokens = [index[c] for c in reply][:steps]
    matcher = xgr.GrammarMatcher(compiled)
    mask = xgr.allocate_token_bitmask(1, len(vocab))
    times = []
    for tok in tokens:
        t = time.perf_counter()
        matcher.fill_next_token_bitmask(mask, 0)
        assert matcher.accept_token(tok)
        times.append(time.perf_counter() - t)
    times.sort()
    return {"vocab": len(vocab), "compile_s": compile_s, "steps": len(times),
            "mean_us": statistics.fmean(times) * 1e6, "p95_us": times[int(0.95 * (len(times) - 1))] * 1e6}


def end_to_end(max_new_tokens: int) -> dict[str, float]:
    from tests.helpers import eb_alfred_requests
    from tests.planners.tiny_vlm import build_all
    from planners.vlm.planner import VLMPlanner

    ckpt = build_all(Path(tempfile.mkdtemp(prefix="tiny_vlm_")))["base"]
    requests = eb_alfred_requests(4)
    out = {}
    for on in (False, True):
        planner = VLMPlanner(suite="eb_alfred", model=str(ckpt), json_schema=on, max_new_tokens=max_new_tokens, num_examples=0,
                             image_size=112)
        planner.act(requests)  # warm-up (and the grammar's compilation)
        one = VLMPlanner(suite="eb_alfred", model=str(ckpt), json_schema=on, max_new_tokens=1, num_examples=0, image_size=112)
        one.act(requests)
        full = prefill = float("inf")
        generate, seen = planner.backend.model.generate, []

        def counting(*a, _generate=generate, _seen=seen, **kw):  # records the decoding steps taken
            result = _generate(*a, **kw)
            _seen.append(result.shape[1] - kw["input_ids"].shape[1])
            return result

        # On the model object both planners share (one load per process): removed below.
        planner.backend.model.generate = counting
        for _ in range(3):  # the least of 3: the machine is shared
            t = time.perf_counter()
            planner.act(requests)
            full = min(full, time.perf_counter() - t)
            steps = seen[-1]  # a batch whose objects are all complete stops early
            t = time.perf_counter()
            one.act(requests)
            prefill = min(prefill, time.perf_counter() - t)
        del planner.backend.model.generate
        out["on" if on else "off"] = (full - prefill) / max(1, steps - 1) * 1e3
        out["steps_on" if on else "steps_off"] = steps
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    args = ap.parse_args()
    g = grammar_step_cost(args.steps)
    print(f"grammar, synthetic vocabulary of {g['vocab']}: compile {g['compile_s']:.2f} s; per step "
          f"mean {g['mean_us']:.0f} us, p95 {g['p95_us']:.0f} us over {g['steps']} steps")
    e = end_to_end(args.max_new_tokens)
    print(f"tiny checkpoint, batch of 4, per decoding step: {e['off']:.2f} ms free, {e['on']:.2f} ms constrained "
          f"(+{e['on'] - e['off']:.2f} ms; {e['steps_off']} and {e['steps_on']} steps)")


if __name__ == "__main__":
    main()
