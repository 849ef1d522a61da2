"""A metric declaration (:class:`Metric`) and its checks: what a suite's plugin declares
(:attr:`harness.plugins.SuitePlugin.metrics`). How cells aggregate the declared values, and
the declarations of the suites in a store, are in :mod:`harness.scoring` (which re-exports
these names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: Aggregations a metric may declare.
AGGREGATIONS = ("mean", "ratio")
#: ``Metric.missing``'s default: the worst end of the declared range.
_WORST: Any = type("WorstEnd", (), {"__repr__": lambda self: "<worst end of range>"})()


@dataclass(frozen=True)
class Metric:
    """One metric a suite declares (see the module doc)."""

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
    #: None: the metric applies to every episode of its suite; else the name of a per-episode
    #: value (stored, or derived by the suite's ``values(record)``) that is truthy on the episodes
    #: it applies to. Where it does not apply, no value is required.
    applies: str | None = None
    #: What an applicable episode without a value counts as (errored, unanswered, unscorable);
    #: default: the worst end of the range (``range[0]`` when higher is better, else ``range[1]``).
    #: None: such an episode is left out of the value.
    missing: float | None = _WORST

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
        if self.missing is _WORST:
            object.__setattr__(self, "missing", lo if self.higher_is_better else hi)
        if self.applies is not None and (not isinstance(self.applies, str) or not self.applies.strip()):
            raise ValueError(f"{where} has an empty applies value name")

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
            raise ValueError(f"{owner} declares {m!r}, not a harness.scoring.Metric")
        if m.name in seen:
            raise ValueError(f"{owner} declares metric {m.name!r} twice")
        seen.add(m.name)
        out.append(m)
    return tuple(out)


def applies_to(metric: Metric, values: Mapping[str, Any]) -> bool:
    """Whether ``metric`` applies to the episode whose per-episode values are ``values``."""
    if metric.applies is None:
        return True
    flag = values.get(metric.applies)
    return flag is not None and flag == flag and bool(flag)  # None, NaN: does not apply


def value_problems(suite: str, metrics: Iterable[Metric], values: Mapping[str, Any],
                   require: bool = True) -> list[tuple[str, str]]:
    """What breaks the declarations in one finished episode's per-episode ``values`` (the
    stored ones and those the suite derives): ``(value name, one line naming the suite and the
    metric)`` pairs, for

    * a non-judged metric that applies to the episode and whose value (or, for a ratio, whose
      weight) is absent: the env never delivered it (an explicit None is a delivered
      "no value": the metric's ``missing`` policy counts it);
    * a ``mean`` metric's value outside its declared range (tables would print it);
    * a ``ratio`` metric's value or weight below 0 where its range starts at 0 or above (its
      pooled cell is bounded by the suite's own counts, which the record's invariants check).

    Judged metrics are left out: a judge gives their values after the run. ``require=False``:
    absent values are not asked for (an episode the agent ended with an empty plan).
    """
    out: list[tuple[str, str]] = []
    for m in metrics:
        if m.judged or not applies_to(m, values):
            continue
        lo, hi = (float(x) for x in m.range)
        for key, role in ((m.value, "value"), (m.weight, "weight")):
            if key is None:
                continue
            if key not in values:
                if not require:
                    continue
                out.append((key, f"suite {suite}: metric {m.name!r} applies but the episode ended without its "
                                 f"{role} {key!r} (the env never delivered it)"))
                continue
            x = _number(values[key])
            if x is None:
                continue
            if m.aggregation == "mean" and not lo <= x <= hi:
                out.append((key, f"suite {suite}: metric {m.name!r} value {x:g} is outside its declared range "
                                 f"[{lo:g}, {hi:g}]"))
            elif m.aggregation == "ratio" and lo >= 0 and x < 0:
                out.append((key, f"suite {suite}: metric {m.name!r} {role} {key!r} is {x:g}, below 0"))
    return out


def _number(value: Any) -> float | None:
    """A value as a float; None for None, NaN (unscored) and non-numbers."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if x != x else x
