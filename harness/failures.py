"""Failure taxonomy: one class per finished episode, from its stored record only.

Used by ``harness table --by failure`` and the report's failure chart. It reads
the record's fields (success, error_kind, termination, empty_plan,
invalid_actions, planner_output_errors, gc_satisfied, task_type), the
text-action history in ``extra["history"]`` (``[[action, feedback], ...]``) and
the task's ALFRED ``pddl_params`` in ``extra["task"]`` (written by the runner
from the episode's metadata; for stores written before that, the caller may
pass the params re-derived from the suite: see :func:`tasks_from_suites`).
Nothing is re-run.

Two action languages are read. EB-ALFRED's skill language (``find a X``,
``pick up the X``, ``put down the object in hand``, ``drop the object in
hand``, ``open/close the X``, ``turn on/off the X``, ``slice the X``): an action
is *successful* unless its feedback starts with EB-ALFRED's ``"Last action is
invalid."`` (EmbodiedBench ``EBAlfEnv.get_env_feedback``); an object type is
absent when a ``find`` is answered "... may not exist in this scene". The
``alfred`` suite's low-level steps (``GotoLocation X [hint]``, ``PickupObject
X``, ``PutObject R``, ``OpenObject`` / ``CloseObject X``, ``ToggleObjectOn`` /
``ToggleObjectOff X``, ``SliceObject X``): successful when the feedback is
``"Done."``; ``GotoLocation`` is the ``find``, ``PutObject R`` puts down at R,
and "No X can be found in this scene." marks X absent. Object names compare by type:
an instance suffix (``Cabinet_8``) is dropped, a ``Basin`` suffix too
(``find a Sink`` reaches the ``SinkBasin``), case is ignored.

Rules, applied in this order; the first that holds names the class:

1. ``success`` - the episode succeeded.
2. ``error`` - a harness error record (env/agent/worker fault, timeout).
3. ``empty_plan`` - the agent returned an empty plan (the episode ended there).
4. ``output_format`` - unusable model output: ``planner_output_errors`` > 0 and
   at least half of the episode's invalid actions were unusable outputs.
5. ``hallucinated_object`` - at least half of the invalid environment actions
   (and at least one) named an object absent from the scene. An object type is
   absent once an action on it was answered that the scene has none (above);
   every action naming that type (before or after) counts.
6. ``target_not_found`` - the task's target object (``object_target``) was never
   reached: no successful action names its type.
7. ``target_not_picked`` - the target was reached (a successful ``find`` /
   ``open`` naming it) but never picked up.
8. ``skipped_step`` - the target (or, for movable-receptacle tasks, the
   movable receptacle) was put down at the task's receptacle without the
   required step done before: clean (target put down at a Sink, then the
   Faucet turned on), heat (put down at a Microwave, then the Microwave turned
   on), cool (put down at a Fridge), slice (a successful ``slice the X``);
   for ``look_at_obj_in_light``: the lamp never turned on while holding the
   target (judged at the end of the episode).
9. ``wrong_receptacle`` - the target (or the movable receptacle) was put down,
   but never at the task's receptacle (``parent_target``) nor at a place the
   task needs on the way (a Sink / Microwave / Fridge for clean / heat / cool,
   the movable receptacle).
10. ``out_of_steps`` - the step limit ended the episode while it was
    progressing: the target had been picked up, or goal conditions were met.
11. ``other`` - a failure none of the rules above explains.

Without a history (schema-1 stores, suites with numeric actions) only rules
1-4 and a termination-based 10 (``max_steps`` with goal conditions met) can
apply; the rest is ``no_history``. Without the task's params (an old store and
no suite to re-derive them) rules 6-9 are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

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

#: EmbodiedBench ``EBAlfEnv.get_env_feedback``: the prefix of an invalid action's feedback.
INVALID_PREFIX = "Last action is invalid."
#: Feedback for an object type the scene does not hold: EB-ALFRED's ``find``
#: ("Cannot find X. This object may not exist in this scene. ..."), the alfred
#: suite's ("No X can be found in this scene.").
_ABSENT = re.compile(r"may not exist in this scene|can be found in this scene")
#: The alfred suite's feedback on a successful step (and on its stop action).
_ALFRED_OK = ("Done.", "Stopped.", "")
_ALFRED_ACTION = re.compile(
    r"^\s*(GotoLocation|PickupObject|PutObject|OpenObject|CloseObject|ToggleObjectOn|ToggleObjectOff|SliceObject)"
    r"\s+([A-Za-z]+)(?:\s+[A-Za-z]+)?\s*$")
_ALFRED_VERBS = {"GotoLocation": "find", "PickupObject": "pick", "PutObject": "put", "OpenObject": "open",
                 "CloseObject": "close", "ToggleObjectOn": "on", "ToggleObjectOff": "off", "SliceObject": "slice"}

_ACTION = re.compile(
    r"^\s*(?P<verb>find (?:a|an)|pick up the|open the|close the|turn on the|turn off the|slice the)\s+(?P<obj>\S+)\s*$"
    r"|^\s*(?P<put>put down the object in hand|drop the object in hand)\s*$",
    re.I,
)
#: Task families (ALFRED task_type) and the step they require before placing.
_REQUIRED_STEP = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
}
#: Where each step puts the object (ALFRED's clean/heat/cool wrapper rules).
_STEP_PLACE = {"clean": "sink", "heat": "microwave", "cool": "fridge"}
_STEP_TOGGLE = {"clean": "faucet", "heat": "microwave"}


def obj_type(name: str) -> str:
    """``Cabinet_8`` -> ``cabinet``; ``SinkBasin`` -> ``sink``; ``AppleSliced`` -> ``apple``."""
    base = name.split("_", 1)[0].strip().casefold()
    for suffix in ("basin", "sliced"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    return base


@dataclass(frozen=True)
class _Step:
    verb: str  # find, pick, put, open, close, on, off, slice, other
    obj: str | None  # object type (normalised) or None; for alfred's put: the receptacle
    ok: bool
    absent: bool  # feedback says the object does not exist in the scene


_VERBS = {"find a": "find", "find an": "find", "pick up the": "pick", "open the": "open", "close the": "close",
          "turn on the": "on", "turn off the": "off", "slice the": "slice"}


def _parse(history: Sequence[Sequence[Any]]) -> list[_Step]:
    steps = []
    for item in history:
        action, feedback = (str(item[0]), str(item[1] if len(item) > 1 else ""))
        absent = bool(_ABSENT.search(feedback))
        low = _ALFRED_ACTION.match(action)
        if low is not None:
            steps.append(_Step(_ALFRED_VERBS[low.group(1)], obj_type(low.group(2)),
                               feedback.strip() in _ALFRED_OK, absent))
            continue
        ok = not feedback.startswith(INVALID_PREFIX)
        m = _ACTION.match(action)
        if m is None:
            steps.append(_Step("other", None, ok, False))
        elif m.group("put"):
            steps.append(_Step("put", None, ok, False))
        else:
            verb = _VERBS[" ".join(m.group("verb").casefold().split())]
            steps.append(_Step(verb, obj_type(m.group("obj")), ok, absent))
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


def classify(record: Mapping[str, Any], task: Mapping[str, Any] | None = None) -> str:
    """The failure class of one episode record (a dict or EpisodeRecord-like mapping).

    ``task``: the episode's ALFRED pddl params when the record's ``extra`` has
    none (old stores); ``extra["task"]`` wins when present.
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
    steps = _parse(history)

    absent = {s.obj for s in steps if not s.ok and s.absent}
    env_invalid = [s for s in steps if not s.ok]
    hallucinated = sum(1 for s in env_invalid if s.obj in absent)
    if hallucinated and 2 * hallucinated >= len(env_invalid):
        return "hallucinated_object"

    task = (extra.get("task") if isinstance(extra, Mapping) else None) or task
    task_type = "" if _missing(get("task_type")) else str(get("task_type"))
    picked_target = False
    if task:
        target = obj_type(str(task.get("object_target") or ""))
        parent = obj_type(str(task.get("parent_target") or ""))
        mrecep = obj_type(str(task.get("mrecep_target") or ""))
        toggle = obj_type(str(task.get("toggle_target") or ""))
        sliced = bool(task.get("object_sliced"))
        verdict = _task_rules(steps, task_type, target, parent, mrecep, toggle, sliced)
        if verdict is not None:
            return verdict
        picked_target = any(s.ok and s.verb == "pick" and s.obj == target for s in steps)
    else:
        picked_target = any(s.ok and s.verb == "pick" for s in steps)
    if termination == "max_steps" and (picked_target or gc_met):
        return "out_of_steps"
    return "other"


def _task_rules(steps: list[_Step], task_type: str, target: str, parent: str, mrecep: str,
                toggle: str, sliced: bool) -> str | None:
    """Rules 6-9 for one parsed history (None: none of them applies)."""
    if not target:
        return None
    if not any(s.ok and s.obj == target for s in steps):
        return "target_not_found"
    if not any(s.ok and s.verb == "pick" and s.obj == target for s in steps):
        return "target_not_picked"

    # Walk the history: what is held, where the agent stands, which steps are done.
    carried = {target, mrecep} - {""}
    holding: str | None = None
    at: str | None = None
    done = {"clean": False, "heat": False, "cool": False, "slice": False}
    placed_at: list[tuple[str, str | None, bool]] = []  # (object, place, required step done then)
    in_place: dict[str, str | None] = {}  # object type -> where it was last put down
    lamp_on_holding = False
    required = _REQUIRED_STEP.get(task_type)
    for s in steps:
        if not s.ok:
            continue
        if s.verb == "find":
            at = s.obj
        elif s.verb == "pick":
            holding = s.obj
            in_place.pop(s.obj or "", None)
        elif s.verb == "slice" and s.obj == target:
            done["slice"] = True
        elif s.verb == "put":
            if s.obj is not None:  # alfred's PutObject names the receptacle
                at = s.obj
            if holding is not None:
                ready = (required is None or done[required]) and (not sliced or done["slice"])
                if holding in carried:
                    placed_at.append((holding, at, ready))
                in_place[holding] = at
            holding = None
        elif s.verb == "on":
            # clean: the target in a sink, then the faucet on; heat: in the microwave, then it on.
            for step, place in _STEP_PLACE.items():
                if _STEP_TOGGLE.get(step) == s.obj and in_place.get(target) == place:
                    done[step] = True
            if toggle and s.obj == toggle and holding == target:
                lamp_on_holding = True
        if in_place.get(target) == "fridge":
            done["cool"] = True
    if task_type == "look_at_obj_in_light":
        return "skipped_step" if not lamp_on_holding else None
    final = mrecep if mrecep else target
    at_parent = [p for p in placed_at if p[0] == final and p[1] == parent]
    if parent and at_parent and not any(ready for _, _, ready in at_parent):
        return "skipped_step"
    if parent and not at_parent:
        allowed = {parent, mrecep} | ({_STEP_PLACE[required]} if required else set())
        if any(obj == final and place not in allowed for obj, place, _ in placed_at):
            return "wrong_receptacle"
        if mrecep and any(obj == target and place not in allowed for obj, place, _ in placed_at):
            return "wrong_receptacle"
    return None


def task_of(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    extra = record.get("extra") or {}
    return extra.get("task") if isinstance(extra, Mapping) else None


def tasks_from_suites(store: Any, frame: Any) -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
    """pddl params of episodes whose records carry none (stores written before
    ``extra["task"]``), re-derived from each run's suite and its stored params.

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
        key = json.dumps([spec.get("suite"), spec.get("suite_params") or {}], sort_keys=True)
        try:
            suite = built.get(key) or SUITES.build(spec["suite"], **dict(spec.get("suite_params") or {}))
            built[key] = suite
            by_id = {e.episode_id: e for e in suite.episodes(spec["split"])}
        except Exception:  # noqa: BLE001 - best effort for old stores
            continue
        for r in group.itertuples():
            e = by_id.get(r.episode_id)
            params = e.metadata.get("pddl_params") if e is not None else None
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
