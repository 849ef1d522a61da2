"""The sequential paired test (``harness.sequential``) on simulated paired outcomes.

Two questions, each answered from ``--runs`` simulated comparisons per setting (default
10,000; vectorised numpy, a few minutes on 2 cores):

Both rules of ``harness.sequential`` are measured (``betting_agrapa``, the default, first).

1. **Error under the null.** Both variants have the same per-episode mean; a comparison
   that ever decides "better" or "worse" within ``--horizon`` pairs (default 500) is a false
   decision. Paired binary outcomes (success rate p = 0.05 ... 0.95, the two variants'
   outcomes independent, and correlated with rho = 0.5) and paired bounded scores in [0, 1]
   (Beta with mean p and concentration 4). Printed with a 95 % Wilson interval of the
   Monte-Carlo rate; Ville's inequality says the true rate is <= alpha.
2. **Episodes to a decision.** The baseline succeeds with 0.40, the variant with 0.40 +
   gap (gap = 5, 10, 20, 30 points), outcomes independent within a pair (rho = 0: the
   hardest case for pairing). The sequential test looks after every pair and stops at a
   decision or at a cap of 3x the fixed design's n at 80 % power. Beside it: the fixed-sample
   paired design (the two-sided paired z-test on the differences, n = ((z_{1-alpha/2} +
   z_power) sd / gap)^2) sized for the *same* power the sequential test reached by its cap.

    python benchmarks/sequential.py [--runs 10000] [--horizon 500] [--alpha 0.05] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.sequential import DEFAULT_RULE, RULES, first_crossing, race, rescale  # noqa: E402

#: Simulated comparisons per chunk (bounds memory: chunk x horizon floats, a few times over).
CHUNK = 1000


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial proportion k/n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_binary(rng: np.random.Generator, size: tuple[int, int], pa: float, pb: float, rho: float) -> np.ndarray:
    """Differences a - b of paired Bernoulli outcomes with marginals pa, pb and correlation rho."""
    p11 = pa * pb + rho * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    up, down = pa - p11, pb - p11  # P(a=1, b=0), P(a=0, b=1)
    if min(p11, up, down) < -1e-12:
        raise ValueError(f"no joint distribution with pa={pa}, pb={pb}, rho={rho}")
    u = rng.random(size)
    return np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))


def paired_scores(rng: np.random.Generator, size: tuple[int, int], p: float) -> np.ndarray:
    """Differences of two independent Beta(4p, 4(1-p)) scores (same mean p)."""
    return rng.beta(4 * p, 4 * (1 - p), size) - rng.beta(4 * p, 4 * (1 - p), size)


def decisions(make, runs: int, horizon: int, alpha: float, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """(pair at decision or 0, direction) for ``runs`` comparisons of ``horizon`` pairs."""
    whens, sides = [], []
    for start in range(0, runs, CHUNK):
        d = make((min(CHUNK, runs - start), horizon))
        when, side = first_crossing(rescale(d, 1.0), alpha, rule=rule)
        whens.append(when)
        sides.append(side)
    return np.concatenate(whens), np.concatenate(sides)


def null_rates(rng: np.random.Generator, runs: int, horizon: int, alpha: float, rule: str) -> None:
    ps = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    print(f"\n## False decisions under the null ({rule}, alpha = {alpha}, {runs} runs, up to {horizon} pairs each)\n")
    print("| outcome | p | false decisions | rate | 95 % MC interval |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for label, make_of in (("binary, rho = 0", lambda p: lambda s: paired_binary(rng, s, p, p, 0.0)),
                           ("binary, rho = 0.5", lambda p: lambda s: paired_binary(rng, s, p, p, 0.5)),
                           ("score Beta(4p, 4(1-p))", lambda p: lambda s: paired_scores(rng, s, p))):
        for p in ps:
            when, _side = decisions(make_of(p), runs, horizon, alpha, rule)
            k = int(np.sum(when > 0))
            lo, hi = wilson(k, runs)
            worst = max(worst, k / runs)
            print(f"| {label} | {p:.2f} | {k} | {k / runs:.4f} | [{lo:.4f}, {hi:.4f}] |")
    print(f"\nlargest false-decision rate: {worst:.4f} (alpha = {alpha})")


def fixed_n(gap: float, sd: float, alpha: float, power: float) -> float:
    """Pairs the two-sided paired z-test needs for ``power`` at mean difference ``gap``."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    return ((z(1 - alpha / 2) + z(power)) * sd / gap) ** 2


def savings(rng: np.random.Generator, runs: int, alpha: float) -> None:
    pb = 0.40
    print(f"\n## Paired episodes to a decision (baseline 0.40, outcomes independent within a pair, "
          f"alpha = {alpha}, {runs} runs)\n")
    print("| rule | gap (points) | cap (pairs) | sequential power | E[pairs] sequential | median | "
          "fixed design at that power | sequential / fixed | wrong direction |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rule, gap_pts in ((r, g) for r in RULES for g in (5, 10, 20, 30)):
        gap = gap_pts / 100
        pa = pb + gap
        var = pa * (1 - pa) + pb * (1 - pb)  # var(a - b), independent within a pair
        sd = math.sqrt(var)
        cap = int(math.ceil(3 * fixed_n(gap, sd, alpha, 0.8)))
        when, side = decisions(lambda s: paired_binary(rng, s, pa, pb, 0.0), runs, cap, alpha, rule)
        right = (when > 0) & (side == 1)
        wrong = int(np.sum((when > 0) & (side == -1)))
        power = float(np.mean(right))
        used = np.where(when > 0, when, cap)
        n_fixed = fixed_n(gap, sd, alpha, min(power, 0.999999))
        print(f"| {rule} | {gap_pts} | {cap} | {power:.3f} | {used.mean():.1f} | {np.median(used):.0f} | "
              f"{n_fixed:.0f} | {used.mean() / n_fixed:.2f} | {wrong} |")


#: Ten checkpoints of one training run: success rates rising and flattening (the last is best).
SWEEP = (0.20, 0.30, 0.38, 0.44, 0.48, 0.51, 0.53, 0.54, 0.55, 0.58)


def sweep(rng: np.random.Generator, runs: int, alpha: float, episodes: int = 500, step: int = 10) -> None:
    """Ten checkpoints raced on ``episodes`` selection episodes (harness.sequential.race),
    against running every checkpoint on all of them and reporting the best of the ten (both
    on the same simulated outcomes)."""
    p = np.array(SWEEP)
    best = int(p.argmax())
    chosen_all, used_all, naive_all, naive_value = [], [], [], []
    for start in range(0, runs, 500):
        m = min(500, runs - start)
        x = (rng.random((m, p.size, episodes)) < p[None, :, None]).astype(float)
        used, chosen = race(x, alpha, step=step)
        chosen_all.append(chosen)
        used_all.append(used.sum(axis=1))
        means = x.mean(axis=2)
        naive_all.append(means.argmax(axis=1))
        naive_value.append(means.max(axis=1))
    chosen, used = np.concatenate(chosen_all), np.concatenate(used_all)
    naive, reported = np.concatenate(naive_all), np.concatenate(naive_value)
    print(f"\n## Checkpoint sweep: 10 checkpoints, success rates {', '.join(f'{v:.2f}' for v in SWEEP)} "
          f"({episodes} selection episodes, rounds of {step}, alpha = {alpha}, {runs} races)\n")
    print("| figure | racing, chosen one reported on held-out episodes | all ten on every episode, best reported |")
    print("|---|---|---|")
    print(f"| best checkpoint chosen | {np.mean(chosen == best):.3f} | {np.mean(naive == best):.3f} |")
    print(f"| chosen within 3 points of the best | {np.mean(p[chosen] >= p[best] - 0.03):.3f} | "
          f"{np.mean(p[naive] >= p[best] - 0.03):.3f} |")
    print(f"| selection episodes run (mean) | {used.mean():.0f} | {p.size * episodes} |")
    print(f"| reported figure minus the chosen checkpoint's true rate (mean) | 0 (held-out episodes: unbiased) | "
          f"{np.mean(reported - p[naive]):+.4f} (the maximum of ten noisy estimates) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()
    for rule in (DEFAULT_RULE, *(r for r in RULES if r != DEFAULT_RULE)):
        null_rates(rng, args.runs, args.horizon, args.alpha, rule)
    savings(rng, args.runs, args.alpha)
    sweep(rng, args.runs, args.alpha)
    print(f"\n{time.monotonic() - t0:.0f} s (runs={args.runs}, horizon={args.horizon}, seed={args.seed})")


if __name__ == "__main__":
    main()
