"""Agreement between judges run over the same answers, per judged value: Spearman's rho per
pair of judges and Krippendorff's alpha (interval metric) over all of them."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from harness.judging.verdicts import ANSWER_KEY, finite_value


def _ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's r of the (tie-averaged) ranks; None when
    undefined (fewer than 2 pairs, or a constant side)."""
    if len(a) != len(b) or len(a) < 2:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def krippendorff_alpha_interval(units: Iterable[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the interval metric, ``1 - D_o / D_e``.

    ``units``: per judged answer, the values the judges gave (None: missing). Only units
    with two or more values are pairable. With ``n`` the pairable values, ``m_u`` those of
    unit u: ``D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u} (v_i - v_j)^2`` and
    ``D_e = 1/(n(n-1)) sum_{i != j over all pairable values} (v_i - v_j)^2`` (Krippendorff,
    "Computing Krippendorff's Alpha-Reliability", 2011, the coincidence-matrix form with
    delta^2 = (c - k)^2). None when undefined (fewer than 2 pairable values, or no spread).
    """
    pairable = [[float(v) for v in u if v is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    values = [v for u in pairable for v in u]
    n = len(values)
    if n < 2:
        return None
    d_o = sum(sum((x - y) ** 2 for x in u for y in u) / (len(u) - 1) for u in pairable) / n
    s, s2 = sum(values), sum(v * v for v in values)
    d_e = 2 * (n * s2 - s * s) / (n * (n - 1))  # sum over ordered pairs i != j of (v_i - v_j)^2, over n(n-1)
    if d_e <= 0:
        return None
    return 1.0 - d_o / d_e


def agreement(frame: Any) -> dict[str, Any]:
    """Agreement between the judges of a ``ResultStore.judgements()`` frame, per judged value.

    ``{value: {"judges": [ids], "answers": n, "alpha": float | None,
    "pairs": [{"a": id, "b": id, "n": n, "rho": float | None}]}}``, only for values that two or
    more judges gave; only ``ok`` verdicts count (an unreadable one is a missing value). A frame
    of several suites keys each value by its suite (``SUITE:VALUE``): never pooled across suites.
    """
    if frame is None or len(frame) == 0:
        return {}
    scores: dict[str, dict[str, dict[tuple, float]]] = {}  # value -> judge -> answer key -> x
    several = frame["suite"].nunique() > 1  # one suite's value never pools with another's
    for row in frame.to_dict("records"):
        if row["status"] != "ok":
            continue
        key = tuple(row[k] for k in ANSWER_KEY)
        for name, x in (row["values"] or {}).items():
            x = finite_value(x)
            if x is not None:
                shown = f"{row['suite']}:{name}" if several else name
                scores.setdefault(shown, {}).setdefault(row["judge_id"], {})[key] = x
    out: dict[str, Any] = {}
    for name in sorted(scores):
        judges = sorted(scores[name])
        if len(judges) < 2:
            continue
        keys = sorted({k for j in judges for k in scores[name][j]})
        units = [[scores[name][j].get(k) for j in judges] for k in keys]
        pairs = []
        for i, a in enumerate(judges):
            for b in judges[i + 1:]:
                both = [k for k in keys if k in scores[name][a] and k in scores[name][b]]
                pairs.append({"a": a, "b": b, "n": len(both),
                              "rho": spearman_rho([scores[name][a][k] for k in both],
                                                  [scores[name][b][k] for k in both])})
        out[name] = {"judges": judges, "answers": sum(1 for u in units if sum(v is not None for v in u) >= 2),
                     "alpha": krippendorff_alpha_interval(units), "pairs": pairs}
    return out
