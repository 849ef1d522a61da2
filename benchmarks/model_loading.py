"""One load per checkpoint per process: an experiment's runs of one checkpoint, before and after.

``harness run +experiment=NAME`` builds one ``vlm`` planner per run (harness/cli/run.py);
the ``hf`` backend now finds a checkpoint this process loaded already (planners/vlm/backends.py
``LOADED``) instead of loading it again. This script builds the planners of an experiment of
``--runs`` runs (33: CFG-Bench's Table 4) of one checkpoint, as ``harness run`` does, twice in
one process:

* **before**: ``LoadedModels(keep=0)``, every planner loads its own copy (the loading of before);
* **after**: ``LoadedModels(keep=1)``, the first planner loads it and the others share it;

and prints the wall time of each, their ratio and the loads counted. Each planner also answers
one request (an EB-ALFRED first call, ``--max-new-tokens`` new tokens), so a shared model is
shown to serve; the call costs the same in both and is reported apart. What stays per run in
both: the checkpoint's identity hash (headers and samples, harness/util/checkpoint_identity.py) and the
prompt's setup.

The checkpoint is the weight-bound benchmark checkpoint (tests/planners/tiny_vlm.py
``WEIGHT_BOUND``: the real Qwen2.5-VL vocabulary, bfloat16, 320 MB of safetensors); ``--tiny``
takes the tiny test checkpoint instead. A real 7B checkpoint (~15 GB) loads in tens of seconds
from a local disk, so the saving per run grows with it; this measures the mechanism on what
this machine holds.

    python benchmarks/model_loading.py [--runs 33] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build_runs(ckpt: Path, runs: int, keep: int, max_new_tokens: int) -> dict[str, float]:
    from planners.vlm import backends
    from planners.vlm.backends import LoadedModels
    from planners.vlm.planner import VLMPlanner
    from tests.helpers import eb_alfred_requests

    backends.LOADED = LoadedModels(keep=keep)
    request = eb_alfred_requests(1)
    build = call = 0.0
    for _ in range(runs):
        t = time.perf_counter()
        planner = VLMPlanner(suite="eb_alfred", model=str(ckpt), max_new_tokens=max_new_tokens, num_examples=0,
                             image_size=112, json_schema="false")
        build += time.perf_counter() - t
        t = time.perf_counter()
        planner.act(request)
        call += time.perf_counter() - t
        del planner  # the run ends: its planner goes, as in harness run
    loads = backends.LOADED.loads
    backends.LOADED.clear()
    return {"build_s": build, "call_s": call, "loads": loads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=33, help="runs of one checkpoint (33: Table 4)")
    parser.add_argument("--tiny", action="store_true", help="the tiny test checkpoint instead of the weight-bound one")
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--checkpoints", type=Path, default=Path(tempfile.gettempdir()) / "et_bench_ckpts",
                        help="where the benchmark checkpoints are built (cached)")
    args = parser.parse_args()
    from tests.planners.tiny_vlm import build_all, build_weight_bound

    ckpt = build_all(args.checkpoints)["base"] if args.tiny else build_weight_bound(args.checkpoints)
    size = sum(f.stat().st_size for f in ckpt.glob("*.safetensors")) / 1e6
    build_runs(ckpt, 1, 0, args.max_new_tokens)  # warm-up: imports, the page cache holding the weights
    before = build_runs(ckpt, args.runs, 0, args.max_new_tokens)
    after = build_runs(ckpt, args.runs, 1, args.max_new_tokens)
    out = {"runs": args.runs, "checkpoint": "tiny" if args.tiny else "weight-bound", "weights_mb": round(size, 1),
           "before": before, "after": after, "build_ratio": before["build_s"] / after["build_s"],
           "total_ratio": (before["build_s"] + before["call_s"]) / (after["build_s"] + after["call_s"])}
    print(json.dumps(out, indent=2))
    print(f"{args.runs} runs of one checkpoint ({out['checkpoint']}, {size:.0f} MB): planners built in "
          f"{before['build_s']:.1f} s with {before['loads']} loads before, {after['build_s']:.1f} s with "
          f"{after['loads']} load after: {out['build_ratio']:.1f}x; with one call per run "
          f"{out['total_ratio']:.1f}x")


if __name__ == "__main__":
    main()
