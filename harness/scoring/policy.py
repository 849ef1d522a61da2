"""How a suite is scored: the metrics it declares, and the generic cell formulas.

A suite declares its metrics once (:attr:`harness.plugins.SuitePlugin.metrics`) as
:class:`Metric` objects. Each names a per-episode *value* (a key of the record's
``values``, or of what the suite's ``values(record)`` function derives from the record's
fields) and how a cell aggregates it:

* ``"mean"``: the mean over the episodes it counts;
* ``"ratio"``: ``sum(value) / sum(weight)`` pooled over them (ALFRED's GC is of this kind:
  goal conditions met over goal conditions present).

Which episodes a cell counts (one error policy for every metric, docs/tables.md, "Declared metrics"): each
episode of a suite that declares the metric (a value of another suite never pools with it)
and that the metric ``applies`` to. Such an episode is, per :func:`classify`:

* ``value``: it has a number of its own;
* ``missing``: it has none (it errored, gave no answer, or an unusable one): it counts as the
  metric's ``missing`` value (a failure, or 0), or is left out where that is None;
* ``unscored``: its answer awaits a score that is not the model's to give (a judged metric not
  yet judged, an unreadable verdict, a failed judge call; a NaN value, or no value of a judged
  metric): left out of the value, and shown as the cell's coverage (:func:`tally`).

A fourth state never reaches a cell: a value the env did *not deliver* (NaN, an infinity or text
where a declared metric reads a value, or no value it owed) makes the episode an error record
(:mod:`harness.run.record_checks`), which counts as ``missing``; a NaN among a cell's values (an
in-memory caller's "not scored") never comes from an env.

The core never names a suite's metric: tables, statistics, the report, export and the
trackers read these declarations. Cells over no usable episode are NaN, never 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from harness.metric_declaration import Metric, number_or_none
from harness.scoring import record_fields


def _number(value: Any) -> float:
    """A per-episode value as a float; None, missing, NaN or non-numbers give NaN."""
    x = number_or_none(value)
    return math.nan if x is None else x


class EpisodeValues(dict):
    """One episode's values (a plain dict of them) that knows its episode's suite, so a cell
    counts a value only for the suites that declare its metric."""

    __slots__ = ("suite",)

    def __init__(self, values: Mapping[str, Any], suite: str | None = None) -> None:
        super().__init__(values)
        self.suite = suite


#: What :func:`classify` finds an episode to be for a metric.
NOT_APPLICABLE, VALUE, MISSING, UNSCORED = "not_applicable", "value", "missing", "unscored"
_ABSENT = object()


_OWN: dict[tuple[str, str, int], Metric | None] = {}


def own_declaration(suite: str, metric: Metric) -> Metric | None:
    """``suite``'s own declaration of the metric named like ``metric`` (a per-judge copy
    ``NAME@TAG`` by its base name, copied for the same judge), or None where the suite declares
    no such metric: two suites may give one name to different metrics (their ``applies``, range,
    missing value); each episode counts by its own suite's."""
    declared = suite_scoring(suite)[0]
    key = (suite, metric.name, id(declared))  # a suite registered anew (tests) is looked up anew
    if key not in _OWN:
        base, _, tag = metric.name.partition("@")
        found = next((m for m in declared if m.name == base), None)
        _OWN[key] = per_judge(found, tag) if found is not None and tag else found
    return _OWN[key]


def classify(metric: Metric, values: Mapping[str, Any]) -> tuple[float, float, str]:
    """One episode's (numerator, denominator, kind) for ``metric`` (the module doc's policy);
    NaN and NaN where the episode does not count in the value. An episode that knows its suite
    (:class:`EpisodeValues`) counts by that suite's declaration, and not at all where its suite
    declares no metric of that name."""
    suite = getattr(values, "suite", None)
    if suite is not None:
        own = own_declaration(str(suite), metric)
        if own is None:
            return math.nan, math.nan, NOT_APPLICABLE
        metric = own
    if metric.applies is not None:
        flag = _number(values.get(metric.applies))
        if math.isnan(flag) or not flag:
            return math.nan, math.nan, NOT_APPLICABLE
    raw = values.get(metric.value, _ABSENT)
    if (raw is _ABSENT and metric.judged) or (isinstance(raw, float) and math.isnan(raw)):
        return math.nan, math.nan, UNSCORED
    x, kind = _number(None if raw is _ABSENT else raw), VALUE
    if math.isnan(x):
        if metric.missing is None:
            return math.nan, math.nan, MISSING
        x, kind = float(metric.missing), MISSING
    if metric.aggregation != "ratio":
        return x, 1.0, kind
    w = _number(values.get(metric.weight))
    if math.isnan(w):
        return math.nan, math.nan, UNSCORED if kind == VALUE else kind
    return (x * w if kind == MISSING else x), w, kind


def columns(metric: Metric, values: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float]]:
    """Per-episode (numerator, denominator) of ``metric``, NaN where an episode does not count.

    ``mean``: (value, 1); ``ratio``: (value, weight); an episode without a value of its own
    counts as the metric's ``missing`` value (:func:`classify`)."""
    num: list[float] = []
    den: list[float] = []
    for v in values:
        x, w, _ = classify(metric, v)
        num.append(x)
        den.append(w)
    return num, den


@dataclass(frozen=True)
class Tally:
    """How a cell's episodes count for one metric: ``n`` apply; of those, ``valued`` have a
    value of their own, ``missing`` none (counted as the metric's ``missing`` value, or left
    out where ``missing_counts`` is False), ``unscored`` await a score (left out)."""

    n: int = 0
    valued: int = 0
    missing: int = 0
    unscored: int = 0
    missing_counts: bool = True

    @property
    def counted(self) -> int:
        """The episodes the cell's value is computed over."""
        return self.valued + (self.missing if self.missing_counts else 0)

    @property
    def complete(self) -> bool:
        """Whether every episode it applies to has a value of its own."""
        return self.valued == self.n


def tally(metric: Metric, values: Sequence[Mapping[str, Any]]) -> Tally:
    """The cell's :class:`Tally` of ``metric`` over per-episode ``values``."""
    kinds = [classify(metric, v)[2] for v in values]
    return Tally(n=sum(k != NOT_APPLICABLE for k in kinds), valued=kinds.count(VALUE),
                 missing=kinds.count(MISSING), unscored=kinds.count(UNSCORED),
                 missing_counts=metric.missing is not None)


def aggregate(metric: Metric, values: Sequence[Mapping[str, Any]]) -> float:
    """The cell value of ``metric`` over per-episode ``values``; NaN when undefined."""
    import numpy as np

    num, den = (np.asarray(c, dtype=float) for c in columns(metric, values))
    use = ~np.isnan(num)
    total = np.sum(den[use])  # numpy's pairwise sums: the same floats as the formulas' arrays
    return float(np.sum(num[use]) / total) if total != 0 else math.nan


ValuesFn = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def episode_values(record: Mapping[str, Any], derive: ValuesFn | None = None) -> EpisodeValues:
    """A record's per-episode values: the suite's derived values, then the stored ones (a stored
    value wins), knowing the record's suite."""
    suite = record.get("suite")
    out = EpisodeValues(derive(record) if derive is not None else {}, str(suite) if suite is not None else None)
    stored = record.get("values")
    if isinstance(stored, Mapping):
        out.update(stored)
    return out


def format_value(metric: Metric, x: float, digits: int = 1) -> str:
    """A cell as text: a rate as a percentage, other units raw; NaN as '–'."""
    if x is None or isinstance(x, float) and math.isnan(x):
        return "–"
    return f"{100 * x:.{digits}f}" if metric.percent else f"{x:.{max(digits, 2)}f}"


# --- Declarations of the suites in a store --------------------------------------------

_SCORING_CACHE: dict[str, tuple[tuple[Metric, ...], ValuesFn | None]] = {}
#: Every declaration met so far, by name (labels and formats of table columns).
_KNOWN: dict[str, Metric] = {}
#: The per-episode value a ratio metric is weighted by when it is path-length weighted
#: (the record field ``expert_length``, L*): tables name the unit of L* and T beside it.
PATH_LENGTH_WEIGHT = "expert_length"


def known_metric(name: str) -> Metric | None:
    """The declaration of a metric met so far (else the fallback scoring's), or None."""
    if name not in _KNOWN:
        for m in record_fields.METRICS:
            _KNOWN.setdefault(m.name, m)
    return _KNOWN.get(name)


def record_metrics(*names: str) -> tuple[Metric, ...]:
    """The metrics of a record's own fields, declared once for every suite: success rate, goal
    conditions (pooled), progress, the path-length-weighted SR and GC, and the invalid-action
    rate (their names, labels and formulas: ``harness list SUITE`` of a built-in suite).
    ``names``: only those (in that order); none: all. A plugin declares them beside its own::

        metrics=(*record_metrics("sr", "gc"), Metric("score", "Score", "score")),
        values="harness.scoring:record_values",

    Public: a plugin imports them from here, never from the project's suites."""
    declared_ = {m.name: m for m in record_fields.METRICS}
    unknown = [n for n in names if n not in declared_]
    if unknown:
        raise ValueError(f"no record metric {unknown[0]!r} (record metrics: {', '.join(declared_)})")
    return tuple(declared_[n] for n in names) if names else tuple(declared_.values())


def record_values(record: Mapping[str, Any]) -> dict[str, Any]:
    """The per-episode values :func:`record_metrics` read, derived from a record's fields (a
    suite's ``values="harness.scoring:record_values"``; a suite with values of its own calls it
    from its function and adds them)."""
    return dict(record_fields.values(record))


def is_path_length_weighted(name: str) -> bool:
    m = known_metric(name)
    return m is not None and m.aggregation == "ratio" and m.weight == PATH_LENGTH_WEIGHT


def label_of(name: str) -> str | None:
    """A summary column's label from its declaration (``NAME_lo``/``_hi``: "LABEL lo"/"hi")."""
    m = known_metric(name)
    if m is not None:
        return m.label
    base, _, end = name.rpartition("_")
    m = known_metric(base) if end in ("lo", "hi") else None
    return f"{m.label} {end}" if m is not None and m.binary else None


def is_percent(name: str) -> bool:
    """Whether a summary column shows as a percentage (a rate, or a binary metric's bound)."""
    m = known_metric(name)
    if m is None:
        base, _, end = name.rpartition("_")
        m = known_metric(base) if end in ("lo", "hi") else None
    return m is None or m.percent


def _load(target: str) -> Any:
    import importlib

    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


def suite_scoring(suite: str) -> tuple[tuple[Metric, ...], ValuesFn | None]:
    """A suite's declared metrics and its values function (cached per process)."""
    if suite not in _SCORING_CACHE:
        metrics: tuple[Metric, ...] = ()
        derive: ValuesFn | None = None
        try:
            from harness.registry.catalog import SUITES

            entry = SUITES.entry(suite) if suite in SUITES.names() else None
        except Exception:  # noqa: BLE001 - a broken plugin elsewhere must not hide a store's tables
            entry = None
        if entry is not None and entry.metrics:
            metrics = tuple(entry.metrics)
            derive = _load(entry.values) if entry.values else None
        else:  # a suite not installed here, or one written before metrics were declared
            metrics, derive = tuple(record_fields.METRICS), record_fields.values
        _SCORING_CACHE[suite] = (metrics, derive)
        for m in metrics:
            _KNOWN.setdefault(m.name, m)
    return _SCORING_CACHE[suite]


def declared(suites: Iterable[str]) -> dict[str, Metric]:
    """The metrics the given suites declare, by name, in declaration order (first suite first).

    No suite at all: the fallback scoring's metrics (an empty table keeps its columns). While
    judges are shown side by side (:func:`set_judge_columns`), each judged metric that several
    of them scored is replaced by one metric per judge (:func:`per_judge`)."""
    out: dict[str, Metric] = {}
    names = sorted({str(s) for s in suites})
    for suite in names or [""]:
        metrics = suite_scoring(suite)[0] if suite else tuple(record_fields.METRICS)
        for m in metrics:
            split = m.judged and m.value in _JUDGED_BY_SEVERAL
            for shown in ([per_judge(m, t) for t in _JUDGE_COLUMNS] if split else [m]):
                out.setdefault(shown.name, shown)
    return out


#: Judges whose scores tables show side by side (``--judge all``; :mod:`harness.judging.views`),
#: and the judged values two or more of them gave (only those are split per judge).
_JUDGE_COLUMNS: tuple[str, ...] = ()
_JUDGED_BY_SEVERAL: frozenset[str] = frozenset()


def set_judge_columns(tags: Sequence[str], values: Iterable[str] = ()) -> None:
    """Show each judged metric whose value is in ``values`` once per judge tag (empty: every
    judged metric once, from the chosen judges)."""
    global _JUDGE_COLUMNS, _JUDGED_BY_SEVERAL
    _JUDGE_COLUMNS, _JUDGED_BY_SEVERAL = tuple(tags), frozenset(values) if tags else frozenset()


def per_judge(metric: Metric, tag: str) -> Metric:
    """``metric`` as scored by the judge ``tag``: name ``NAME@TAG``, label ``LABEL [TAG]``, value ``VALUE@TAG``."""
    import dataclasses

    m = dataclasses.replace(metric, name=f"{metric.name}@{tag}", label=f"{metric.label} [{tag}]",
                            value=f"{metric.value}@{tag}", description=f"{metric.description} (judge {tag})")
    _KNOWN[m.name] = m
    return m


def value_rows(df: Any) -> list[EpisodeValues]:
    """Each record row's per-episode values (the suite's derived values, then stored ones)."""
    if not len(df):
        return []
    rows = df.to_dict("records")
    return [episode_values(r, suite_scoring(str(r.get("suite")))[1]) for r in rows]
