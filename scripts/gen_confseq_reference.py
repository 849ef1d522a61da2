"""Regenerate tests/data/confseq_reference.json: reference values of the betting confidence
sequences computed by the authors' own implementation, confseq (github.com/gostevehoward/confseq),
for tests/harness/stats/test_sequential.py to compare harness.stats.sequential.betting with.

It imports confseq's pure-Python modules from a checkout (``src/confseq/betting.py``,
``betting_strategies.py`` and the modules they import); confseq's compiled extension is never
imported (its ``__init__`` is empty). ``betting.py`` imports matplotlib (plots) and
multiprocess (a parallel grid) at module level, neither used by the functions called here:
where they are not installed they are replaced by empty modules. Needs numpy and scipy.
Not run by the tests (confseq is not a dependency); the JSON holds only numbers.

    python scripts/gen_confseq_reference.py --confseq <confseq checkout> [--out tests/data/confseq_reference.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

#: The sequences (fixed here so the JSON is self-contained: the inputs are stored with the outputs).
SEED = 20261207
ALPHAS = (0.05, 0.1, 0.01)
MEANS = (0.3, 0.5, 0.62)
BREAKS = 1000


def sequences() -> dict[str, list[float]]:
    rng = np.random.default_rng(SEED)
    binary = rng.binomial(1, 0.3, 150).astype(float)
    beta = rng.beta(2, 5, 150)
    paired = (rng.binomial(1, 0.7, 150) - rng.binomial(1, 0.5, 150) + 1) / 2  # a paired binary comparison, rescaled
    scores = (rng.beta(3, 2, 150) - rng.beta(2, 2, 150) + 1) / 2  # a paired score comparison, rescaled
    return {"binary": binary.tolist(), "beta": beta.tolist(), "paired_binary": paired.tolist(),
            "paired_scores": scores.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--confseq", required=True, type=Path, help="a checkout of github.com/gostevehoward/confseq")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/confseq_reference.json")
    args = ap.parse_args()
    for name in ("matplotlib", "matplotlib.pyplot", "multiprocess"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.path.insert(0, str(args.confseq / "src"))
    from confseq import betting, betting_strategies  # noqa: E402 (the checkout's pure-Python modules)

    commit = subprocess.run(["git", "-C", str(args.confseq), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    seqs = sequences()
    hedged, capital = [], []
    for name, x in seqs.items():
        xs = np.asarray(x, dtype=float)
        for alpha in ALPHAS:
            lo, hi = betting.hedged_cs(xs, alpha=alpha, breaks=BREAKS, running_intersection=True)
            hedged.append({"sequence": name, "alpha": alpha, "lower": [float(v) for v in lo],
                           "upper": [float(v) for v in hi]})
        for m in MEANS:
            mart = betting.betting_mart(xs, m, theta=1, lambdas_fn_positive=betting_strategies.lambda_aKelly,
                                        trunc_scale=0.5)
            capital.append({"sequence": name, "m": m, "capital": [float(v) for v in mart]})
    out = {
        "source": "github.com/gostevehoward/confseq",
        "commit": commit,
        "generated_by": "scripts/gen_confseq_reference.py",
        "functions": {
            "hedged_cs": f"confseq.betting.hedged_cs(x, alpha=alpha, breaks={BREAKS}, running_intersection=True) "
                         "(defaults: theta=1/2, trunc_scale=1/2, prior_mean=1/2, prior_variance=1/4, fake_obs=1)",
            "betting_mart": "confseq.betting.betting_mart(x, m, theta=1, "
                            "lambdas_fn_positive=confseq.betting_strategies.lambda_aKelly, trunc_scale=0.5)",
        },
        "sequences": seqs,
        "hedged_cs": hedged,
        "betting_mart_aKelly": capital,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, indent=1)
    text = re.sub(r"\[\s+([-0-9.e,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)  # one line per list
    args.out.write_text(text + "\n")
    print(f"wrote {args.out} (confseq {commit})")


if __name__ == "__main__":
    main()
