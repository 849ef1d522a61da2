"""Failure taxonomy: one class per finished episode, from its stored record only.

Used by ``harness table --by failure`` and the report's failure chart (:mod:`harness.tables.failures`), which show the
same classes, in the same order and colours. It reads the record's fields (success,
error_kind, termination, empty_plan, invalid_actions, planner_output_errors,
gc_satisfied, task_type), the text-action history in ``extra["history"]``
(``[[action, feedback], ...]``) and the task's facts in ``extra["task"]`` (written by
the runner through the suite's reader, :meth:`FailureRules.task_of`; for stores written
before that, the caller may pass the facts re-derived from the suite: see
:func:`tasks_from_suites`). Nothing is re-run.

The core knows no action language and no task. It keeps the generic classes
(:data:`GENERIC_CLASSES`); a suite declares its own (``SuitePlugin.failure_classes``,
:class:`harness.interfaces.FailureClass`: name, label, order, colour) and names its
reader (``SuitePlugin.failures``, a :class:`harness.interfaces.FailureRules`) that
returns them.

Rules, applied in this order; the first that holds names the class:

1. ``success`` - the episode succeeded.
2. ``error`` - a harness error record (env/agent/worker fault, timeout).
3. ``empty_plan`` - the agent returned an empty plan (the episode ended there).
4. ``output_format`` - unusable model output: ``planner_output_errors`` > 0 and
   at least half of the episode's invalid actions were unusable outputs.
   ``time_limit`` - the env's protocol ended the episode on its wall-clock limit
   (termination ``episode_timeout``, :data:`harness.types.TERMINATION_EPISODE_TIMEOUT`).
5. the suite's reader (:meth:`FailureRules.classify`), when the suite names one:
   one of its declared classes, or None.
6. ``out_of_steps`` - the step limit ended the episode while goal conditions
   were met (a suite's reader may say so on its own evidence too).
7. ``other`` - a failure none of the rules above explains; ``no_history`` when
   the record holds no action history either (numeric actions, old stores).

A class the suite does not declare is still counted by the table (never dropped),
shown as undeclared; ``check_suite`` refuses a suite that produces one.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from harness.interfaces import FailedEpisode, FailureClass, FailureRules
from harness.registry.catalog import SUITES
from harness.registry.loader import UnknownPluginError, load_target
from harness.types import TERMINATION_EPISODE_TIMEOUT

#: The core's classes: what any suite's episodes can end as.
GENERIC_CLASSES: tuple[FailureClass, ...] = (
    FailureClass("success", "succeeded", 0, "#3ca951"),
    FailureClass("error", "harness error record (agent/env fault or timeout)", 10, "#1b1b1b"),
    FailureClass("empty_plan", "the agent returned an empty plan", 20, "#bcbd22"),
    FailureClass("output_format", "unusable model output (format errors)", 30, "#ff8ab7"),
    FailureClass("time_limit", "the protocol's wall-clock limit ended the episode", 40, "#8c564b"),
    FailureClass("out_of_steps", "ran out of steps while progressing", 800, "#6cc5b0"),
    FailureClass("other", "failed for a reason no rule explains", 900, "#9498a0"),
    FailureClass("no_history", "failed; no action history stored to classify it", 950, "#c9ccd1"),
)
GENERIC: dict[str, FailureClass] = {c.name: c for c in GENERIC_CLASSES}
#: Where an undeclared class sorts (after every declared one).
UNDECLARED_ORDER = 10_000


def undeclared(name: str) -> FailureClass:
    """The stand-in declaration of a class no suite declares: counted, shown last, grey-blue
    shades fixed by its name."""
    digest = hashlib.sha256(name.encode()).digest()
    colour = "#%02x%02x%02x" % (0x50 + digest[0] % 0x40, 0x50 + digest[1] % 0x40, 0x90 + digest[2] % 0x40)
    return FailureClass(name, "a class the suite does not declare (check_suite refuses it)", UNDECLARED_ORDER, colour)


def _suite_plugin(suite: str) -> Any:

    try:
        return SUITES.entry(str(suite))
    except UnknownPluginError:
        return None


@lru_cache(maxsize=None)
def declared_classes(suite: str) -> tuple[FailureClass, ...]:
    """The generic classes and the ones ``suite``'s plugin declares, in table order (a suite
    not registered here: the generic ones)."""
    plugin = _suite_plugin(suite)
    return sort_classes(list(GENERIC_CLASSES) + list(getattr(plugin, "failure_classes", ()) or ()))


def declaration_problem(classes: Sequence[Any]) -> str | None:
    """Why a suite's ``failure_classes`` is not a valid declaration (one line), else None."""
    seen: set[str] = set()
    for c in classes:
        if not isinstance(c, FailureClass):
            return f"failure_classes must hold harness.interfaces.FailureClass, got {type(c).__name__}"
        if not c.name.replace("_", "").isalnum() or c.name != c.name.lower() or not c.name[0].isalpha():
            return f"failure class name {c.name!r} must be lower_snake_case"
        if c.name in GENERIC:
            return f"failure class {c.name!r} is one of the core's generic classes; do not declare it again"
        if c.name in seen:
            return f"failure class {c.name!r} is declared twice"
        seen.add(c.name)
    return None


def sort_classes(classes: Iterable[FailureClass]) -> tuple[FailureClass, ...]:
    by_name: dict[str, FailureClass] = {}
    for c in classes:
        by_name.setdefault(c.name, c)
    return tuple(sorted(by_name.values(), key=lambda c: (c.order, c.name)))


def classes_of(suites: Iterable[str], seen: Iterable[str] = ()) -> tuple[FailureClass, ...]:
    """The declared classes of ``suites`` (generic ones included) in table order, then every
    class in ``seen`` none of them declares (counted, never dropped)."""
    declared = sort_classes(c for s in dict.fromkeys(map(str, suites)) for c in declared_classes(s))
    names = {c.name for c in declared}
    extra = sorted({str(n) for n in seen} - names)
    return declared + tuple(undeclared(n) for n in extra)


@lru_cache(maxsize=None)
def rules_for(suite: str) -> FailureRules | None:
    """The failure reader a suite's plugin names (``SuitePlugin.failures``: an instance, a
    class or a factory taking no argument); None: none, or a suite not registered here (its
    episodes get the generic classes)."""
    plugin = _suite_plugin(suite)
    target = getattr(plugin, "failures", None)
    return reader_of(load_target(plugin, "suite", target), str(suite)) if target else None


def reader_of(obj: Any, suite: str = "?") -> FailureRules:
    """The reader ``obj`` names: itself when it has ``classify``, else what calling it (a class,
    a factory) makes. Raises ValueError (one line) when neither is a reader."""
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "classify")):
        obj = obj()
    if not callable(getattr(obj, "classify", None)):
        raise ValueError(f"suite {suite}: its failure reader {type(obj).__name__} has no classify(episode) "
                         "(harness.interfaces.FailureRules)")
    return obj


def _missing(value: Any) -> bool:
    """True for an absent field: None, '', or a missing value as pandas reads it
    back from the store (NaN / pd.NA / NaT; ``bool(nan)`` is True, so a plain
    truth test would take every missing ``error_kind`` for an error)."""
    if value is None:
        return True
    if isinstance(value, str):
        return value == ""
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict)) else False
    except (TypeError, ValueError, ImportError):
        return False


def _int(value: Any) -> int:
    return 0 if _missing(value) else int(value)


def classify(record: Mapping[str, Any], task: Mapping[str, Any] | None = None,
             rules: FailureRules | None = None) -> str:
    """The failure class of one episode record (a dict or EpisodeRecord-like mapping).

    ``task``: the episode's task facts when the record's ``extra`` has none (old
    stores); ``extra["task"]`` wins when present. ``rules``: the suite's failure
    reader; None: the one the record's suite registers (:func:`rules_for`).
    """
    get = record.get if isinstance(record, Mapping) else lambda k, d=None: getattr(record, k, d)
    success, error_kind, empty = get("success", False), get("error_kind"), get("empty_plan", False)
    if not _missing(success) and bool(success):
        return "success"
    if not _missing(error_kind):
        return "error"
    if (not _missing(empty) and bool(empty)) or get("termination") == "empty_plan":
        return "empty_plan"
    invalid = _int(get("invalid_actions", 0))
    output_errors = _int(get("planner_output_errors", 0))
    if output_errors > 0 and 2 * output_errors >= invalid:
        return "output_format"
    extra = get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    history = extra.get("history") or []
    termination = None if _missing(get("termination")) else str(get("termination"))
    if termination == TERMINATION_EPISODE_TIMEOUT:
        return "time_limit"
    gc_met = _int(get("gc_satisfied", 0)) > 0
    if rules is None:
        suite = get("suite")
        rules = None if _missing(suite) else rules_for(str(suite))
    if rules is not None:
        episode = FailedEpisode(
            suite="" if _missing(get("suite")) else str(get("suite")), history=history,
            task=extra.get("task") or task, task_type="" if _missing(get("task_type")) else str(get("task_type")),
            termination=termination, invalid_actions=invalid, planner_output_errors=output_errors,
            gc_satisfied=_int(get("gc_satisfied", 0)), gc_total=_int(get("gc_total", 0)), extra=extra)
        verdict = rules.classify(episode)
        if verdict is not None:
            return str(verdict)
    if termination == "max_steps" and gc_met:
        return "out_of_steps"
    return "other" if history else "no_history"


def task_of(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    extra = record.get("extra") or {}
    return extra.get("task") if isinstance(extra, Mapping) else None


def tasks_from_suites(store: Any, frame: Any) -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
    """Task facts of episodes whose records carry none (stores written before
    ``extra["task"]``), re-derived from each run's suite and its stored params
    through the suite's failure reader (:meth:`FailureRules.task_of`).

    Keyed by (run_id, suite, split, episode_id). A suite that cannot be built
    here (missing data, unknown name) contributes nothing: those episodes are
    classified without task rules.
    """
    import json

    out: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    if frame is None or len(frame) == 0:
        return out
    missing = frame[[task_of(r) is None for r in frame.to_dict("records")]]
    if missing.empty:
        return out
    runs = store.runs().set_index("run_id")
    built: dict[str, Any] = {}
    for run_id, group in missing.groupby("run_id"):
        if run_id not in runs.index:
            continue
        spec = json.loads(runs.loc[run_id, "spec"])
        rules = rules_for(str(spec.get("suite")))
        if rules is None:  # no task rules to feed
            continue
        key = json.dumps([spec.get("suite"), spec.get("suite_params") or {}], sort_keys=True)
        try:
            suite = built.get(key) or SUITES.build(spec["suite"], **dict(spec.get("suite_params") or {}))
            built[key] = suite
            by_id = {e.episode_id: e for e in suite.episodes(spec["split"])}
        except Exception:  # noqa: BLE001 - best effort for old stores
            continue
        for r in group.itertuples():
            e = by_id.get(r.episode_id)
            params = rules.task_of(e.metadata) if e is not None else None
            if params:
                out[(run_id, r.suite, r.split, r.episode_id)] = params
    return out


def classify_frame(frame: Any, tasks: Mapping[tuple[str, str, str, str], Mapping[str, Any]] | None = None) -> list[str]:
    """The failure class of every row of a store frame (``ResultStore.frame()``)."""
    tasks = tasks or {}
    return [
        classify(r, tasks.get((r["run_id"], r["suite"], r["split"], r["episode_id"])))
        for r in frame.to_dict("records")
    ]
