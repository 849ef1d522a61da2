"""Temporal grounding scores for ProcObject-10K: set-level IoU, IoP and IoG between predicted and
reference evidence spans, per question, and their means.

The definition (the paper, section "Grounding Metrics"; its text is in
WenliangGuo/ProcObject-10K-Page at 21702a847363a58df645ba9919805befb91fc212,
tools/paper/5_experiment.tex): for predicted spans {T^_i} and reference spans {T_j},

    IoU = sum_i sum_j |T^_i ∩ T_j| / |(∪_i T^_i) ∪ (∪_j T_j)|,

IoP and IoG replace the denominator with |∪_i T^_i| and |∪_j T_j|. Each side is first merged
into disjoint intervals (the release's scorer ``benchmark/evaluation/evaluate_grounding.py``
merges before scoring: its ``_merge_intervals`` and ``_parse_intervals`` are imported and applied
to the evidence that scorer sees, tools/make_explorer.py:19 and 50-51 of the page repository; it scores raw predictions with the scorer's ``IoU`` at :107);
after merging, the double sum is exactly |∪T^ ∩ ∪T|, so overlapping predictions can't count
twice and IoU stays in [0, 1].

Lengths are continuous: |[s, e]| = e - s in seconds. Checked against the scorer's own recorded
output: the page's explorer.js lists, for ten test questions and four models, the predicted and
reference spans and the IoU the frozen scorer gave; tests/envs/procobject/test_grounding.py
recomputes all forty (e.g. predicted [[0, 25], [30, 50]] against [[0, 23], [31, 39], [43, 53]]:
38 / 48 = 0.792).

The ancestor's traps (qirui-chen/MultiHop-EgoQA at ab32f8154f539d666f3c7ba5b2f50a1bb1c1b08c,
baseline/gelm/eval/inference_multihop_qa.py), each decided here:

1. inclusive lengths, e - s + 1 (lines 65-68, 77-78, 90, 102): right for integer frame indices,
   wrong for seconds; **not followed** (continuous lengths, as the recorded IoUs above require);
2. no merging: intersections summed over every predicted-reference pair and lengths summed per
   span (lines 76-79), so overlapping predictions count twice and IoU can pass 1; **not
   followed** (both sides merged; touching spans, [0, 5] and [5, 8], merge into [0, 8]);
3. empty evidence: the ancestor's loader drops questions whose evidence list is empty
   (baseline/gelm/dataset/multihop_qa_dataset.py:112-115, 175), and at evaluation an empty
   prediction list fails on ``pred[0]`` (inference_multihop_qa.py:74), so neither reaches a mean.
   Here an **empty prediction scores 0** on IoU, IoP and IoG and stays in every mean (a model
   that gives no evidence has grounded nothing; 0 / 0 for IoP is defined as 0); a question whose
   *reference* evidence is empty, or has no length (only points [s, s], which the data accepts:
   IoG would divide by zero), has no defined grounding: it is left out of the grounding means
   and counted (``no_reference``).

Thresholds: IoU@0.3 and IoU@0.5 are the share of scored questions with IoU >= the threshold
(the ancestor counts IoU > 0.3, line 207; the release's rule could not be read; ``>=`` is the
usual R@IoU convention and is what is used here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

Span = tuple[float, float]
THRESHOLDS = (0.3, 0.5)


def merge(spans: Iterable[Sequence[float]]) -> list[Span]:
    """Disjoint, sorted intervals covering ``spans``; overlapping, nested and touching spans merge.
    A zero-length span is kept as a point (it adds no length)."""
    out: list[list[float]] = []
    for s, e in sorted((float(a), float(b)) for a, b in spans):
        if e < s:
            raise ValueError(f"reversed span [{s}, {e}]")
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def total(merged: Sequence[Span]) -> float:
    """Length of disjoint intervals."""
    return sum(e - s for s, e in merged)


def overlap(a: Sequence[Span], b: Sequence[Span]) -> float:
    """Length of the intersection of two lists of disjoint sorted intervals."""
    i = j = 0
    length = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            length += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return length


@dataclass(frozen=True)
class Grounding:
    iou: float
    iop: float
    iog: float


def ground(predicted: Iterable[Sequence[float]], reference: Iterable[Sequence[float]]) -> Grounding | None:
    """IoU, IoP, IoG of one question (module doc), or None when the reference is empty or of no length."""
    ref = merge(reference)
    ref_len = total(ref)
    if not ref or ref_len <= 0:
        return None
    pred = merge(predicted)
    pred_len = total(pred)
    inter = overlap(pred, ref)
    union = pred_len + ref_len - inter
    return Grounding(iou=inter / union if union > 0 else 0.0, iop=inter / pred_len if pred_len > 0 else 0.0,
                     iog=inter / ref_len)


def has_reference(spans: Iterable[Sequence[float]]) -> bool:
    """Whether reference spans define a grounding (a merged length above 0: :func:`ground`)."""
    return total(merge(spans)) > 0


#: The breakdown value of a question without a usable reference (``--by reference``).
NO_REFERENCE = "none"


def values(record: Mapping[str, Any]) -> dict[str, float]:
    """The per-question values known from the question alone, so an errored episode has them too:
    ``has_reference`` (the grounding metrics apply where it is 1) and ``no_reference`` (its
    complement, counted by the ``no_reference`` metric), from the record's ``reference`` breakdown
    (``none`` where no reference span survives :func:`envs.procobject.answer.usable_reference`)."""
    extra = record.get("extra")
    breakdown = extra.get("breakdown") if isinstance(extra, Mapping) else None
    none = isinstance(breakdown, Mapping) and breakdown.get("reference") == NO_REFERENCE
    return {"has_reference": float(not none), "no_reference": float(none)}


def summarize(scores: Iterable[Grounding | None]) -> dict[str, float | int | None]:
    """mIoU, mIoP, mIoG and IoU@0.3/0.5 over the scored questions; ``no_reference`` counts the
    questions left out for want of reference evidence."""
    scores = list(scores)
    scored = [g for g in scores if g is not None]
    n = len(scored)
    out: dict[str, float | int | None] = {"n": len(scores), "scored": n, "no_reference": len(scores) - n}
    out["mIoU"] = sum(g.iou for g in scored) / n if n else None
    out["mIoP"] = sum(g.iop for g in scored) / n if n else None
    out["mIoG"] = sum(g.iog for g in scored) / n if n else None
    for t in THRESHOLDS:
        out[f"IoU@{t}"] = sum(1 for g in scored if g.iou >= t) / n if n else None
    return out
