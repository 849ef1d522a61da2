"""The paired-statistics and repeat columns of a transfer table.

A variant's paired Δ vs the baseline over the episodes both ran, with its bootstrap interval,
McNemar p and number of pairs; the episode sets that differ from the baseline's; and for a
table with repeats (runs of a cell that differ only in trial seed or repeat index) each value's
spread over repeats and two-stage interval. The statistics themselves are
:mod:`harness.stats.paired`'s."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from harness.scoring import policy as scoring
from harness.stats.paired import (
    PairedCell,
    paired_delta,
    repeat_interval,
    value_matrix,
    _filled,
)
from harness.tables.columns import AVG, COST_METRICS, is_delta, is_stat, split_labels


#: Columns a record's repeat is told by: the run's trial seed offset and its declared repeat
#: index (harness.tables.selection adds both; a frame without them is one repeat).
REPEAT_KEYS = ("repeat", "repeat_index")


def repeat_labels(df: pd.DataFrame) -> pd.Series:
    """Each record's repeat, as a label ('seed+1/r0'): runs of one cell that differ only in
    their trial seed or their declared repeat index."""
    parts = [df[c].fillna(0).astype(int).astype(str) if c in df.columns else pd.Series("0", index=df.index)
             for c in REPEAT_KEYS]
    return "seed+" + parts[0] + "/r" + parts[1]


def _pair_keys(df: pd.DataFrame) -> list[str]:
    """What pairs a variant's episode with the baseline's: episode id and seed, and the
    declared repeat index where there is one (repeats with one seed differ only by it)."""
    return ["episode_id", "seed", *(["repeat_index"] if "repeat_index" in df.columns else [])]


def has_repeats(df: pd.DataFrame) -> bool:
    """Whether some variant ran some suite/split more than once (repeats)."""
    if not len(df) or not any(c in df.columns for c in REPEAT_KEYS):
        return False
    frame = pd.DataFrame({"v": df["variant"].astype(str).to_numpy(), "g": split_labels(df).to_numpy(),
                          "r": repeat_labels(df).to_numpy()})
    return bool((frame.groupby(["v", "g"])["r"].nunique() > 1).any())


def with_repeat_columns(table_columns: dict, df: pd.DataFrame, variants: list[str],
                         unit_weights: Mapping[tuple[str, str], Mapping[str, float]],
                         values: dict, unit_of: pd.Series) -> dict:
    """``table_columns`` with, after each SR / GC value column, its spread over repeats:
    ``:sd`` (sd of the per-repeat values), ``:k`` (repeats), ``:lo`` / ``:hi`` (two-stage
    bootstrap 95 % interval over repeats and their episodes; harness.stats.paired)."""
    frame = df.assign(_group=unit_of.to_numpy(), _repeat=repeat_labels(df).to_numpy(),
                      _error=_error_mask(df), _variant=df["variant"].astype(str).to_numpy())
    episode_values = scoring.value_rows(frame)
    position = pd.Series(range(len(frame)), index=frame.index)
    cells_of = {key: cell for key, cell in frame.groupby(["_variant", "_group", "_repeat"], sort=True)}
    out: dict = {}
    for (col, metric), series in table_columns.items():
        out[(col, metric)] = series
        if metric in COST_METRICS or is_delta(metric) or is_stat(metric):
            continue
        declared = scoring.known_metric(metric)
        matrices: dict[tuple[str, str, str], np.ndarray] = {}
        for key, cell in cells_of.items():
            err = cell["_error"].to_numpy(dtype=bool)
            success = cell["success"].astype(bool).to_numpy() & ~err
            s = np.where(err, 0, pd.to_numeric(cell["gc_satisfied"]).to_numpy(dtype=float))
            ts = pd.to_numeric(cell["gc_total"]).to_numpy(dtype=float)
            num, den = scoring.columns(declared, [episode_values[i] for i in position.loc[cell.index]])
            matrices[key] = value_matrix(success, s, ts, num, den)
        weights = unit_weights[(col, metric)]
        stats = {":sd": [], ":k": [], ":lo": [], ":hi": []}
        for variant in variants:
            reps = [set(r for v, g, r in matrices if v == variant and g == group) for group in weights]
            common = sorted(set.intersection(*reps)) if reps else []
            defined = not math.isnan(values[(col, metric)].get(variant, math.nan))
            if not defined or not common:
                for column in stats.values():
                    column.append(np.nan)
                continue
            result = repeat_interval([[matrices[(variant, g, r)] for g in weights] for r in common],
                                     list(weights.values()), declared)
            stats[":sd"].append(result.sd)
            stats[":k"].append(float(result.repeats))
            stats[":lo"].append(result.lo)
            stats[":hi"].append(result.hi)
        for suffix, column in stats.items():
            out[(col, metric + suffix)] = pd.Series(column, index=variants, dtype=float)
    return out


def episode_set_mismatches(df: pd.DataFrame, variants: list[str], baseline: str,
                            layout: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One entry per (variant, column) whose episodes differ from the baseline's there.

    Counts: the variant's episodes, the baseline's and the shared ones (episode
    id and seed), summed over the column's suite/split cells (``avg``: all).
    """
    keys = df.assign(_group=split_labels(df).to_numpy(), _variant=df["variant"].astype(str).to_numpy())
    pair = _pair_keys(df)
    sets = {(v, g): set(zip(*(cell[k] for k in pair))) for (v, g), cell in keys.groupby(["_variant", "_group"])}
    out = []
    columns = {**layout, AVG: [g for gs in layout.values() for g in gs]}
    for variant in variants:
        if variant == baseline:
            continue
        for col, groups in columns.items():
            mine = [sets.get((variant, g), set()) for g in groups]
            base = [sets.get((baseline, g), set()) for g in groups]
            if all(a == b for a, b in zip(mine, base)):
                continue
            out.append({"row": variant, "group": col, "episodes": sum(map(len, mine)),
                        "baseline_episodes": sum(map(len, base)),
                        "shared": sum(len(a & b) for a, b in zip(mine, base))})
    return out


def _cell_weights(layout: dict[str, list[str]], col: str) -> dict[str, float]:
    """Weight of each suite/split cell in a column's value (``avg``: equal per column)."""
    if col != AVG:
        return {g: 1.0 / len(layout[col]) for g in layout[col]}
    return {g: 1.0 / (len(layout) * len(gs)) for gs in layout.values() for g in gs}


def paired_columns(df: pd.DataFrame, variants: list[str], baseline: str, weights: Mapping[str, float],
                    metric: str, unit_of: pd.Series | None = None) -> dict[str, pd.Series]:
    """Each variant's paired Δ vs the baseline (key ``""``), its ``:lo``, ``:hi``
    (for SR ``:p``) and ``:n``, the number of episode pairs it is computed on; ``weights``:
    each unit's (``unit_of``, default the suite/split) weight."""
    labels = split_labels(df) if unit_of is None else unit_of
    frame = df.assign(_group=labels.to_numpy(), _error=_error_mask(df), _repeat=repeat_labels(df).to_numpy())
    keys = _pair_keys(df)
    declared = scoring.known_metric(metric)
    num, den = scoring.columns(declared, scoring.value_rows(df))
    frame = frame.assign(_num=num, _den=den)
    # (the baseline's rows after the metric's columns: both sides of a pair carry them)
    base = frame[frame["variant"].astype(str) == baseline]
    out = {"": [], ":lo": [], ":hi": []} | ({":p": []} if declared.binary else {}) | {":n": []}
    for variant in variants:
        if variant == baseline:
            for column in out.values():
                column.append(np.nan)
            continue
        mine = frame[frame["variant"].astype(str) == variant]
        cells = []
        for group, weight in weights.items():
            a = mine[mine["_group"] == group]
            b = base[base["_group"] == group]
            pairs = a.merge(b, on=keys, suffixes=("_v", "_b"))
            cells.append(_paired_cell(pairs, weight))
        result = paired_delta(cells, declared)
        out[""].append(result.delta)
        out[":n"].append(float(result.pairs))
        out[":lo"].append(result.lo)
        out[":hi"].append(result.hi)
        if ":p" in out:
            out[":p"].append(result.p)
    return {k: pd.Series(v, index=variants, dtype=float) for k, v in out.items()}


def _paired_cell(pairs: pd.DataFrame, weight: float) -> PairedCell:
    """Arrays of one cell's pairs; error records count as failures with no goal condition met."""
    def side(suffix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        err = pairs[f"_error{suffix}"].to_numpy(dtype=bool)
        success = pairs[f"success{suffix}"].to_numpy(dtype=bool) & ~err
        s = np.where(err, 0, pd.to_numeric(pairs[f"gc_satisfied{suffix}"]).to_numpy(dtype=float))
        ts = pd.to_numeric(pairs[f"gc_total{suffix}"]).to_numpy(dtype=float)
        return success, s, ts

    sv, s_v, ts_v = side("_v")
    sb, s_b, ts_b = side("_b")
    repeat = pairs["_repeat_v"].to_numpy(dtype=object) if "_repeat_v" in pairs.columns else None
    if "_num_v" not in pairs.columns:
        return PairedCell(sv, sb, s_v, ts_v, s_b, ts_b, weight, repeat)
    nv, dv = _filled(pairs["_num_v"], pairs["_den_v"])
    nb, db = _filled(pairs["_num_b"], pairs["_den_b"])
    return PairedCell(sv, sb, s_v, ts_v, s_b, ts_b, weight, repeat, nv, dv, nb, db)


def _error_mask(df: pd.DataFrame) -> np.ndarray:
    kinds = df["error_kind"]
    return kinds.notna().to_numpy() & (kinds.astype("object") != "").to_numpy()
