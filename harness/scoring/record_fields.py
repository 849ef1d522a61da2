"""The metrics of a record's own fields, declared once in the core: SR, GC, progress, PLW SR,
PLW GC and the invalid-action rate. The built-in suites (eb_alfred, alfred, libero,
eb_manipulation) declare them as they are; another suite takes some of them beside its own
(:func:`harness.scoring.record_metrics`); a suite that declares none is scored with them.

The suites store no per-episode values: :func:`values` derives them from a record's
fields (success, gc_satisfied, gc_total, expert_length, path_length, steps,
invalid_actions, error_kind), so their records are what they were before metrics were
declared. The harness aggregates each value generically (:mod:`harness.scoring.policy`):
``mean`` over the episodes with a value, ``ratio`` as a pooled sum over sum.

Formula sources
---------------
* ALFRED, ``models/eval/eval_task.py`` (``get_metrics`` and the per-episode metric
  block, lines 113-120 and 171-193 at askforalfred/alfred
  f91f4c0c96c7a29f33d0557f86b0a21035379b3b): SR = successes / episodes; GC = sum(s) /
  sum(ts) pooled over episodes; ``s_spl = success * min(1, L*/T)``, ``pc_spl = (s/ts) *
  min(1, L*/T)``; PLW SR = sum(s_spl * L*) / sum(L*), PLW GC = sum(pc_spl * L*) / sum(L*).
* EmbodiedBench (EB-ALFRED): ``task_progress`` is the per-episode s/ts, averaged over
  episodes (``progress``).

Decisions (the same as :mod:`harness.scoring.summaries` documents, and tested there)
-------------------------------------------------------------------------
* An error record (``error_kind`` set) is a failure in every metric: success 0, no goal
  condition met (0 of its ``gc_total``).
* T is the record's ``path_length`` where the env reported one, else its ``steps``.
* The path-length weight is ``L* / max(T, L*)`` (1 when L* = T = 0).
* An episode without a known L* has no PLW value; one without goal conditions has no
  progress or PLW GC value; cells over no such episode are NaN. These metrics declare
  ``applies`` (progress where the episode has goal conditions, the PLW metrics where L* is
  known and not 0) and ``missing=None``: such an episode is left out, the value does not exist,
  it is not a failure; an error record still has its values (above), so it counts.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from harness.metric_declaration import number_or_none as _number
from harness.metric_declaration import Metric

#: The per-episode values :func:`values` derives (the declarations below read them).
SUCCESS, GC_MET, GC_TOTAL = "success", "gc_met", "gc_total"
PROGRESS = "progress"
PLW_SR_NUM, PLW_GC_NUM, EXPERT_LENGTH = "plw_success", "plw_goal", "expert_length"
INVALID, STEPS = "invalid_actions", "steps"

METRICS: tuple[Metric, ...] = (
    Metric("sr", "SR", SUCCESS, binary=True, default=True,
           description="success rate: episodes whose goal was reached / episodes (errors fail)"),
    Metric("gc", "GC", GC_MET, aggregation="ratio", weight=GC_TOTAL, applies=GC_TOTAL, default=True,
           description="goal conditions met / goal conditions, pooled over episodes"),
    Metric("progress", "Progress", PROGRESS, applies=GC_TOTAL, missing=None,
           description="mean per-episode share of goal conditions met"),
    Metric("plw_sr", "PLW SR", PLW_SR_NUM, aggregation="ratio", weight=EXPERT_LENGTH, applies=EXPERT_LENGTH,
           missing=None,
           description="path-length-weighted SR: sum(success * min(1, L*/T) * L*) / sum(L*)"),
    Metric("plw_gc", "PLW GC", PLW_GC_NUM, aggregation="ratio", weight=EXPERT_LENGTH, applies=EXPERT_LENGTH,
           missing=None,
           description="path-length-weighted GC: sum(s/ts * min(1, L*/T) * L*) / sum(L*)"),
    # Unbounded above: an unusable output counts an invalid action without taking a step
    # (harness.interfaces.InvalidOutput), so an episode may count more invalid actions than steps.
    Metric("invalid_rate", "Invalid", INVALID, aggregation="ratio", weight=STEPS, range=(0.0, math.inf),
           higher_is_better=False, missing=None,
           description="invalid actions / steps, pooled over episodes (above 1 where unusable outputs, which "
                       "take no step, outnumber the steps)"),
)

#: Metrics weighted by path length: tables name the unit of L* and T beside them.
PATH_LENGTH_METRICS = ("plw_sr", "plw_gc")


def values(record: Mapping[str, Any]) -> dict[str, float | None]:
    """Per-episode values of one record (a mapping of EpisodeRecord fields)."""
    kind = record.get("error_kind")
    error = kind is not None and not (isinstance(kind, float) and math.isnan(kind)) and kind != ""
    ok = record.get("success")
    success = 0.0 if error or ok is None or ok != ok else float(bool(ok))  # NaN (ok != ok): not a success
    ts = _number(record.get("gc_total"))
    s = 0.0 if error else _number(record.get("gc_satisfied"))
    length = _number(record.get("expert_length"))
    t = _number(record.get("path_length"))
    if t is None:
        t = _number(record.get("steps"))
    factor = None
    if length is not None and t is not None:
        denominator = max(t, length)
        factor = length / denominator if denominator > 0 else 1.0
    has_goals = ts is not None and ts > 0 and s is not None
    return {
        SUCCESS: success,
        GC_MET: s,
        GC_TOTAL: ts,
        PROGRESS: s / ts if has_goals else None,
        PLW_SR_NUM: success * factor * length if factor is not None else None,
        PLW_GC_NUM: s / ts * factor * length if has_goals and factor is not None else None,
        EXPERT_LENGTH: length,
        INVALID: _number(record.get("invalid_actions")),
        STEPS: _number(record.get("steps")),
    }


#: The summary columns these declarations give (harness.scoring.summaries.summarize), in order.
SUMMARY_COLUMNS: tuple[str, ...] = ("episodes", "errors", "successes", "sr", "sr_lo", "sr_hi", "gc", "progress",
                                    "plw_sr", "plw_gc", "invalid_rate", "mean_steps")
