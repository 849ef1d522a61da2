"""``harness table --format json``: a transfer table as data.

Every cell carries its value, the episodes behind it (``n``), its interval
(Wilson for a one-split SR; with repeats, the two-stage bootstrap over repeats
and episodes, beside ``sd``, the spread of the per-repeat values, and
``repeats``),
its Δ vs the baseline with the paired interval, p-value and pairs (with
``--stats`` or an experiment), and the runs behind the row: their identities
and the provenance of their latest session (in the spirit of lm-evaluation-
harness's results file). Rates are fractions in [0, 1], as in the tables'
data; the printed tables show them as percentages. NaN is ``null``. A PLW
cell names the unit its records count L* and T in (``length_unit``: the runs'
``expert_length_unit``, "units differ", or null where none is stated).
Each measured cell also carries its caveats (:mod:`harness.tables.caveats`):
``episodes_total`` (the split's episodes, null where unknown) beside ``n``,
``partial``, ``output_error_episodes``, ``fallback_episodes``, ``agent_replies``,
``unusable_replies`` and ``mostly_unusable``; each row its ``settings`` (not at
their defaults or not alike across rows) and, in an experiment's table,
``stand_in_for`` (the agent its declaration composes).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from harness.scoring.summaries import wilson_interval
from harness.tables import caveats
from harness.scoring import policy as scoring
from harness.tables.columns import AVG, DELTA
from harness.tables.render import footnotes, length_unit


def _binary(metric: str) -> bool:
    declared = scoring.known_metric(metric)
    return declared is not None and declared.binary


#: Layout version of the JSON document.
TABLE_JSON_VERSION = 1


def _num(value: Any) -> Any:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def to_json(table: pd.DataFrame, selection: Any) -> str:
    """The JSON document of ``table``, built from ``selection`` (:class:`harness.tables.selection.Selection`)."""

    layout: dict[str, list[str]] = table.attrs.get("layout", {})
    names = {label: name for label, name in table.attrs.get("labels", {}).items()}
    df = selection.frame
    cells_of = {**layout, AVG: [g for gs in layout.values() for g in gs]}
    group = df["suite"].astype(str) + "/" + df["split"].astype(str)
    rows = []
    for row in table.index:
        variant = names.get(row, row)
        mine = df[df["variant"].astype(str) == str(variant)]
        mine_group = group[mine.index]
        cells: dict[str, Any] = {}
        for col, metric in table.columns:
            if metric.startswith(DELTA) or ":" in metric:
                continue
            body: dict[str, Any] = {"value": _num(table.at[row, (col, metric)])}
            how = table.attrs.get("aggregates", {}).get(col, {}).get(metric)
            if how:  # "mean over task_type" (the benchmark's figure) or "pooled" (harness.tables.build)
                body["aggregate"] = how
            if scoring.is_path_length_weighted(metric):  # the unit of L* and T (harness.tables.render.length_unit)
                body["length_unit"] = length_unit(table, col, metric)
            in_cell = mine[mine_group.isin(cells_of.get(col, [])).to_numpy()]
            declared = scoring.known_metric(metric)
            # n: the episodes the metric applies to (every reader counts the same; harness.scoring.policy)
            body["n"] = scoring.tally(declared, scoring.value_rows(in_cell)).n if declared is not None \
                else int(len(in_cell))
            cover = caveats.json_coverage(table, row, col, metric)
            if cover is not None:
                body["coverage"] = cover
            body["interval"] = None
            if f"{metric}:lo" in {m for g, m in table.columns if g == col}:
                body["interval"] = [_num(table.at[row, (col, f"{metric}:lo")]), _num(table.at[row, (col, f"{metric}:hi")])]
                body["sd"] = _num(table.at[row, (col, f"{metric}:sd")]) if (col, f"{metric}:sd") in table.columns else None
                body["repeats"] = _num(table.at[row, (col, f"{metric}:k")]) if (col, f"{metric}:k") in table.columns else None
                if body["repeats"] is not None:
                    body["repeats"] = int(body["repeats"])
                body["interval_kind"] = "two_stage_bootstrap95"
            elif _binary(metric) and len(in_cell) and len(cells_of.get(col, [])) == 1 and not (
                    how or "").startswith("mean over"):  # (a Wilson interval is of a pooled proportion)
                num = scoring.columns(scoring.known_metric(metric), scoring.value_rows(in_cell))[0]
                known = [x for x in num if x == x]  # episodes with a value
                body["interval"] = [_num(x) for x in wilson_interval(int(sum(known)), len(known))]
                body["interval_kind"] = "wilson95"
            delta = (col, DELTA + metric)
            if delta in table.columns:
                body["delta"] = _num(table.at[row, delta])
                lo, hi = (col, delta[1] + ":lo"), (col, delta[1] + ":hi")
                if lo in table.columns:
                    body["delta_interval"] = [_num(table.at[row, lo]), _num(table.at[row, hi])]
                    body["delta_interval_kind"] = "paired_bootstrap95"
                if (col, delta[1] + ":p") in table.columns:
                    body["p"] = _num(table.at[row, (col, delta[1] + ":p")])
                if (col, delta[1] + ":n") in table.columns:
                    body["pairs"] = _num(table.at[row, (col, delta[1] + ":n")])
            body.update(caveats.json_cell(table, row, col))  # n of the split's total, agent failures
            cells.setdefault(col, {})[metric] = body
        run_ids = sorted(set(mine["run_id"]))
        paper = str(row).endswith(" (paper)")  # a row the paper reports, not measured here
        rows.append({"row": str(row), "variant": None if paper else str(variant), "measured": not paper,
                     "cells": cells, "runs": run_ids, **caveats.json_row(table, row)})
    runs = []
    for r in selection.runs.itertuples() if len(selection.runs) else []:
        runs.append({"run_id": r.run_id, "variant": r.variant, "suite": r.suite, "split": r.split,
                     "repeat": int(r.repeat), "repeat_index": int(getattr(r, "repeat_index", 0)), "stores": list(r.store), "identity": json.loads(r.identity),
                     "spec": json.loads(r.spec), "provenance": r.provenance})
    doc = {
        "table_json_version": TABLE_JSON_VERSION,
        "kind": table.attrs.get("kind", "transfer"),
        "title": table.attrs.get("title"),
        "baseline": table.attrs.get("baseline"),
        "metrics": table.attrs.get("metrics"),
        "columns": {col: cells for col, cells in layout.items()},
        "rows": rows,
        "notes": footnotes(table),
        **({"association": table.attrs["association"]} if "association" in table.attrs else {}),
        # stopping=sequential: each comparison's sequential decision (harness.stats.sequential)
        **({"sequential": table.attrs["sequential"]} if "sequential" in table.attrs else {}),
        # +experiment=checkpoint_sweep: the race, the chosen checkpoint, its held-out value (harness.run.sweep)
        **({"checkpoint_sweeps": table.attrs["checkpoint_sweeps"]} if "checkpoint_sweeps" in table.attrs else {}),
        "stores": list(selection.stores),
        "runs": runs,
        # which of several runs of a cell the table shows, and how to show another (harness.tables.selection)
        "run_selection": list(getattr(selection, "run_lines", [])),
    }
    judges = getattr(selection, "judges", None)
    if judges is not None and judges.judged_metrics:  # whose verdicts fill the judged metrics
        doc["judges"] = judges.to_json()
    return json.dumps(doc, indent=2, sort_keys=False, default=str, allow_nan=False) + "\n"
