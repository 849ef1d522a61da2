"""Episode metrics computed from :class:`~harness.types.EpisodeRecord` rows.

Every figure here is a pure function of the stored records, so a table can be
recomputed at any time without re-running an episode.

The built-in suites' record-field metrics (SR, GC, progress, PLW SR, PLW GC, the invalid-action
rate) are declared, with their formula sources (ALFRED ``models/eval/eval_task.py``,
EmbodiedBench's ``task_progress``), in ``harness/scoring/record_fields.py``, and aggregated generically
(:mod:`harness.scoring.policy`); this module builds the frame and the summary rows from the
declarations. The Wilson score interval: E. B. Wilson, "Probable inference, the law of
succession, and statistical inference", JASA 22 (1927).

Decisions (documented here, tested in ``tests/harness/scoring/test_metrics.py``)
------------------------------------------------------------------------
* **Error records count as failures, in every metric.** A record with
  ``error_kind`` set is a failed episode for SR and PLW SR whatever its
  ``success`` field says, and counts as *no goal condition met* for GC,
  progress and PLW GC: 0 of its ``gc_total`` (the runner takes the total from
  the task where the suite knows it, so an episode that failed at reset still
  counts its conditions). It is never dropped, and :func:`summarize` reports
  how many there were in ``errors``. ``mean_steps`` is over completed episodes
  only, since an error's step count measures the crash, not the agent.
* **T is the record's ``path_length`` where the env reported one**, else its
  ``steps``. ``steps`` counts the runner's env steps; a
  suite whose L* counts another unit (ALFRED's raw low-level actions, where one
  env step walks many) reports T in that unit, so both sides of ``L*/T`` are
  in one unit. The unit is the suite's protocol fact ``expert_length_unit``,
  which tables print beside the PLW columns.
* **T = 0 in the path-length weight.** ALFRED divides by T and crashes (and its
  evaluation then silently drops the episode). We use the SPL form of the same
  weight, ``L* / max(T, L*)`` (Anderson et al. 2018, "On Evaluation of Embodied
  Navigation Agents"), which equals ``min(1, L*/T)`` whenever T > 0 and is its
  limit as T -> 0. The weight only penalises agents that take *more* steps than
  the expert, so a zero-step success (goal already satisfied at reset) keeps
  full credit, exactly as SR credits it; for integer L* >= 1 this is the same
  as clamping T to ``max(T, 1)``. When L* = 0 the episode has weight L* = 0 in
  both PLW sums, so its factor is irrelevant; we define it as 1 to avoid 0/0.
* **Empty inputs give NaN**, never 0: a rate over no episodes (or GC over no
  goal conditions, PLW over no known expert lengths) is undefined, and tables
  render NaN as "–". Likewise ``wilson_interval(0, 0)`` is ``(nan, nan)``: SR
  itself is undefined at n = 0, and a (0, 1) interval could be misread as
  measured data.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from harness.scoring.policy import aggregate, columns, of_frame, value_rows
from harness.types import EpisodeRecord

if TYPE_CHECKING:
    from harness.scoring.policy import Metric

#: Column order of :func:`records_frame` (the EpisodeRecord fields, in order).
RECORD_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(EpisodeRecord))

#: Summary columns before the declared metrics' (generic record facts) and after them.
COUNT_COLUMNS: tuple[str, ...] = ("episodes", "errors", "successes")
TRAILING_COLUMNS: tuple[str, ...] = ("mean_steps",)


def metric_columns(metrics: Iterable["Metric"]) -> list[str]:
    """The summary columns of declared metrics: each name, and for a binary one its Wilson
    interval's ``NAME_lo`` and ``NAME_hi``."""
    out: list[str] = []
    for m in metrics:
        out += [m.name, f"{m.name}_lo", f"{m.name}_hi"] if m.binary else [m.name]
    return out


def summary_columns(metrics: Iterable["Metric"]) -> list[str]:
    """Metric columns of :func:`summarize` for these declarations, in order."""
    return [*COUNT_COLUMNS, *metric_columns(metrics), *TRAILING_COLUMNS]


# --- Records -> frame ---------------------------------------------------------


def records_frame(records: Iterable[EpisodeRecord]) -> pd.DataFrame:
    """Return one DataFrame row per record, columns exactly the EpisodeRecord fields.

    The column order is :data:`RECORD_COLUMNS` even when ``records`` is empty,
    so it matches what the store hands to :func:`summarize`.
    """
    rows = [dataclasses.asdict(r) for r in records]
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))


# --- Pure formulas on arrays --------------------------------------------------


def _floats(values: ArrayLike) -> np.ndarray:
    """1-D float array; None becomes NaN."""
    series = pd.Series(values, dtype="object") if not isinstance(values, pd.Series) else values
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _bools(values: ArrayLike) -> np.ndarray:
    """1-D boolean array; None/NaN become False."""
    arr = np.asarray(values, dtype=object).ravel()
    return np.array([False if pd.isna(v) else bool(v) for v in arr], dtype=bool)


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (default 95 %).

    Returns ``(nan, nan)`` for n = 0 (the proportion is undefined). Raises
    ValueError unless 0 <= k <= n.
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"wilson_interval needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


# --- Grouped summaries --------------------------------------------------------


def _is_error(df: pd.DataFrame) -> np.ndarray:
    """True where a record is an error record (error_kind set)."""
    kinds = df["error_kind"]
    return kinds.notna().to_numpy() & (kinds.astype("object") != "").to_numpy()


def summarize_group(df: pd.DataFrame, metrics: Sequence["Metric"] | None = None,
                    values: Sequence[dict] | None = None) -> dict[str, float]:
    """Every summary column for one group of records: the counts, each declared metric
    (:mod:`harness.scoring.policy`; by default those of the group's suites), and mean_steps."""
    if metrics is None:
        metrics = list(of_frame(df).declared(df["suite"].unique()).values())
    if values is None:
        values = value_rows(df)
    errors = _is_error(df)
    success = _bools(df["success"]) & ~errors  # errors count as failures
    completed_steps = _floats(df["steps"])[~errors]
    out: dict[str, float] = {"episodes": int(len(df)), "errors": int(errors.sum()), "successes": int(success.sum())}
    for m in metrics:
        out[m.name] = aggregate(m, values)
        if m.binary:
            num = np.asarray(columns(m, values)[0], dtype=float)
            known = num[~np.isnan(num)]
            out[f"{m.name}_lo"], out[f"{m.name}_hi"] = wilson_interval(int(known.sum()), int(known.size))
    out["mean_steps"] = float(np.mean(completed_steps)) if completed_steps.size else math.nan
    return out


def summarize(df: pd.DataFrame, by: Sequence[str], metrics: Sequence["Metric"] | None = None) -> pd.DataFrame:
    """One row per group of ``by`` with the counts, the declared metrics and mean_steps.

    ``episodes`` counts every record, errors included (the built-in suites' values make
    error records failures; they are counted in ``errors``). ``metrics``: the
    declarations to compute (default: those of the suites in ``df``).
    Groups are sorted; a missing key (e.g. task_type None) forms its own group.
    Rates are fractions in [0, 1]; undefined cells are NaN.
    """
    by = list(by)
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise ValueError(f"cannot group by {missing}: not record columns")
    if metrics is None:
        metrics = list(of_frame(df).declared(df["suite"].unique() if "suite" in df.columns else ()).values())
    rows = []
    if len(df):
        all_values = value_rows(df)
        positions = pd.Series(range(len(df)), index=df.index)
        for key, group in df.groupby(by, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            labels = {c: (None if _is_nan(v) else v) for c, v in zip(by, key)}
            values = [all_values[i] for i in positions.loc[group.index]]
            rows.append({**labels, **summarize_group(group, metrics, values)})
    out = pd.DataFrame(rows, columns=[*by, *summary_columns(metrics)])
    for column in COUNT_COLUMNS:
        out[column] = out[column].astype("int64")
    return out


def by_split(df: pd.DataFrame) -> pd.DataFrame:
    """Summary per (variant, suite, split): the cells of a transfer table."""
    return summarize(df, ["variant", "suite", "split"])


def by_task_type(df: pd.DataFrame) -> pd.DataFrame:
    """Summary per (variant, suite, split, task_type): the per-task-type breakdown."""
    return summarize(df, ["variant", "suite", "split", "task_type"])
