"""Failure taxonomy: one class per finished episode, from its stored record only.

Used by ``harness table --by failure`` and the report's failure chart. It reads
the record's fields (success, error_kind, termination, empty_plan,
invalid_actions, planner_output_errors, gc_satisfied, task_type), the
text-action history in ``extra["history"]`` (``[[action, feedback], ...]``) and
the task's facts in ``extra["task"]`` (written by the runner from the episode's
metadata; for stores written before that, the caller may pass the facts
re-derived from the suite: see :func:`tasks_from_suites`). Nothing is re-run.

The core knows no action language. A suite that has one names its reader on its
plugin (``SuitePlugin.failures``, a :class:`harness.interfaces.FailureRules`): how an
action's success shows in its feedback, which object it names, which feedback says
the object is absent, and the suite's task rules. Suites without one get only the
generic classes.

Rules, applied in this order; the first that holds names the class:

1. ``success`` - the episode succeeded.
2. ``error`` - a harness error record (env/agent/worker fault, timeout).
3. ``empty_plan`` - the agent returned an empty plan (the episode ended there).
4. ``output_format`` - unusable model output: ``planner_output_errors`` > 0 and
   at least half of the episode's invalid actions were unusable outputs.
5. ``hallucinated_object`` - at least half of the invalid environment actions
   (and at least one) named an object absent from the scene. An object type is
   absent once an action on it was answered that the scene has none; every
   action naming that type (before or after) counts. Needs the suite's reader.
6-9. the suite's task rules (:meth:`FailureRules.task_failure`), when the task's
   facts are known: ``target_not_found``, ``target_not_picked``, ``skipped_step``,
   ``wrong_receptacle`` for suites whose tasks put a target object somewhere.
10. ``out_of_steps`` - the step limit ended the episode while it was
    progressing: the task's target had been picked up (any pick, without the
    task's facts), or goal conditions were met.
11. ``other`` - a failure none of the rules above explains.

Without a history (schema-1 stores, suites with numeric actions) only rules
1-4 and a termination-based 10 (``max_steps`` with goal conditions met) can
apply; the rest is ``no_history``. Without the task's facts (an old store and
no suite to re-derive them) rules 6-9 are skipped.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from harness.interfaces import FailureRules, HistoryStep

#: Failure classes in rule order (the order tables and charts use).
FAILURE_CLASSES: tuple[str, ...] = (
    "success", "error", "empty_plan", "output_format", "hallucinated_object", "target_not_found",
    "target_not_picked", "skipped_step", "wrong_receptacle", "out_of_steps", "other", "no_history",
)
#: One-line descriptions (report legend, ``harness table --by failure`` footnote).
FAILURE_LABELS: dict[str, str] = {
    "success": "succeeded",
    "error": "harness error record (fault or timeout)",
    "empty_plan": "the agent returned an empty plan",
    "output_format": "unusable model output (format errors)",
    "hallucinated_object": "acted on objects absent from the scene",
    "target_not_found": "never found the target object",
    "target_not_picked": "found the target but never picked it up",
    "skipped_step": "skipped clean/heat/cool/slice/toggle before placing",
    "wrong_receptacle": "put the object down at the wrong receptacle",
    "out_of_steps": "ran out of steps while progressing",
    "other": "failed for a reason no rule explains",
    "no_history": "failed; no action history stored to classify it",
}

#: What a history step is when its suite has no failure reader.
_UNREAD = HistoryStep("other", None, True, False)


@lru_cache(maxsize=None)
def rules_for(suite: str) -> FailureRules | None:
    """The failure reader a suite's plugin names (``SuitePlugin.failures``); None: none,
    or a suite not registered here (its episodes get the generic classes)."""
    from harness.catalog import SUITES
    from harness.registry import UnknownPluginError, load_target

    try:
        plugin = SUITES.entry(str(suite))
    except UnknownPluginError:
        return None
    target = getattr(plugin, "failures", None)
    return load_target(plugin, "suite", target) if target else None


def read_history(history: Sequence[Sequence[Any]], rules: FailureRules | None) -> list[HistoryStep]:
    """The stored ``[[action, feedback], ...]`` as generic steps, read by the suite's rules."""
    steps = []
    for item in history:
        action, feedback = item[0], str(item[1] if len(item) > 1 else "")
        steps.append(rules.read(action, feedback) if rules is not None else _UNREAD)
    return steps


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
    history = extra.get("history") if isinstance(extra, Mapping) else None
    termination = get("termination")
    gc_met = _int(get("gc_satisfied", 0)) > 0
    if not history:
        if termination == "max_steps" and gc_met:
            return "out_of_steps"
        return "no_history"
    if rules is None:
        suite = get("suite")
        rules = None if _missing(suite) else rules_for(str(suite))
    steps = read_history(history, rules)

    absent = {s.obj for s in steps if not s.ok and s.absent}
    env_invalid = [s for s in steps if not s.ok]
    hallucinated = sum(1 for s in env_invalid if s.obj in absent)
    if hallucinated and 2 * hallucinated >= len(env_invalid):
        return "hallucinated_object"

    task = (extra.get("task") if isinstance(extra, Mapping) else None) or task
    task_type = "" if _missing(get("task_type")) else str(get("task_type"))
    if task and rules is not None:
        verdict = rules.task_failure(steps, task, task_type)
        if verdict is not None:
            return verdict
        target = rules.target(task)
        picked_target = any(s.ok and s.verb == "pick" and s.obj == target for s in steps)
    else:
        picked_target = any(s.ok and s.verb == "pick" for s in steps)
    if termination == "max_steps" and (picked_target or gc_met):
        return "out_of_steps"
    return "other"


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

    from harness.catalog import SUITES

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


def failure_table(frame: Any, classes: Iterable[str] | None = None) -> Any:
    """Variant rows x failure-class columns: % of each variant's episodes per
    suite/split group ("suite/split" column groups collapse to one table per
    variant and group), with the episode count."""
    df = frame.copy()
    df["failure"] = list(classes) if classes is not None else classify_frame(df)
    df["group"] = df["suite"].astype(str) + "/" + df["split"].astype(str)
    counts = df.groupby(["variant", "group", "failure"]).size().unstack("failure", fill_value=0)
    present = [c for c in FAILURE_CLASSES if c in counts.columns]
    counts = counts[present]
    n = counts.sum(axis=1)
    table = counts.div(n, axis=0).mul(100.0)
    table.insert(0, "n", n)
    return table


def failure_markdown(table: Any) -> str:
    cols = [c for c in table.columns if c != "n"]
    lines = ["| variant | suite/split | n | " + " | ".join(cols) + " |",
             "|:---|:---|---:|" + "---:|" * len(cols)]
    for (variant, group), row in table.iterrows():
        cells = [f"{row[c]:.1f}" for c in cols]
        lines.append(f"| {variant} | {group} | {int(row['n'])} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("% of each row's episodes per failure class (rules: harness/failures.py).")
    lines += [f"{c}: {FAILURE_LABELS[c]}" for c in cols]
    return "\n".join(lines) + "\n"


def failure_csv(table: Any) -> str:
    return table.reset_index().to_csv(index=False, float_format="%.2f")
