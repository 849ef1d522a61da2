"""``stopping=sequential`` on stored runs: its settings (:class:`SequentialStopping`), the
paired values of a comparison from its records in its seeded order, the test state recomputed from
them, and the lines tables and the report print (the methods: :mod:`harness.stats.sequential.design`,
:mod:`harness.stats.sequential.betting`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from harness.scoring.policy import columns, episode_values, suite_scoring
from harness.stats.sequential.betting import DEFAULT_RULE, GROUP_SEQUENTIAL, RULE_VERSION, RULES, Decision, decide
from harness.stats.sequential.design import DEFAULT_SPENDING, check_spending, decide_bounded
from harness.stats.sequential.order import identity as order_identity

#: The record's ``extra`` key holding the episode's position in the comparison's order (the
#: split ranked by a seeded hash of the episode ids, :mod:`harness.stats.sequential.order`): the order
#: in which a sequential comparison reads its pairs, fixed before any outcome.
ORDER_KEY = "episode_index"
#: The settings of ``stopping=sequential`` that enter the run identity as given (what the decision
#: and hence the episodes run depend on); :func:`identity_entry` adds the order, the family, the
#: retries and, for a bounded design, its maximum and look schedule. ``max_episodes`` and
#: ``round`` are limits of an open-ended (betting) rule, left out like ``limit``.
IDENTITY_KEYS = ("rule", "version", "alpha", "margin", "metric", "baseline")
#: How the comparisons of one group (the variants against one baseline) share alpha.
FAMILIES = ("holm", "bonferroni", "none")


@dataclass(frozen=True)
class SequentialStopping:
    """``stopping=sequential`` (configs/stopping/sequential.yaml): each non-baseline run of a
    sweep is compared, pair by pair, with the baseline run on the same episodes and seeds."""

    baseline: str
    #: The bounded design where the maximum is known (always, in a run: the split, ``limit`` or
    #: ``max_episodes``); a betting rule for an open-ended comparison.
    rule: str = GROUP_SEQUENTIAL
    #: A declared per-episode metric of the suite (aggregation ``mean``); None: its first
    #: default binary metric (the success rate), else its first default metric.
    metric: str | None = None
    #: The probability of any wrong decision among the group's comparisons (``family``).
    alpha: float = 0.05
    #: Equivalence margin in the metric's units; None: no equivalence decision.
    margin: float | None = None
    #: Stop undecided after this many paired episodes (None: the split's end or ``limit``).
    max_episodes: int | None = None
    #: Episodes each run takes per round; the test is updated after every round.
    round: int = 10
    version: int = RULE_VERSION
    #: The seed of the order the pairs are taken in (harness.stats.sequential.order).
    order_seed: int = 0
    #: How the group's comparisons share alpha: ``holm`` (step-down), ``bonferroni``, ``none``
    #: (each comparison at alpha).
    family: str = "holm"
    #: Runs of an episode again after a simulator or worker fault (``env``/``worker`` errors),
    #: inside its round, the same for every run of the group; anything else that errs counts
    #: by the error policy (an agent error or a timeout is a failure, never run again).
    retries: int = 0
    #: The bounded design's error-spending function (``group_sequential`` only; None: its default).
    spending: str | None = None

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
        for key in ("order_seed", "retries"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"stopping.{key} must be an integer >= 0, got {value!r}")
        if self.family not in FAMILIES:
            raise ValueError(f"stopping.family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if self.spending is not None:
            if self.rule != GROUP_SEQUENTIAL:
                raise ValueError(f"stopping.spending applies to rule {GROUP_SEQUENTIAL} only (rule: {self.rule})")
            check_spending(self.spending)
        if self.version != RULE_VERSION:
            raise ValueError(f"stopping.version {self.version!r} is not this harness's rule version ({RULE_VERSION})")

    def identity(self) -> dict[str, object]:
        return {key: getattr(self, key) for key in IDENTITY_KEYS}


def identity_entry(stopping: Mapping[str, Any]) -> dict[str, Any]:
    """The ``stopping`` entry of a run identity: the settings the decision depends on. Besides
    :data:`IDENTITY_KEYS`: the pairs' order (rule, version, seed), the family (how alpha is
    shared, over how many comparisons), the declared retries, and for the bounded design its
    maximum (``n_max``), look schedule (``round``) and spending function: a comparison under
    other settings is another run, never resumed as this one."""
    out: dict[str, Any] = {key: stopping.get(key) for key in IDENTITY_KEYS}
    if "order_seed" in stopping:
        out["order"] = order_identity(int(stopping["order_seed"]))
    if "family" in stopping:
        out["family"] = {"method": stopping["family"], "size": stopping.get("family_size")}
    if "retries" in stopping:
        out["retries"] = stopping["retries"]
    if stopping.get("rule") == GROUP_SEQUENTIAL:
        out["design"] = {"n_max": stopping.get("n_max"), "round": stopping.get("round"),
                         "spending": stopping.get("spending") or DEFAULT_SPENDING}
    return out


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
    #: How alpha is shared (``holm``, ``bonferroni``, ``none``) and over how many comparisons;
    #: ``level``: the level the decision was reached at (alpha / k, up to alpha with Holm).
    family: str = "none"
    family_size: int = 1
    level: float | None = None
    #: The declared retries of simulator / worker faults (every run of the group alike).
    retries: int = 0
    #: The pairs' order (harness.stats.sequential.order: rule, version, seed); None: the split's own.
    order: dict[str, Any] | None = None
    #: The alpha of the whole family (None: the decision's own).
    family_alpha_: float | None = None

    @property
    def interval_kind(self) -> str:
        return getattr(self.decision, "interval_kind", None) or "anytime_valid"

    def to_json(self) -> dict[str, object]:
        """The comparison as ``harness table --format json`` prints it (metric units)."""
        d = self.decision

        def num(v: float) -> float | None:
            return None if v is None or math.isnan(v) else float(v)

        return {"variant": self.variant, "baseline": self.baseline, "suite": self.suite, "split": self.split,
                "metric": self.metric, "rule": d.rule, "version": RULE_VERSION, "alpha": self.family_alpha,
                "family": {"method": self.family, "size": self.family_size,
                           "alpha_over": f"{self.family_size} comparison{'s' if self.family_size != 1 else ''}"},
                "level": self.level, "interval_alpha": d.alpha, "order": self.order, "retries": self.retries,
                "margin": d.margin, "outcome": d.outcome, "decided_at_pair": d.at, "pairs": self.paired,
                "pairs_without_value": self.without_value, "split_episodes": self.available,
                "delta": num(d.mean), "interval": [num(d.lo), num(d.hi)], "interval_kind": self.interval_kind,
                "fixed_sample_delta_interval_valid": False,
                "looks": list(getattr(d, "looks", None) or []),
                "path": {"lo": [num(v) for v in d.path_lo], "hi": [num(v) for v in d.path_hi]}}

    @property
    def family_alpha(self) -> float:
        """The alpha of the whole family (each comparison's share is in ``level``)."""
        return float(self.family_alpha_ if self.family_alpha_ is not None else self.decision.alpha)


def paired_values(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object,
                  values_fn: object = None, upto: int | None = None) -> np.ndarray:
    """The per-pair differences ``variant - baseline`` of ``metric`` in the comparison's order
    (the records' :data:`ORDER_KEY`), NaN where a side has no value, over the longest prefix of
    that order both runs stored (a gap ends it, so the pairs never depend on which run finished
    first); ``upto``: only the first ``upto`` positions (the look after a round).

    Values come from :func:`harness.scoring.policy.columns`, so an episode counts as the error policy
    says: an errored episode's success is a failure, a score without a value counts as the
    metric's ``missing`` value. NaN (unscored, not applicable, or left out by ``missing=None``)
    is left out of the test and counted.
    """
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
    for expected, (index, key) in enumerate(common):
        if index != expected or (upto is not None and index >= upto):
            break
        diffs.append(a[key][1] - b[key][1])
    return np.asarray(diffs, dtype=float)


def paired_differences(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object,
                       values_fn: object = None, upto: int | None = None) -> tuple[np.ndarray, int, int]:
    """(differences with a value on both sides, pairs, pairs left out): :func:`paired_values`
    without its NaN."""
    d = paired_values(variant_rows, baseline_rows, metric, values_fn, upto)
    kept = d[~np.isnan(d)]
    return kept, len(d), len(d) - len(kept)


def _looks(values: np.ndarray, step: int) -> list[int]:
    """The valued pairs at each look: a look after every ``step`` positions of the order (the
    rounds) and at the last stored one; looks that added no valued pair are dropped."""
    n = len(values)
    ends = list(range(step, n, step)) + ([n] if n else [])
    valued = np.cumsum(~np.isnan(values))
    out: list[int] = []
    for e in ends:
        c = int(valued[e - 1])
        if c and (not out or c > out[-1]):
            out.append(c)
    return out


def decide_pairs(values: np.ndarray, metric: object, stopping: Mapping[str, Any], alpha: float,
                 n_max: int | None = None) -> Decision:
    """The decision of one comparison at level ``alpha`` from its per-pair differences in order
    (NaN: no value, left out), in the metric's own direction (lower-is-better metrics are
    tested with the sign flipped and reported back in the metric's units).

    ``betting_*``: the anytime-valid confidence sequence over the valued pairs. ``group_sequential``:
    the bounded design (harness.stats.sequential.design) with its looks after every ``round`` positions,
    its maximum ``n_max`` (the stopping entry's, else the argument); the look at the maximum is final.
    """
    lo, hi = (float(v) for v in metric.range)  # type: ignore[attr-defined]
    width = hi - lo
    sign = 1.0 if metric.higher_is_better else -1.0  # type: ignore[attr-defined]
    values = np.asarray(values, dtype=float)
    kept = values[~np.isnan(values)]
    margin = stopping.get("margin")
    margin = float(margin) if margin is not None else None
    rule = str(stopping.get("rule", DEFAULT_RULE))
    if rule == GROUP_SEQUENTIAL:
        cap = stopping.get("n_max") or n_max
        if not cap:
            raise ValueError("the group_sequential rule needs its maximum number of pairs (n_max)")
        d = decide_bounded(sign * kept, alpha, width=width, n_max=int(cap), looks=_looks(values, int(stopping["round"])),
                           margin=margin, spending=stopping.get("spending") or DEFAULT_SPENDING,
                           final=len(values) >= int(cap))
    else:
        d = decide(sign * kept, alpha, width=width, margin=margin, rule=rule)
    if sign < 0:  # back to variant - baseline in the metric's own direction
        d = replace(d, lo=-d.hi, hi=-d.lo, mean=-d.mean, path_lo=[-v for v in d.path_hi],
                    path_hi=[-v for v in d.path_lo])
    return d


def family_levels(stopping: Mapping[str, Any], size: int | None = None) -> tuple[str, int, float]:
    """(method, k, alpha / k): how the family shares alpha (``size``: k where the stopping entry
    does not say)."""
    method = str(stopping.get("family") or "none")
    k = int(stopping.get("family_size") or size or 1)
    alpha = float(stopping.get("alpha", 0.05))
    return method, k, alpha if method == "none" else alpha / k


def decide_family(values: Mapping[str, np.ndarray], metric: object, stopping: Mapping[str, Any],
                  n_max: int | None = None) -> dict[str, tuple[Decision, float]]:
    """Each comparison of a group (variant -> per-pair differences against the one baseline)
    decided with alpha shared as ``stopping.family`` says: (decision, level it was decided at).

    ``bonferroni``: each at alpha / k. ``holm``: Holm's step-down on the tests' decisions: every
    comparison first at alpha / k; once r comparisons are decided *better* or *worse*, the
    others are tested at alpha / (k - r) on all their pairs so far, until no new decision. This
    is the closed test whose intersection hypotheses are Bonferroni-tested sequential tests, each
    of level alpha over the whole comparison (an anytime-valid confidence sequence, or a
    group-sequential design, ever rejecting with probability at most its level), so the
    probability of any wrong *better*/*worse* among the k stays at most alpha however the runs
    stop (Holm 1979; for group-sequential designs Maurer & Bretz, Stat. Biopharm. Res. 2013).
    Intervals and *equivalent* decisions use alpha / k (simultaneous over the k comparisons).
    ``none``: each at alpha. ``k`` is the family size the runs were started with (their identity).
    """
    method, k, base = family_levels(stopping, len(values))
    out = {name: (decide_pairs(v, metric, stopping, base, n_max), base) for name, v in values.items()}
    if method != "holm":
        return out
    alpha = float(stopping.get("alpha", 0.05))
    rejected = {n for n, (d, _l) in out.items() if d.outcome in ("better", "worse")}
    while True:
        level = alpha / max(1, k - len(rejected))
        if level <= base:
            break
        new = set()
        for name, v in values.items():
            if name in rejected:
                continue
            d = decide_pairs(v, metric, stopping, level, n_max)
            if d.outcome in ("better", "worse"):
                first, _ = out[name]
                # the decision at the larger level; the interval stays the simultaneous alpha / k one
                out[name] = (replace(first, outcome=d.outcome, at=d.at), level)
                new.add(name)
        if not new:
            break
        rejected |= new
    return out


def compare(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object, stopping: dict,
            values_fn: object = None, upto: int | None = None, n_max: int | None = None) -> tuple[Decision, int, int]:
    """The test state of one comparison on its own (alpha not shared) from its stored episodes:
    (decision, pairs, left out). ``stopping``: the run identity's ``stopping`` entry."""
    values = paired_values(variant_rows, baseline_rows, metric, values_fn, upto)
    d = decide_pairs(values, metric, stopping, float(stopping.get("alpha", 0.05)), n_max)
    left_out = int(np.isnan(values).sum())
    return d, len(values), left_out


def stopping_settings(identity_entry_: Mapping[str, Any]) -> dict[str, Any]:
    """A stored identity's ``stopping`` entry back as the settings :func:`decide_family` reads."""
    s = dict(identity_entry_)
    family = s.get("family")
    if isinstance(family, dict):
        s["family"], s["family_size"] = family.get("method"), family.get("size")
    order = s.get("order")
    if isinstance(order, dict):
        s["order_seed"] = order.get("seed")
    design = s.get("design")
    if isinstance(design, dict):
        s.update({k: design.get(k) for k in ("n_max", "round", "spending")})
    return s


def stored_comparisons(frame: object, runs: object) -> list[Comparison]:
    """Every sequential comparison among the shown runs of a store (``harness table``): each
    run whose identity has a ``stopping`` entry, against the run of its baseline on the same
    suite, split, seed and repeat with the same stopping settings, the group's comparisons
    decided together (:func:`decide_family`, alpha shared as the runs were started); the tests
    recomputed from the records (nothing else is stored). ``frame``: the records; ``runs``: the
    shown runs (``harness.tables.selection.Selection``)."""
    import json

    by_run: dict[str, list[dict]] = {}
    for row in frame.to_dict("records"):  # type: ignore[attr-defined]
        by_run.setdefault(row["run_id"], []).append(row)
    cells: dict[tuple, list[tuple[dict, dict[str, Any], Any]]] = {}
    for r in runs.to_dict("records"):  # type: ignore[attr-defined]
        stopping = stopping_of(r.get("identity"))
        if stopping is None or r["run_id"] not in by_run:
            continue
        identity = json.loads(r["identity"]) if isinstance(r["identity"], str) else r["identity"]
        cell = (r["suite"], r["split"], identity.get("seed_offset", 0), identity.get("repeat", 0),
                json.dumps(stopping, sort_keys=True))
        provenance = r.get("provenance") if isinstance(r.get("provenance"), dict) else {}
        cells.setdefault(cell, []).append((r, stopping, provenance.get("split_episodes")))
    out = []
    for cell, members in cells.items():
        stopping = members[0][1]
        base = [m for m in members if m[0]["variant"] == stopping.get("baseline")]
        others = [m for m in members if m[0]["variant"] != stopping.get("baseline")]
        if len(base) != 1 or not others:
            continue
        suite = str(base[0][0]["suite"])
        metrics, values_fn = suite_scoring(suite)
        try:
            metric = tested_metric(metrics, stopping.get("metric"))
        except ValueError:
            continue
        settings = stopping_settings(stopping)
        size = base[0][2]
        values = {str(r["variant"]): paired_values(by_run[r["run_id"]], by_run[base[0][0]["run_id"]], metric, values_fn)
                  for r, _s, _n in others}
        try:
            decisions = decide_family(values, metric, settings, n_max=int(size) if size is not None else None)
        except ValueError:
            continue
        method, k, _ = family_levels(settings, len(values))
        for r, _s, _n in others:
            v = values[str(r["variant"])]
            d, level = decisions[str(r["variant"])]
            c = Comparison(str(r["variant"]), str(base[0][0]["variant"]), suite, str(r["split"]), metric.name, d,
                           len(v), int(np.isnan(v).sum()), int(size) if size is not None else None,
                           family=method, family_size=k, level=level, retries=int(settings.get("retries") or 0),
                           order=stopping.get("order") if isinstance(stopping.get("order"), dict) else None,
                           family_alpha_=float(settings.get("alpha", 0.05)))
            out.append(c)
    return sorted(out, key=lambda c: (c.suite, c.split, c.variant))


def family_text(c: Comparison) -> str:
    """"α = 0.05 over 3 comparisons (Holm)" or "α = 0.05 per comparison": what alpha covers."""
    if c.family == "none":
        return f"α = {c.family_alpha:g} per comparison"
    if c.family_size == 1:
        return f"α = {c.family_alpha:g} over 1 comparison"
    name = {"holm": "Holm", "bonferroni": "Bonferroni"}.get(c.family, c.family)
    return f"α = {c.family_alpha:g} over {c.family_size} comparisons ({name})"


def _percent(p: float) -> str:
    text = f"{100 * p:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


def describe(c: Comparison, percent: bool) -> str:
    """One line for a table's notes: where and why the comparison stopped, with its interval."""
    d = c.decision
    scale, unit = (100.0, " points") if percent else (1.0, "")
    of = f" of {c.available}" if c.available is not None else ""
    if d.outcome is None:
        how = f"undecided after {c.paired}{of} paired episodes"
    else:
        how = f"{d.outcome}: decided after {c.paired}{of} paired episodes (at pair {d.at})"
        if d.outcome == "equivalent":
            how = (f"equivalent within ±{scale * (d.margin or 0):.1f}{unit}: decided after {c.paired}{of} paired "
                   f"episodes (at pair {d.at})")
    left = f"; {c.without_value} pair(s) without a value left out" if c.without_value else ""
    kind = "repeated" if c.interval_kind == "repeated_confidence_interval" else "anytime-valid"
    order = f", pairs in {c.order['rule']} order (seed {c.order['seed']})" if c.order else ""
    errors = ("; errored episodes count by the error policy, none run again"
              + (f" (simulator/worker faults retried up to {c.retries}× in every run)" if c.retries else ""))
    return (f"{c.variant} vs {c.baseline} on {c.suite}/{c.split} ({c.metric}): {how}{left}; "
            f"Δ {scale * d.mean:+.1f}{unit}, {kind} {_percent(1 - d.alpha)} interval "
            f"[{scale * d.lo:+.1f}, {scale * d.hi:+.1f}] ({d.rule} v{RULE_VERSION}, {family_text(c)}{order}){errors}")
