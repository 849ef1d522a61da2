"""An episode's record: what one episode in flight holds (:class:`LiveEpisode`), and the
:class:`EpisodeRecord` made of it when it ends, with its transcript entries, its kept
actions and values, its task facts and breakdowns, and its error's description."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from harness.interfaces import AgentReply
from harness.registry.catalog import SUITES
from harness.run import record_checks
from harness.run.artifacts import FrameStore
from harness.scoring.failures import rules_for
from harness.stats.sequential import ORDER_KEY as SEQUENTIAL_ORDER_KEY
from harness.types import (
    INFO_ANSWER,
    INFO_ARTIFACTS,
    INFO_EXPERT_LENGTH,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_PATH_LENGTH,
    INFO_SUCCESS,
    INFO_TASK_TYPE,
    INFO_TERMINATION,
    INFO_VALUES,
    TERMINATION_EMPTY_PLAN,
    EpisodeRecord,
    EpisodeSpec,
    RunSpec,
)
from harness.util.spool import spool
from harness.values import ValueState, read_value

#: Longest step history kept in a record's ``extra["history"]`` (ALFRED allows 1000 steps).
_MAX_KEPT_HISTORY = 1000


@dataclass(slots=True)
class LiveEpisode:
    """One episode in flight: its attempt, its clock, and what its record will say."""

    spec: EpisodeSpec
    attempts: int = 1
    started: float = 0.0
    deadline: float | None = None
    steps: int = 0
    agent_calls: int = 0
    observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    history: list[tuple[Any, str]] = field(default_factory=list)
    output_errors: int = 0
    #: Plans of the agent's fallback actions (an output error that still brought actions).
    fallback_plans: int = 0
    transcript: list[dict[str, Any]] = field(default_factory=list)
    #: The agent's reset is still due (pipelined runner: it runs on the call's thread).
    needs_reset: bool = False



class RecordMaker:
    """Makes the records (and transcript entries) of one run's episodes.

    ``store_dir`` is the store's folder: artifact paths in records are relative to it (see
    :meth:`artifact_paths`); ``frames`` keeps the frames each agent call saw
    (harness/run/artifacts.py); ``order`` is each episode's position in its split, kept in
    its record (``stopping=sequential`` only).
    """

    def __init__(self, run_id: str, spec: RunSpec, *, store_dir: Path | None = None,
                 frames: FrameStore | None = None, order: dict[tuple, int] | None = None):
        self.run_id, self.spec = run_id, spec
        self.store_dir, self.frames, self.order = store_dir, frames, order

    def transcript_entry(self, live: LiveEpisode, reply: AgentReply,
                         call_cost: tuple[float, int]) -> dict[str, Any]:
        """A reply's transcript entry; ``call_cost``: the call's (wall time, batch size)."""
        entry: dict[str, Any] = {
            "call": live.agent_calls - 1,
            "step": live.steps,
            "raw_output": reply.raw_output,
            "output_error": reply.output_error,
            "actions": len(reply.actions),
        }
        if self.spec.record_prompts and reply.prompt is not None:
            entry["prompt"] = reply.prompt
        # Cost: the batched call's wall time (shared by its `batch` episodes) and, where the
        # backend counted them, the tokens (planners/vlm/backends.py: a str with .usage).
        entry["latency_s"], entry["batch"] = round(call_cost[0], 4), call_cost[1]
        usage = getattr(reply.raw_output, "usage", None)
        if isinstance(usage, Mapping):
            entry.update({k: int(v) for k, v in usage.items() if k in ("prompt_tokens", "output_tokens")})
        if getattr(reply.raw_output, "output_truncated", False) is True:
            # The backend kept only a prefix of the model's reply (openai: max_reply_chars).
            entry["output_truncated"] = True
        if self.frames is not None and self.frames.enabled:
            images = self.frames.save_observation(live.observation)
            if images:
                entry["images"] = images
        # A long reply waits on disk until the episode is stored (harness/util/spool.py): a live
        # episode holds at most SPOOL_CHARS characters per call, whatever the model answers.
        entry["raw_output"] = spool(entry["raw_output"])
        if "prompt" in entry:
            entry["prompt"] = spool(entry["prompt"])
        return entry

    def artifact_paths(self, artifacts: Mapping[str, Any]) -> dict[str, Any]:
        """An env's artifact paths as the record keeps them: relative to the store's folder
        (POSIX separators) when the file lies inside it, so the store and its files move
        together and a report finds them whatever the working directory was; other paths
        (outside the store, or no store) stay as the env gave them, made absolute."""
        out: dict[str, Any] = {}
        for name, value in artifacts.items():
            if not isinstance(value, (str, Path)):
                out[name] = value
                continue
            path = Path(value)
            if not path.is_absolute():  # relative to this process's working directory
                path = Path.cwd() / path
            path = path.resolve()
            if self.store_dir is not None and path.is_relative_to(self.store_dir):
                out[name] = path.relative_to(self.store_dir).as_posix()
            else:
                out[name] = str(path)
        return out

    def record(self, live: LiveEpisode, *, termination: str | None = None,
               error: tuple[str, str] | None = None) -> EpisodeRecord:
        """The ended episode's record, checked against what its suite declares."""
        info = live.info or {}
        spec = live.spec
        gc_total = info.get(INFO_GC_TOTAL)
        if gc_total is None:  # e.g. an error at reset: the task's count, where the suite knows it
            gc_total = spec.metadata.get("gc_total", 0)
        extra: dict[str, Any] = {}
        history = live.history
        if history and len(history) <= _MAX_KEPT_HISTORY and all(
                type(a) is str or type(a) is int for a, _ in history):
            # Text actions (skills, ids) and their feedback: the evidence failure
            # analyses and episode browsers read. Numeric action chunks are not kept.
            extra["history"] = [[a, f] for a, f in history]
        elif history and len(history) <= _MAX_KEPT_HISTORY:
            actions = rounded_actions(a for a, _ in history)
            if actions is not None:  # a policy's continuous actions, per step, for the episode browser
                extra["actions"] = actions
        if info.get(INFO_ARTIFACTS):
            extra["artifacts"] = self.artifact_paths(info[INFO_ARTIFACTS])
        task = task_facts(spec)  # the suite's own reader of its task facts, for failure analysis
        if task:
            extra["task"] = task
        if spec.instruction:  # shown by the report's episode browser
            extra["instruction"] = spec.instruction
        if self.order is not None and spec.key in self.order:
            extra[SEQUENTIAL_ORDER_KEY] = self.order[spec.key]
        cut = sum(1 for t in live.transcript if t.get("output_truncated"))
        if cut:  # replies the backend kept only a prefix of (their transcript entries say which)
            extra["outputs_truncated"] = cut
        if live.fallback_plans:  # plans of fallback actions (also counted in planner_output_errors)
            extra["fallback_plans"] = live.fallback_plans
        if info.get(INFO_ANSWER) is not None:  # a one-step episode's answer text
            extra["answer"] = str(info[INFO_ANSWER])
        breakdown = breakdown_of(spec)  # the suite's further --by fields (SuitePlugin.breakdowns)
        if breakdown:
            extra["breakdown"] = breakdown
        values, undelivered = episode_values(info.get(INFO_VALUES))
        record = EpisodeRecord(
            run_id=self.run_id,
            variant=self.spec.variant,
            suite=spec.suite,
            split=spec.split,
            episode_id=spec.episode_id,
            seed=spec.seed,
            task_type=info.get(INFO_TASK_TYPE) or spec.metadata.get("task_type"),
            success=bool(info.get(INFO_SUCCESS, False)) and error is None,
            gc_satisfied=int(info.get(INFO_GC_SATISFIED, 0) or 0),
            gc_total=int(gc_total or 0),
            steps=live.steps,
            agent_calls=live.agent_calls,
            invalid_actions=int(info.get(INFO_INVALID_ACTIONS, 0) or 0),
            expert_length=info.get(INFO_EXPERT_LENGTH),
            wall_time_s=round(time.monotonic() - live.started, 6) if live.started else 0.0,
            termination=termination or info.get(INFO_TERMINATION),
            error_kind=error[0] if error else None,
            error_message=error[1] if error else None,
            attempts=live.attempts,
            planner_output_errors=live.output_errors,
            empty_plan=termination == TERMINATION_EMPTY_PLAN,
            path_length=None if info.get(INFO_PATH_LENGTH) is None else int(info[INFO_PATH_LENGTH]),
            extra=extra,
            values=values,
        )
        if error is None:  # what the suite declares, enforced where the record is made
            problems, keys = record_checks.problems_of(record, undelivered)
            if problems:
                record = record_checks.as_error(record, problems, keys)
        return record


def describe(exc: BaseException) -> str:
    """An exception as an error record's message."""
    return f"{type(exc).__name__}: {exc}"


#: Decimals the executed continuous actions keep in a record (``extra["actions"]``).
ACTION_DECIMALS = 3


def episode_values(values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``info["values"]`` as a record keeps it -- names to JSON numbers or None -- and the values
    the env did not deliver, each name to what the env gave (both read by the one rule,
    :func:`harness.values.read_value`): a value not delivered (NaN, an infinity, text) is kept
    as None, and where a declared metric reads it :func:`harness.run.record_checks.problems_of`
    makes the episode an error record naming it."""
    if not isinstance(values, Mapping):
        return {}, {}
    out: dict[str, Any] = {}
    undelivered: dict[str, Any] = {}
    for name, x in values.items():
        state, f = read_value(x)
        if state is not ValueState.VALUE:  # None, or not delivered: no number stored
            out[str(name)] = None
            if state is not ValueState.MISSING:
                undelivered[str(name)] = x
        elif isinstance(x, bool):
            out[str(name)] = int(x)
        else:
            out[str(name)] = int(f) if f.is_integer() and isinstance(x, int) else f
    return out, undelivered


def rounded_actions(actions: Iterator[Any]) -> list[list[float]] | None:
    """Each executed action as a flat list of numbers rounded to :data:`ACTION_DECIMALS`
    (a policy's 7-D end-effector delta and gripper, say): compact evidence for the episode
    browser; None when an action is not a finite numeric vector."""
    out = []
    for action in actions:
        try:
            arr = np.asarray(action, dtype=float).ravel()
        except (TypeError, ValueError):
            return None
        if not arr.size or not np.isfinite(arr).all():
            return None
        out.append([round(float(x), ACTION_DECIMALS) + 0.0 for x in arr])
    return out


def output_tokens(plans: Any) -> int | None:
    """The output tokens a call's replies report (``raw_output.usage``, as model backends
    give them), summed; None when no reply reports any."""
    total = None
    for plan in plans if isinstance(plans, (list, tuple)) else ():
        usage = getattr(getattr(plan, "raw_output", None), "usage", None) if isinstance(plan, AgentReply) else None
        if isinstance(usage, Mapping) and usage.get("output_tokens") is not None:
            total = (total or 0) + int(usage["output_tokens"])
    return total

def breakdown_of(spec: EpisodeSpec) -> dict[str, str] | None:
    """The values of the breakdowns the episode's suite declares (``SuitePlugin.breakdowns``),
    read from its metadata; None: it declares none (or is not registered here)."""
    names = _breakdowns_declared(str(spec.suite))
    out = {n: str(spec.metadata[n]) for n in names if spec.metadata.get(n) is not None}
    return out or None


@functools.lru_cache(maxsize=None)
def _breakdowns_declared(suite: str) -> tuple[str, ...]:
    try:
        return tuple(getattr(SUITES.entry(suite), "breakdowns", ()) or ())
    except Exception:  # noqa: BLE001 - a suite not registered here declares none
        return ()


def task_facts(spec: EpisodeSpec) -> dict[str, Any] | None:
    """The episode's task facts as its suite's failure reader reads them from its metadata
    (:meth:`harness.interfaces.FailureRules.task_of`); None: the suite has no reader, or it
    reads none. A reader that fails gives none (the record is still written)."""
    try:
        rules = rules_for(str(spec.suite))
        reader = getattr(rules, "task_of", None)
        task = reader(spec.metadata) if reader is not None else None
        return dict(task) if task else None
    except Exception:  # noqa: BLE001 - evidence for failure analysis only; never lose the record
        return None

