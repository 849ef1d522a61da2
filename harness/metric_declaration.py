"""A metric declaration (:class:`Metric`) and its checks: what a suite's plugin declares
(:attr:`harness.plugins.SuitePlugin.metrics`). How cells aggregate the declared values, and
the declarations of the suites in a store, are in :mod:`harness.scoring.policy` (which re-exports
these names)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from harness.values import DELIVERED, ValueState, read_value

#: Aggregations a metric may declare.
AGGREGATIONS = ("mean", "ratio")
#: ``Metric.missing`` left to its default (see :class:`Metric`).
DEFAULT_MISSING = "default"


@dataclass(frozen=True)
class Metric:
    """One metric a suite declares (see the module doc).

    The error policy (docs/tables.md, "Declared metrics"): every episode the metric ``applies`` to counts in its
    cell. An applicable episode without a value of its own (it errored, its answer was empty, or
    the answer could not be scored for the model's fault) counts as ``missing``; by default a
    binary metric's failure (0, or 1 where lower is better) and 0 for any other metric (the
    bottom of its range when 0 is outside it). ``missing=None`` leaves such episodes out of the
    value (the cell then shows its coverage). ``applies``: None, every episode of the suite;
    else the name of a per-episode value that is true on the episodes the metric is about (a
    multiple-choice accuracy applies to the multiple-choice questions only).
    """

    name: str
    label: str
    value: str
    aggregation: str = "mean"
    weight: str | None = None
    range: tuple[float, float] = (0.0, 1.0)
    unit: str = "rate"
    higher_is_better: bool = True
    binary: bool = False
    judged: bool = False
    default: bool = False
    description: str = ""
    applies: str | None = None
    missing: float | None | str = DEFAULT_MISSING

    def __post_init__(self) -> None:
        where = f"metric {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("metric declaration has an empty name")
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"{where} has an empty label")
        if not isinstance(self.value, str) or not self.value.strip():
            raise ValueError(f"{where} names no per-episode value")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"{where} has unknown aggregation {self.aggregation!r} "
                             f"(one of: {', '.join(AGGREGATIONS)})")
        if self.aggregation == "ratio" and not self.weight:
            raise ValueError(f"{where} aggregates as a ratio but declares no weight value")
        if self.aggregation != "ratio" and self.weight is not None:
            raise ValueError(f"{where} declares a weight but aggregates as {self.aggregation!r}")
        try:
            lo, hi = (float(x) for x in self.range)
        except (TypeError, ValueError):
            raise ValueError(f"{where} has a malformed range {self.range!r}") from None
        if not lo < hi:
            raise ValueError(f"{where} has an empty range {self.range!r} (needs lo < hi)")
        if self.binary and (lo, hi) != (0.0, 1.0):
            raise ValueError(f"{where} is binary but its range is {self.range!r}, not (0, 1)")
        if self.applies is not None and (not isinstance(self.applies, str) or not self.applies.strip()):
            raise ValueError(f"{where} has a malformed applies {self.applies!r} (the name of a per-episode value)")
        missing = self.missing
        if missing == DEFAULT_MISSING:
            if self.binary:
                missing = 0.0 if self.higher_is_better else 1.0
            else:
                missing = 0.0 if lo <= 0.0 <= hi else lo
        elif missing is not None:
            try:
                missing = float(missing)
            except (TypeError, ValueError):
                raise ValueError(f"{where} has a malformed missing {self.missing!r} (a number or None)") from None
            if not lo <= missing <= hi:
                raise ValueError(f"{where} counts a missing value as {missing}, outside its range {self.range!r}")
        object.__setattr__(self, "missing", missing)

    @property
    def policy(self) -> str:
        """The error policy in words (``harness list``, the tables' footnotes)."""
        if self.missing is None:
            return "an episode without a value is left out"
        return f"an episode without a value counts as {self.missing:g}"

    @property
    def percent(self) -> bool:
        """Whether tables show it as a percentage (a rate in [0, 1])."""
        return self.unit == "rate"


def check_metrics(metrics: Iterable[Metric], owner: str = "suite") -> tuple[Metric, ...]:
    """The declarations as a tuple; ValueError (one line) on a non-Metric or a duplicate name."""
    out: list[Metric] = []
    seen: set[str] = set()
    for m in metrics:
        if not isinstance(m, Metric):
            raise ValueError(f"{owner} declares {m!r}, not a harness.scoring.policy.Metric")
        if m.name in seen:
            raise ValueError(f"{owner} declares metric {m.name!r} twice")
        seen.add(m.name)
        out.append(m)
    return tuple(out)


def applies_to(metric: Metric, values: Mapping[str, Any]) -> bool:
    """Whether ``metric`` applies to the episode whose per-episode values are ``values``."""
    if metric.applies is None:
        return True
    state, flag = read_value(values.get(metric.applies))
    return state is ValueState.VALUE and flag != 0  # None, 0 or not a number: does not apply (as harness.scoring.policy)


def value_problems(suite: str, metrics: Iterable[Metric], values: Mapping[str, Any],
                   require: bool = True) -> list[tuple[str, str]]:
    """What breaks the declarations in one finished episode's per-episode ``values`` (the
    stored ones and those the suite derives): ``(value name, one line naming the suite and the
    metric)`` pairs, for

    * a non-judged metric that applies to the episode and whose value (or, for a ratio, whose
      weight) is absent: the env never delivered it (an explicit None is a delivered
      "no value": the metric's ``missing`` policy counts it);
    * a ``mean`` metric's value outside its declared range ``[lo, hi]`` (tables would print it);
    * a ``ratio`` metric's weight below 0, or its value outside ``lo * weight .. hi * weight``
      (the episode's own ratio outside the declared range: a pooled cell could leave it).

    Judged metrics are left out: a judge gives their values after the run. ``require=False``:
    absent values are not asked for (an episode the agent ended with an empty plan).
    """
    out: list[tuple[str, str]] = []
    for m in metrics:
        if m.judged or not applies_to(m, values):
            continue
        lo, hi = (float(x) for x in m.range)
        got: dict[str, float | None] = {}
        for key, role in ((m.value, "value"), (m.weight, "weight")):
            if key is None:
                continue
            if key not in values:
                if require:
                    out.append((key, f"suite {suite}: metric {m.name!r} applies but the episode ended without its "
                                     f"{role} {key!r} (the env never delivered it)"))
                continue
            got[role] = number_or_none(values[key])
        x, w = got.get("value"), got.get("weight")
        if x is None:
            continue
        if m.aggregation == "mean":
            if not lo <= x <= hi:
                out.append((m.value, f"suite {suite}: metric {m.name!r} value {x:g} is outside its declared range "
                                     f"[{lo:g}, {hi:g}]"))
        elif w is not None and w < 0:
            out.append((m.weight, f"suite {suite}: metric {m.name!r} weight {m.weight!r} is {w:g}, below 0"))
        elif w is not None and not (_at_least(x, lo, w) and _at_least(-x, -hi, w)):
            out.append((m.value, f"suite {suite}: metric {m.name!r} value {m.value!r} {x:g} over weight {m.weight!r} "
                                 f"{w:g} is outside its declared range [{lo:g}, {hi:g}] (a ratio's value must be "
                                 f"within lo * weight .. hi * weight)"))
    return out


def _at_least(x: float, bound: float, weight: float) -> bool:
    """``x >= bound * weight`` up to rounding; an infinite bound (an unbounded end) holds for every x."""
    return math.isinf(bound) or x >= bound * weight - 1e-9 * max(1.0, abs(bound * weight))


def not_delivered(suite: str, metrics: Iterable[Metric], values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The values a declared metric reads (its value, weight or ``applies``) that the env gave as
    something other than a number or None -- NaN, an infinity, text
    (:attr:`harness.values.ValueState.NOT_DELIVERED` by :func:`harness.values.read_value`):
    ``(value name, one line naming the suite and the metric)`` pairs. Such a value was *not
    delivered*: never a "missing" value a cell would count (None is the env's "no value")."""
    return undelivered_problems(suite, metrics, {k: v for k, v in values.items() if read_value(v)[0] not in DELIVERED})


def undelivered_problems(suite: str, metrics: Iterable[Metric], undelivered: Mapping[str, Any]) -> list[tuple[str, str]]:
    """:func:`not_delivered`'s pairs from the values already found not delivered (each name to
    the raw value the env gave), e.g. those the runner kept while it read an episode's values:
    each value a declared metric reads, named once, with the first metric that reads it."""
    out: list[tuple[str, str]] = []
    for m in metrics:
        for key, role in ((m.value, "value"), (m.weight, "weight"), (m.applies, "applies")):
            if key is None or key not in undelivered or key in {k for k, _ in out}:
                continue
            out.append((key, f"suite {suite}: metric {m.name!r} {role} {key!r} is {_short(undelivered[key])}, not a "
                             "number: not delivered (an env gives a finite number, or None for no value)"))
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number_or_none(value: Any) -> float | None:
    """A record field as a float; None for None, NaN (pandas' missing field) and non-numbers.
    A per-episode *value* is read by :func:`harness.values.read_value` instead (its NaN is not
    delivered, not missing)."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if x != x else x
