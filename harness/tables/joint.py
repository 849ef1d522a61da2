"""Diagnostic gains beside transfer gains: the association of the two across variants.

An experiment's table may mark columns as ``diagnostic`` (a benchmark that probes what
a model understands) or ``transfer`` (a benchmark of what it does as an agent)
(:mod:`harness.tables.experiments`, a column's ``role``). For each diagnostic (column,
metric) and each transfer (column, metric) this module computes, across the variants
in the store (the experiment's and any other variant that ran the same cells):

* each variant's value of both columns, over the episodes every such variant ran in
  each of the columns' suite/split cells (pairs, as the paired Δ of the table), a column
  being the mean of its cells, as in :func:`harness.tables.build.transfer_table` (a suite that
  declares ``mean_over``: a cell is the mean over its task types, each a unit of its own,
  resampled within itself);
* their Δ vs the baseline and Spearman's rank correlation ρ of the two Δ (average
  ranks for ties; C. Spearman, "The proof and measurement of association between two
  things", Am. J. Psychol. 15, 1904). ρ of the Δ equals ρ of the values: a shift by
  the baseline's value keeps every rank; the baseline is itself a point, (0, 0);
* its interval: a percentile bootstrap over episodes (B. Efron & R. Tibshirani, "An
  Introduction to the Bootstrap", 1993, ch. 13): within each cell the episodes are
  drawn with replacement, *the same draw for every variant* (the design is paired),
  every variant's column values and ρ recomputed; the 2.5 and 97.5 percentiles of the
  resamples where ρ is defined, with the count of those where it is not (all Δ of one
  side tied). The interval covers the sampling of episodes only: the variants are
  taken as given, so it says whether the ordering is stable under other questions and
  episodes, not that it would hold for other checkpoints.

With fewer than three points nothing is computed (a rank correlation of two points is
±1 whatever the data), and the reason is printed instead of a number; with three it
can only be −1, −½, ½ or 1, and a perfect +1 happens by chance in one of six orderings.

Nothing here names a suite or a suite's metric: the columns come from the experiment file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.scoring import policy as scoring
from harness.stats.paired import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from harness.tables.columns import DELTA
from harness.tables.render import format_metric
from harness.tables.units import unit_labels

#: Fewest points (variants) a rank correlation is computed over.
MIN_POINTS = 3
#: Resamples drawn per block (bounds memory at any number of episodes).
_BLOCK = 1000


@dataclass(frozen=True)
class JointColumn:
    """A table column as this module reads it: its label, its suite/split cells, the metric."""

    label: str
    cells: tuple[str, ...]
    metric: str


def _keys(df: pd.DataFrame) -> list[str]:
    return ["episode_id", "seed", *(["repeat_index"] if "repeat_index" in df.columns else [])]


def _per_episode(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``df`` with ``_group`` (suite/split), ``_variant`` and, per metric, ``_num:M`` and
    ``_den:M`` (0 and 0 where an episode has no value; :func:`harness.scoring.policy.columns`)."""
    values = scoring.value_rows(df)
    extra: dict[str, Any] = {"_group": (df["suite"].astype(str) + "/" + df["split"].astype(str)).to_numpy(),
                             "_variant": df["variant"].astype(str).to_numpy()}
    for m in dict.fromkeys(metrics):
        declared = scoring.known_metric(m)
        if declared is None:
            raise ValueError(f"no suite declares a metric {m!r}")
        num, den = (np.asarray(c, dtype=float) for c in scoring.columns(declared, values))
        missing = np.isnan(num) | np.isnan(den)
        extra[f"_num:{m}"] = np.where(missing, 0.0, num)
        extra[f"_den:{m}"] = np.where(missing, 0.0, den)
    return df.assign(**extra)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks along the last axis, ties sharing their average rank."""
    x = np.asarray(x, dtype=float)
    less = (x[..., None, :] < x[..., :, None]).sum(axis=-1)
    equal = (x[..., None, :] == x[..., :, None]).sum(axis=-1)
    return less + (equal + 1) / 2.0


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ along the last axis (Pearson's r of average ranks); NaN where a side
    is all tied or holds a NaN."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    bad = np.isnan(x).any(axis=-1) | np.isnan(y).any(axis=-1)
    rx, ry = average_ranks(np.nan_to_num(x)), average_ranks(np.nan_to_num(y))
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    sx, sy = (rx * rx).sum(axis=-1), (ry * ry).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(axis=-1) / np.sqrt(sx * sy)
    return np.where(bad | (sx == 0) | (sy == 0), np.nan, np.clip(rho, -1.0, 1.0))


def _order(variants: Sequence[str], baseline: str, declared: Sequence[str]) -> list[str]:
    rest = [v for v in declared if v in variants and v != baseline]
    rest += sorted(v for v in variants if v not in rest and v != baseline)
    return [baseline, *rest] if baseline in variants else rest


def _cell_arrays(frame: pd.DataFrame, variants: Sequence[str], cells: Sequence[str],
                 metrics: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per cell: ``num:M`` / ``den:M`` arrays (variants x shared episodes), over the
    episodes every one of ``variants`` ran there (``n``: how many)."""
    keys = _keys(frame)
    out = {}
    for cell in cells:
        part = frame[frame["_group"] == cell]
        per = {v: part[part["_variant"] == v].drop_duplicates(keys).set_index(keys) for v in variants}
        shared = None
        for v in variants:
            shared = per[v].index if shared is None else shared.intersection(per[v].index)
        shared = shared.sort_values() if shared is not None else pd.Index([])
        arrays: dict[str, np.ndarray] = {"n": np.array(len(shared))}
        for m in metrics:
            for side in ("num", "den"):
                arrays[f"{side}:{m}"] = np.array([per[v].loc[shared, f"_{side}:{m}"].to_numpy(dtype=float)
                                                  for v in variants]).reshape(len(variants), len(shared))
        out[cell] = arrays
    return out


def _column_values(arrays: Mapping[str, Mapping[str, np.ndarray]], column: JointColumn,
                   counts: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """A column's value per variant (shape (V,), or (B, V) with resample ``counts`` per cell):
    the mean over its cells of sum(num) / sum(den); NaN where a cell has no value. The units of
    one suite/split (``suite/split#task``: a suite that declares ``mean_over``;
    :func:`harness.tables.units.unit_labels`) are averaged first, each once, as the table's cells are."""
    per_cell: dict[str, list[np.ndarray]] = {}
    for cell in column.cells:
        a = arrays[cell]
        num, den = a[f"num:{column.metric}"], a[f"den:{column.metric}"]
        if counts is None:
            s_num, s_den = num.sum(axis=1), den.sum(axis=1)
        else:
            s_num, s_den = counts[cell] @ num.T, counts[cell] @ den.T
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(s_den > 0, s_num / np.where(s_den > 0, s_den, 1.0), np.nan)
        per_cell.setdefault(cell.split("#", 1)[0], []).append(value)
    return np.mean([np.mean(units, axis=0) for units in per_cell.values()], axis=0)


def association(df: pd.DataFrame, x: JointColumn, y: JointColumn, baseline: str,
                declared_variants: Sequence[str] = (), labels: Mapping[str, str] | None = None,
                resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """The association of column ``x``'s Δ (diagnostic) and column ``y``'s Δ (transfer)
    across the variants of ``df`` (module doc). A dict (JSON-ready): ``x``, ``y``
    (column and metric), ``points`` (variant, label, value and Δ of each side), ``n``,
    ``rho``, ``interval``, ``resamples``, ``undefined_resamples``, ``pairs`` (episodes per
    cell the values are over) and ``reason`` (why ρ is not computed; None when it is)."""
    labels = dict(labels or {})
    out: dict[str, Any] = {"x": {"column": x.label, "metric": x.metric}, "y": {"column": y.label, "metric": y.metric},
                           "points": [], "n": 0, "rho": None, "interval": None, "resamples": 0,
                           "undefined_resamples": 0, "pairs": {}, "reason": None}
    shown = df[(df["suite"].astype(str) + "/" + df["split"].astype(str)).isin([*x.cells, *y.cells]).to_numpy()]
    unit, _ = unit_labels(shown)  # a suite its benchmark averages over task types: each task type a unit
    frame = _per_episode(shown, [x.metric, y.metric]).assign(_group=unit.to_numpy())
    found = sorted(set(unit))

    def units(column: JointColumn) -> JointColumn:
        return JointColumn(column.label, tuple(u for c in column.cells for u in found
                                               if u == c or u.startswith(c + "#")), column.metric)

    x, y = units(x), units(y)
    cells = list(dict.fromkeys([*x.cells, *y.cells]))
    variants = _order(sorted(set(frame["_variant"])), baseline, declared_variants)
    # Cells no variant has a value in (e.g. no question of the metric's kind there) are left out
    # of the column, as the table does; a variant missing a used cell is not a point.
    arrays = _cell_arrays(frame, variants, cells, [x.metric, y.metric]) if variants else {}
    for _ in range(len(variants) + 1):  # drop variants without a value, then recompute the shared episodes
        if not variants:
            break
        xs = [c for c in x.cells if not np.all(np.isnan(_column_values(arrays, JointColumn(x.label, (c,), x.metric))))]
        ys = [c for c in y.cells if not np.all(np.isnan(_column_values(arrays, JointColumn(y.label, (c,), y.metric))))]
        if not xs or not ys:
            variants = []
            break
        cx, cy = JointColumn(x.label, tuple(xs), x.metric), JointColumn(y.label, tuple(ys), y.metric)
        vx, vy = _column_values(arrays, cx), _column_values(arrays, cy)
        keep = [v for v, a, b in zip(variants, vx, vy) if not (math.isnan(a) or math.isnan(b))]
        if keep == variants:
            break
        variants = keep
        arrays = _cell_arrays(frame, variants, cells, [x.metric, y.metric]) if variants else {}
    if not variants or baseline not in variants:
        out["reason"] = (f"the baseline {labels.get(baseline, baseline)} has no value of both columns"
                         if variants else "no variant has a value of both columns")
        out["n"] = len([v for v in variants if v != baseline])
        return out
    x_base, y_base = vx[0], vy[0]
    out["points"] = [{"variant": v, "label": labels.get(v, v), "x": float(a), "y": float(b),
                      "x_delta": float(a - x_base), "y_delta": float(b - y_base)}
                     for v, a, b in zip(variants, vx, vy)]
    out["n"] = n = len(variants)
    out["pairs"] = {c: int(arrays[c]["n"]) for c in [*cx.cells, *cy.cells]}
    if n < MIN_POINTS:
        out["reason"] = (f"{n} point{'s' if n != 1 else ''} ({', '.join(labels.get(v, v) for v in variants)}): "
                         f"a rank correlation needs at least {MIN_POINTS}")
        return out
    rho = float(spearman(vx - x_base, vy - y_base))
    if math.isnan(rho):
        tied = "diagnostic" if np.all(vx == vx[0]) else "transfer"
        out["reason"] = f"the {tied} Δ of all {n} variants are equal: no ranking to correlate"
        return out
    out["rho"] = rho
    rng = np.random.default_rng(seed)
    draws: list[np.ndarray] = []
    for start in range(0, resamples, _BLOCK):
        size = min(_BLOCK, resamples - start)
        counts = {}
        for c in dict.fromkeys([*cx.cells, *cy.cells]):
            k = int(arrays[c]["n"])
            counts[c] = rng.multinomial(k, np.full(k, 1.0 / k), size=size).astype(float)
        draws.append(spearman(_column_values(arrays, cx, counts), _column_values(arrays, cy, counts)))
    rhos = np.concatenate(draws)
    defined = rhos[~np.isnan(rhos)]
    out["resamples"] = int(resamples)
    out["undefined_resamples"] = int(resamples - defined.size)
    if defined.size:
        lo, hi = np.percentile(defined, [2.5, 97.5])
        out["interval"] = [float(lo), float(hi)]
    return out


def _metric_text(metric: str) -> str:
    return scoring.label_of(metric) or metric


def _delta_text(value: float, metric: str) -> str:
    return format_metric(value, DELTA + metric)


def notes(results: Sequence[Mapping[str, Any]], baseline_label: str) -> list[str]:
    """The lines printed below a table: one per association, then the method and the caveat."""
    if not results:
        return []
    lines = [f"Association of diagnostic Δ and transfer Δ across variants (Spearman ρ of the variants' Δ vs "
             f"{baseline_label}, the baseline a point at (0, 0); [lo, hi]: 95 % percentile bootstrap over episodes, "
             f"{BOOTSTRAP_RESAMPLES} resamples, the same episodes drawn for every variant within each suite/split, "
             f"seed {BOOTSTRAP_SEED}):"]
    for r in results:
        head = (f"ρ({r['x']['column']} {_metric_text(r['x']['metric'])}, "
                f"{r['y']['column']} {_metric_text(r['y']['metric'])})")
        if r["rho"] is None:
            lines.append(f"{head}: not computed: {r['reason']}.")
            continue
        points = "; ".join(f"{p['label']} ({_delta_text(p['x_delta'], r['x']['metric'])}, "
                           f"{_delta_text(p['y_delta'], r['y']['metric'])})" for p in r["points"])
        interval = (f" [{r['interval'][0]:+.2f}, {r['interval'][1]:+.2f}]" if r["interval"] is not None
                    else " [no interval: every resample tied]")
        undefined = (f"; {r['undefined_resamples']} of {r['resamples']} resamples tied on one side (no ρ), left out"
                     if r["undefined_resamples"] else "")
        lines.append(f"{head} = {r['rho']:+.2f}{interval}, n = {r['n']} points: {points}{undefined}.")
    counts = sorted({r["n"] for r in results})
    lines.append(f"Caveat: n = {', '.join(map(str, counts))} points. So few variants prove nothing: with 3 points and no "
                 "ties ρ can only be -1, -0.5, +0.5 or +1, and +1 arises by chance in 1 of 6 orderings when there is "
                 "no association; the interval covers the sampling of episodes only (the variants are taken as given), "
                 "and no correlation says that a diagnostic gain causes a transfer gain.")
    return lines


# --- The questions where variants differ most (the report) --------------------------------

_LINK_ESCAPE = re.compile(r"[%:#?&\s]")


def episode_link(variant: str, suite: str, split: str, episode_id: str, seed: int) -> str:
    """The report's fragment of an episode (``#episode=...``), escaped as the page's script does."""
    esc = lambda s: _LINK_ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}", str(s))  # noqa: E731
    return "#episode=" + ":".join(esc(p) for p in (variant, suite, split, episode_id, int(seed)))


def largest_differences(df: pd.DataFrame, column: JointColumn, baseline: str, variant: str,
                        k: int = 5) -> list[dict[str, Any]]:
    """The ``k`` episodes of ``column``'s cells where ``variant``'s per-episode value of its
    metric differs most from the baseline's (both ran them; episodes without a value on
    either side are left out), largest |difference| first, ties by suite/split and episode."""
    frame = _per_episode(df[(df["suite"].astype(str) + "/" + df["split"].astype(str))
                            .isin(column.cells).to_numpy()], [column.metric])
    keys = ["_group", *_keys(frame)]
    num, den = f"_num:{column.metric}", f"_den:{column.metric}"
    mine = frame[frame["_variant"] == variant]
    base = frame[frame["_variant"] == baseline]
    pairs = mine.merge(base, on=keys, suffixes=("_v", "_b"))
    rows = []
    for r in pairs.to_dict("records"):
        if r[f"{den}_v"] <= 0 or r[f"{den}_b"] <= 0:
            continue
        a, b = r[f"{num}_v"] / r[f"{den}_v"], r[f"{num}_b"] / r[f"{den}_b"]
        if a == b:
            continue
        suite, split = str(r["_group"]).split("/", 1)
        rows.append({"suite": suite, "split": split, "episode_id": str(r["episode_id"]), "seed": int(r["seed"]),
                     "value": float(a), "baseline_value": float(b), "difference": float(a - b),
                     "task_type": r.get("task_type_v"),
                     "link": episode_link(variant, suite, split, r["episode_id"], r["seed"]),
                     "baseline_link": episode_link(baseline, suite, split, r["episode_id"], r["seed"])})
    rows.sort(key=lambda e: (-abs(e["difference"]), e["suite"], e["split"], e["episode_id"], e["seed"]))
    return rows[:k]
