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
* ``missing``: it has none (None: it errored, gave no answer, or an unusable one; or no value
  of a metric that is not judged): it counts as the metric's ``missing`` value (a failure, or
  0), or is left out where that is None;
* ``unscored``: its answer awaits a score that is not the model's to give (a judged metric not
  yet judged, an unreadable verdict, a failed judge call: no value of a judged metric, or the
  explicit marker :data:`harness.values.AWAITS_SCORE` an in-memory caller puts there): left out
  of the value, and shown as the cell's coverage (:func:`tally`).

A fourth state never reaches a cell from a store: a value the env did *not deliver* (NaN, an
infinity or text where a declared metric reads a value, or no value it owed) makes the episode
an error record (:mod:`harness.run.record_checks`), which counts as ``missing``. A NaN (an
infinity, text) an in-memory caller puts among a cell's values is read the same way
(:class:`harness.values.ValueState` ``NOT_DELIVERED``, by the one rule
:func:`harness.values.read_value`) and counted as such an error record's value would be: as the
metric's ``missing`` value (in :attr:`Tally.missing`), never as "unscored".

The core never names a suite's metric: tables, statistics, the report, export and the
trackers read these declarations. Cells over no usable episode are NaN, never 0.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from harness.metric_declaration import Metric
from harness.registry.catalog import SUITES
from harness.scoring import record_fields
from harness.values import ValueState, read_value


class EpisodeValues(dict):
    """One episode's values (a plain dict of them) that knows its episode's suite, so a cell
    counts a value only for the suites that declare its metric."""

    __slots__ = ("suite",)

    def __init__(self, values: Mapping[str, Any], suite: str | None = None) -> None:
        super().__init__(values)
        self.suite = suite


_ABSENT = object()
#: The states a cell counts as the metric's ``missing`` value: none of the episode's own, or
#: one that was not delivered (an error record's, had the runner seen it).
_COUNTED_MISSING = (ValueState.MISSING, ValueState.NOT_DELIVERED)


def own_declaration(suite: str, metric: Metric) -> Metric | None:
    """``suite``'s own declaration of the metric named like ``metric`` (a per-judge copy
    ``NAME@TAG`` by its base name, copied for the same judge), or None where the suite declares
    no such metric: two suites may give one name to different metrics (their ``applies``, range,
    missing value); each episode counts by its own suite's."""
    declared = suite_scoring(suite)[0]
    try:
        return _own(declared, metric.name)
    except TypeError:  # an unhashable declaration (a list where a tuple belongs): not memoised
        return _own.__wrapped__(declared, metric.name)


@functools.lru_cache(maxsize=1024)
def _own(declared: tuple[Metric, ...], name: str) -> Metric | None:
    """:func:`own_declaration` from the suite's declarations themselves (memoised by their
    value: a suite registered anew, as tests do, is answered from its new declarations)."""
    base, _, tag = name.partition("@")
    found = next((m for m in declared if m.name == base), None)
    return per_judge(found, tag) if found is not None and tag else found


def classify(metric: Metric, values: Mapping[str, Any],
             own: Callable[[str, Metric], Metric | None] = own_declaration) -> tuple[float, float, ValueState]:
    """One episode's (numerator, denominator, state) for ``metric`` (the module doc's policy);
    NaN and NaN where the episode does not count in the value. Each value is read by
    :func:`harness.values.read_value`; an absent one is UNSCORED for a judged metric, else
    MISSING. An episode that knows its suite (:class:`EpisodeValues`) counts by that suite's
    declaration (``own``: :func:`own_declaration`, or a cell's memo of it), and not at all where
    its suite declares no metric of that name."""
    suite = getattr(values, "suite", None)
    if suite is not None:
        own = own(str(suite), metric)
        if own is None:
            return math.nan, math.nan, ValueState.NOT_APPLICABLE
        metric = own
    if metric.applies is not None:
        state, flag = read_value(values.get(metric.applies))
        if state is not ValueState.VALUE or not flag:
            return math.nan, math.nan, ValueState.NOT_APPLICABLE
    raw = values.get(metric.value, _ABSENT)
    if raw is _ABSENT:
        kind, x = (ValueState.UNSCORED if metric.judged else ValueState.MISSING), None
    else:
        kind, x = read_value(raw)
    if kind is ValueState.UNSCORED:
        return math.nan, math.nan, kind
    if kind in _COUNTED_MISSING:
        if metric.missing is None:
            return math.nan, math.nan, kind
        x = float(metric.missing)
    if metric.aggregation != "ratio":
        return x, 1.0, kind
    state, w = read_value(values.get(metric.weight))
    if state is not ValueState.VALUE:
        return math.nan, math.nan, ValueState.UNSCORED if kind is ValueState.VALUE else kind
    return (x * w if kind in _COUNTED_MISSING else x), w, kind


def columns(metric: Metric, values: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float]]:
    """Per-episode (numerator, denominator) of ``metric``, NaN where an episode does not count.

    ``mean``: (value, 1); ``ratio``: (value, weight); an episode without a value of its own
    counts as the metric's ``missing`` value (:func:`classify`)."""
    num: list[float] = []
    den: list[float] = []
    own = _cell_declarations()
    for v in values:
        x, w, _ = classify(metric, v, own)
        num.append(x)
        den.append(w)
    return num, den


@dataclass(frozen=True)
class Tally:
    """How a cell's episodes count for one metric: ``n`` apply; of those, ``valued`` have a
    value of their own, ``missing`` none (counted as the metric's ``missing`` value, or left
    out where ``missing_counts`` is False; a value that was not delivered counts here too),
    ``unscored`` await a score (left out)."""

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


def _cell_declarations() -> Callable[[str, Metric], Metric | None]:
    """:func:`own_declaration` looked up once per suite over one cell's episodes (a memo that
    lives for one call only, so a suite registered anew between calls is read anew)."""
    memo: dict[tuple[str, str], Metric | None] = {}

    def own(suite: str, metric: Metric) -> Metric | None:
        key = (suite, metric.name)
        if key not in memo:
            memo[key] = own_declaration(suite, metric)
        return memo[key]

    return own


def tally(metric: Metric, values: Sequence[Mapping[str, Any]]) -> Tally:
    """The cell's :class:`Tally` of ``metric`` over per-episode ``values``."""
    own = _cell_declarations()
    kinds = [classify(metric, v, own)[2] for v in values]
    return Tally(n=sum(k is not ValueState.NOT_APPLICABLE for k in kinds), valued=kinds.count(ValueState.VALUE),
                 missing=sum(k in _COUNTED_MISSING for k in kinds), unscored=kinds.count(ValueState.UNSCORED),
                 missing_counts=metric.missing is not None)


def aggregate(metric: Metric, values: Sequence[Mapping[str, Any]]) -> float:
    """The cell value of ``metric`` over per-episode ``values``; NaN when undefined."""
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

#: The per-episode value a ratio metric is weighted by when it is path-length weighted
#: (the record field ``expert_length``, L*): tables name the unit of L* and T beside it.
PATH_LENGTH_WEIGHT = "expert_length"


def known_metric(name: str) -> Metric | None:
    """The declaration of a metric of that name: the first installed suite's (by name) that
    declares one, else the fallback scoring's; ``NAME@TAG``: ``NAME``'s as scored by the judge
    ``TAG`` (:func:`per_judge`); None where none is declared. The same name gives the same
    answer whatever was read before (it is looked up in the installed declarations each time)."""
    try:
        entries = SUITES.entries()
    except Exception:  # noqa: BLE001 - a broken plugin elsewhere must not hide a store's tables
        entries = []
    for metrics in (*(e.metrics for e in entries), record_fields.METRICS):
        found = next((m for m in metrics if m.name == name), None)
        if found is not None:
            return found
    base, at, tag = name.rpartition("@")
    if at and base and tag:
        found = known_metric(base)
        return per_judge(found, tag) if found is not None else None
    return None


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


@functools.lru_cache(maxsize=256)
def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


def suite_scoring(suite: str) -> tuple[tuple[Metric, ...], ValuesFn | None]:
    """A suite's declared metrics and its values function, read from the suite's installed
    plugin each call (its values function is imported once per target)."""
    try:
        entry = SUITES.entry(suite) if suite in SUITES.names() else None
    except Exception:  # noqa: BLE001 - a broken plugin elsewhere must not hide a store's tables
        entry = None
    if entry is not None and entry.metrics:
        return tuple(entry.metrics), (_load(entry.values) if entry.values else None)
    # a suite not installed here, or one written before metrics were declared
    return tuple(record_fields.METRICS), record_fields.values


@dataclass(frozen=True)
class Scoring:
    """How one view of the records shows the suites' declared metrics: plain (:data:`PLAIN`),
    or with judges side by side (``--judge all``; :attr:`harness.judging.views.JudgeView.scoring`),
    each judged metric whose value two or more of them gave (``judged_by_several``) shown once
    per judge tag (``judge_columns``). A view is built where the records are selected
    (:func:`harness.tables.selection.load`) and travels with its frame (:func:`on_frame`,
    :func:`of_frame`), so what a table declares depends on its own records only."""

    judge_columns: tuple[str, ...] = ()
    judged_by_several: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        tags = tuple(self.judge_columns)
        object.__setattr__(self, "judge_columns", tags)
        object.__setattr__(self, "judged_by_several", frozenset(self.judged_by_several) if tags else frozenset())

    def shown(self, metric: Metric) -> list[Metric]:
        """``metric`` as this view shows it: once per judge (:func:`per_judge`) where several
        judges scored its value, else itself."""
        if metric.judged and metric.value in self.judged_by_several:
            return [per_judge(metric, t) for t in self.judge_columns]
        return [metric]

    def declared(self, suites: Iterable[str]) -> dict[str, Metric]:
        """The metrics the given suites declare, by name, in declaration order (first suite first).

        No suite at all: the fallback scoring's metrics (an empty table keeps its columns). Each
        judged metric that several judges scored is replaced by one metric per judge (:meth:`shown`)."""
        out: dict[str, Metric] = {}
        names = sorted({str(s) for s in suites})
        for suite in names or [""]:
            metrics = suite_scoring(suite)[0] if suite else tuple(record_fields.METRICS)
            for m in metrics:
                for shown in self.shown(m):
                    out.setdefault(shown.name, shown)
        return out


#: Each judged metric once (one judge, the mean of several, or none): every view but ``--judge all``'s.
PLAIN = Scoring()
#: The key of a records frame's ``attrs`` (and of a table's built from it) holding its :class:`Scoring`.
FRAME_ATTR = "scoring"


def of_frame(frame: Any) -> Scoring:
    """The :class:`Scoring` a records frame (or a table built from one) was selected with;
    :data:`PLAIN` for a frame built without a view."""
    found = getattr(frame, "attrs", {}).get(FRAME_ATTR)
    return found if isinstance(found, Scoring) else PLAIN


def on_frame(frame: Any, scoring: Scoring) -> Any:
    """``frame`` carrying ``scoring`` in its ``attrs`` (pandas keeps them through selections,
    assignments, sorts and groupings of the frame)."""
    frame.attrs[FRAME_ATTR] = scoring
    return frame


def per_judge(metric: Metric, tag: str) -> Metric:
    """``metric`` as scored by the judge ``tag``: name ``NAME@TAG``, label ``LABEL [TAG]``, value ``VALUE@TAG``."""
    return dataclasses.replace(metric, name=f"{metric.name}@{tag}", label=f"{metric.label} [{tag}]",
                               value=f"{metric.value}@{tag}", description=f"{metric.description} (judge {tag})")


def value_rows(df: Any) -> list[EpisodeValues]:
    """Each record row's per-episode values (the suite's derived values, then stored ones)."""
    if not len(df):
        return []
    rows = df.to_dict("records")
    derive = {suite: suite_scoring(suite)[1] for suite in {str(r.get("suite")) for r in rows}}
    return [episode_values(r, derive[str(r.get("suite"))]) for r in rows]
