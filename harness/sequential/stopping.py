"""``stopping=sequential`` on stored runs: its settings (:class:`SequentialStopping`), the
paired values of a comparison from its records in split order, the test state recomputed from
them, and the lines tables and the report print (the method: :mod:`harness.sequential.betting`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from harness.sequential.betting import DEFAULT_RULE, RULE_VERSION, RULES, Decision, decide

#: The record's ``extra`` key holding the episode's position in its split (suite order): the
#: order in which a sequential comparison reads its pairs, fixed before any outcome.
ORDER_KEY = "episode_index"
#: The settings of ``stopping=sequential`` that enter the run identity (what the decision and
#: hence the episodes run depend on); ``max_episodes`` and ``round`` are limits, left out like
#: ``limit`` (a longer rerun resumes the same runs).
IDENTITY_KEYS = ("rule", "version", "alpha", "margin", "metric", "baseline")


@dataclass(frozen=True)
class SequentialStopping:
    """``stopping=sequential`` (configs/stopping/sequential.yaml): each non-baseline run of a
    sweep is compared, pair by pair, with the baseline run on the same episodes and seeds."""

    baseline: str
    rule: str = DEFAULT_RULE
    #: A declared per-episode metric of the suite (aggregation ``mean``); None: its first
    #: default binary metric (the success rate), else its first default metric.
    metric: str | None = None
    alpha: float = 0.05
    #: Equivalence margin in the metric's units; None: no equivalence decision.
    margin: float | None = None
    #: Stop undecided after this many paired episodes (None: the split's end or ``limit``).
    max_episodes: int | None = None
    #: Episodes each run takes per round; the test is updated after every round.
    round: int = 10
    version: int = RULE_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.baseline, str) or not self.baseline:
            raise ValueError("stopping.baseline must name the run to compare against (a variant of the sweep)")
        if self.rule not in RULES:
            raise ValueError(f"stopping.rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha < 1:
            raise ValueError(f"stopping.alpha must be in (0, 1), got {self.alpha!r}")
        if self.margin is not None and (isinstance(self.margin, bool) or not isinstance(self.margin, (int, float))
                                        or self.margin <= 0):
            raise ValueError(f"stopping.margin must be > 0 or null, got {self.margin!r}")
        for key in ("max_episodes", "round"):
            value = getattr(self, key)
            if value is None and key == "max_episodes":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"stopping.{key} must be an integer >= 1{' or null' if key != 'round' else ''}, "
                                 f"got {value!r}")
        if self.version != RULE_VERSION:
            raise ValueError(f"stopping.version {self.version!r} is not this harness's rule version ({RULE_VERSION})")

    def identity(self) -> dict[str, object]:
        return {key: getattr(self, key) for key in IDENTITY_KEYS}


def stopping_of(identity: object) -> dict[str, object] | None:
    """The ``stopping`` entry of a stored run identity (a dict or its JSON), None without one."""
    import json

    if isinstance(identity, str):
        try:
            identity = json.loads(identity)
        except ValueError:
            return None
    value = identity.get("stopping") if isinstance(identity, dict) else None
    return value if isinstance(value, dict) else None


def tested_metric(metrics: Sequence[object], name: str | None) -> object:
    """The metric a comparison tests: ``name`` among a suite's declarations, else the first
    default binary one, else the first default one. ValueError (one line) when ``name`` is
    not declared or the metric is not a per-episode mean."""
    by_name = {m.name: m for m in metrics}  # type: ignore[attr-defined]
    if name is not None:
        if name not in by_name:
            raise ValueError(f"stopping.metric {name!r} is not a metric of the suite "
                             f"(declared: {', '.join(by_name)})")
        metric = by_name[name]
    else:
        candidates = ([m for m in metrics if m.default and m.binary] or  # type: ignore[attr-defined]
                      [m for m in metrics if m.default] or list(metrics))  # type: ignore[attr-defined]
        if not candidates:
            raise ValueError("the suite declares no metric to test")
        metric = candidates[0]
    if metric.aggregation != "mean":  # type: ignore[attr-defined]
        raise ValueError(f"stopping.metric {metric.name!r} aggregates as a "  # type: ignore[attr-defined]
                         f"{metric.aggregation} (a pooled ratio has no per-episode difference): "  # type: ignore[attr-defined]
                         "choose a per-episode metric")
    return metric


@dataclass
class Comparison:
    """A stored sequential comparison: the variant against the baseline on one suite/split."""

    variant: str
    baseline: str
    suite: str
    split: str
    metric: str
    decision: Decision
    #: Episodes both runs have stored (pairs), those left out for want of a value on a side.
    paired: int
    without_value: int
    #: The episodes the comparison could have used (the split, or its limit).
    available: int | None = None

    def to_json(self) -> dict[str, object]:
        """The comparison as ``harness table --format json`` prints it (metric units)."""
        d = self.decision

        def num(v: float) -> float | None:
            return None if v is None or math.isnan(v) else float(v)

        return {"variant": self.variant, "baseline": self.baseline, "suite": self.suite, "split": self.split,
                "metric": self.metric, "rule": d.rule, "version": RULE_VERSION, "alpha": d.alpha,
                "margin": d.margin, "outcome": d.outcome, "decided_at_pair": d.at, "pairs": self.paired,
                "pairs_without_value": self.without_value, "split_episodes": self.available,
                "delta": num(d.mean), "interval": [num(d.lo), num(d.hi)], "interval_kind": "anytime_valid",
                "fixed_sample_delta_interval_valid": False,
                "path": {"lo": [num(v) for v in d.path_lo], "hi": [num(v) for v in d.path_hi]}}


def paired_differences(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object,
                       values_fn: object = None, upto: int | None = None) -> tuple[np.ndarray, int, int]:
    """The per-pair differences ``variant - baseline`` of ``metric`` in split order (the
    records' :data:`ORDER_KEY`), over episodes both runs stored; (diffs, pairs, left out).

    Values come from :func:`harness.scoring.columns`, so an episode counts as the error
    policy says (an errored episode's success is a failure, a score without a value counts as
    the metric's ``missing`` value); a pair where either side does not count (NaN: unscored,
    not applicable, or left out by ``missing=None``) is left out of the test and counted. The pairs are
    the longest prefix of the split order both runs completed: a gap (an episode one run has
    not stored yet) ends the sequence, so the order never depends on which finished first.
    ``upto``: only the first ``upto`` episodes of the split (the look after a round).
    """
    from harness.scoring import columns, episode_values

    def by_key(rows: Sequence[dict]) -> dict[tuple, tuple[int, float]]:
        out = {}
        vals = [episode_values(r, values_fn) for r in rows]  # type: ignore[arg-type]
        nums, _den = columns(metric, vals)  # type: ignore[arg-type]
        for r, x in zip(rows, nums):
            extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
            index = extra.get(ORDER_KEY)
            if isinstance(index, int):
                out[(r["episode_id"], int(r["seed"]))] = (index, x)
        return out

    a, b = by_key(variant_rows), by_key(baseline_rows)
    common = sorted((a[k][0], k) for k in a.keys() & b.keys() if a[k][0] == b[k][0])
    diffs: list[float] = []
    pairs = left_out = 0
    for expected, (index, key) in enumerate(common):
        if index != expected or (upto is not None and index >= upto):
            break
        pairs += 1
        xa, xb = a[key][1], b[key][1]
        if math.isnan(xa) or math.isnan(xb):
            left_out += 1
            continue
        diffs.append(xa - xb)
    return np.asarray(diffs, dtype=float), pairs, left_out


def compare(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object, stopping: dict,
            values_fn: object = None, upto: int | None = None) -> tuple[Decision, int, int]:
    """The test state of one comparison from its stored episodes: (decision, pairs, left out).
    ``stopping``: the run identity's ``stopping`` entry (rule, alpha, margin)."""
    diffs, pairs, left_out = paired_differences(variant_rows, baseline_rows, metric, values_fn, upto)
    lo, hi = (float(v) for v in metric.range)  # type: ignore[attr-defined]
    width = hi - lo
    sign = 1.0 if metric.higher_is_better else -1.0  # type: ignore[attr-defined]
    margin = stopping.get("margin")
    d = decide(sign * diffs, float(stopping.get("alpha", 0.05)), width=width,
               margin=float(margin) if margin is not None else None,
               rule=str(stopping.get("rule", DEFAULT_RULE)))
    if sign < 0:  # back to variant - baseline in the metric's own direction
        d.lo, d.hi, d.mean = -d.hi, -d.lo, -d.mean
        d.path_lo, d.path_hi = [-v for v in d.path_hi], [-v for v in d.path_lo]
    return d, pairs, left_out


def stored_comparisons(frame: object, runs: object) -> list[Comparison]:
    """Every sequential comparison among the shown runs of a store (``harness table``): each
    run whose identity has a ``stopping`` entry, against the run of its baseline on the same
    suite, split, seed and repeat with the same stopping settings; its test recomputed from
    the records (nothing else is stored). ``frame``: the records; ``runs``: the shown runs
    (``harness.results.Selection``)."""
    from harness.scoring import suite_scoring

    by_run: dict[str, list[dict]] = {}
    for row in frame.to_dict("records"):  # type: ignore[attr-defined]
        by_run.setdefault(row["run_id"], []).append(row)
    entries = []
    for r in runs.to_dict("records"):  # type: ignore[attr-defined]
        stopping = stopping_of(r.get("identity"))
        if stopping is None or r["run_id"] not in by_run:
            continue
        import json

        identity = json.loads(r["identity"]) if isinstance(r["identity"], str) else r["identity"]
        cell = (r["suite"], r["split"], identity.get("seed_offset", 0), identity.get("repeat", 0),
                json.dumps(stopping, sort_keys=True))
        provenance = r.get("provenance") if isinstance(r.get("provenance"), dict) else {}
        entries.append((cell, r, stopping, provenance.get("split_episodes")))
    out = []
    for cell, r, stopping, size in entries:
        if r["variant"] == stopping.get("baseline"):
            continue
        base = [b for c, b, _s, _n in entries if c == cell and b["variant"] == stopping.get("baseline")]
        if len(base) != 1:
            continue
        metrics, values_fn = suite_scoring(str(r["suite"]))
        try:
            metric = tested_metric(metrics, stopping.get("metric"))
        except ValueError:
            continue
        d, pairs, left_out = compare(by_run[r["run_id"]], by_run[base[0]["run_id"]], metric, stopping, values_fn)
        out.append(Comparison(str(r["variant"]), str(base[0]["variant"]), str(r["suite"]), str(r["split"]),
                              metric.name, d, pairs, left_out, int(size) if size is not None else None))
    return sorted(out, key=lambda c: (c.suite, c.split, c.variant))


def describe(c: Comparison, percent: bool) -> str:
    """One line for a table's notes: where and why the comparison stopped, with its interval."""
    d = c.decision
    scale, unit = (100.0, " points") if percent else (1.0, "")
    of = f" of {c.available}" if c.available is not None else ""
    if d.outcome is None:
        how = f"undecided after {c.paired}{of} paired episodes"
    else:
        how = f"{d.outcome}: decided after {c.paired}{of} paired episodes (the interval left 0 at pair {d.at})"
        if d.outcome == "equivalent":
            how = (f"equivalent within ±{scale * (d.margin or 0):.1f}{unit}: decided after {c.paired}{of} paired "
                   f"episodes (at pair {d.at})")
    left = f"; {c.without_value} pair(s) without a value left out" if c.without_value else ""
    return (f"{c.variant} vs {c.baseline} on {c.suite}/{c.split} ({c.metric}): {how}{left}; "
            f"Δ {scale * d.mean:+.1f}{unit}, anytime-valid {1 - d.alpha:.0%} interval "
            f"[{scale * d.lo:+.1f}, {scale * d.hi:+.1f}] ({d.rule} v{RULE_VERSION}, α = {d.alpha:g})")
