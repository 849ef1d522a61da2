"""The shared base of the suite and agent checkers (:class:`Checker`): runs its checks in a
temporary folder, turns what a plugin raised into a one-line :class:`ConformanceError`, and
runs episodes through the real runner into a fresh store to compare two runs' records and
transcripts. The checks themselves: :mod:`harness.check.shared_checks` (both),
:mod:`harness.check.suite_checks` and :mod:`harness.check.agent_checks`."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any, Mapping

from harness.check.diffs import CALL_TIMING, comparable, differs, short
from harness.check.invariants import EpisodeWatch
from harness.check.targets import AgentTarget, SuiteTarget
from harness.check.verdict import ConformanceError, Report
from harness.run.executors import SuiteEnvFactory, refuse_in_worker_start
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import INFO_PRIVILEGED, EpisodeSpec, RunSpec


class Skip(Exception):
    """A check (or part of one) this machine or this subject cannot run; the report says why."""


class Checker:
    """What every check reads and runs: the suite and agent targets, the episodes checked, the
    reference run, and the helpers that fail a check with one line."""

    #: Whose parameters the ``identity`` check varies ("suite" or "agent").
    whose = ""

    def __init__(self, suite: SuiteTarget, agent: AgentTarget, episodes: int, workdir: Any, subject: str,
                 examples: Mapping[str, Any] | None = None):
        if episodes < 1:
            raise ValueError("episodes must be >= 1")
        self.suite, self.agent, self.n, self.subject = suite, agent, int(episodes), subject
        #: Field name -> the other value the identity check tries (instead of the declared example).
        self.examples: dict[str, Any] = dict(examples or {})
        #: Actions the driving agent sent that the env judged valid (the probe's valid pool).
        self.valid_seen: list[Any] = []
        self.report = Report(subject)
        self._workdir = workdir
        self._base: tuple[dict, list] | None = None
        self._runs = 0

    def fail(self, check: str, message: str) -> ConformanceError:
        return ConformanceError(f"{self.subject}: {check}: {message}")

    def run(self, checks: list[str]) -> Report:
        """Each named check (the method ``check_<name>``) in turn; the first broken rule raises."""
        refuse_in_worker_start(f"check of {self.subject}")
        with tempfile.TemporaryDirectory(prefix="harness-check-", dir=self._workdir) as tmp:
            self.tmp = Path(tmp)
            for check in checks:
                try:
                    getattr(self, f"check_{check}")()
                except ConformanceError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the plugin raised: one line naming it
                    raise self.fail(check, f"raised {type(exc).__name__}: {first_line(exc)}") from exc
                self.report.passed.append(check)
        return self.report

    def make_agent(self, **override: Any) -> Any:
        return self.agent.build(**{**self.agent.values, **override})

    def episodes(self, suite: Any = None) -> list[EpisodeSpec]:
        return list((suite or self.suite.obj).episodes(self.suite.split)[: self.n])

    def spec(self, **kw: Any) -> RunSpec:
        return RunSpec(suite=self.suite.name, split=self.suite.split, agent=self.agent.name, variant="check",
                       agent_kind=self.agent.kind, suite_params=dict(self.suite.values),
                       agent_params=dict(self.agent.values), limit=self.n, **kw)

    def records(self, *, suite: Any = None, suite_values: Mapping[str, Any] | None = None, agent: Any = None,
                env_factory: Any = None, **kw: Any) -> tuple[dict, list, Any]:
        """One run into a fresh store: (records by key without timing, transcripts, summary)."""
        suite = suite if suite is not None else self.suite.obj
        values = dict(suite_values if suite_values is not None else self.suite.values)
        spec = dataclasses.replace(self.spec(**kw), suite_params=values)
        if env_factory is None and spec.executor == "process":
            if not self.suite.registered:
                raise Skip("the process executor needs a registered suite")
            env_factory = SuiteEnvFactory(self.suite.name, values)
        self._runs += 1
        with ResultStore(self.tmp / f"run{self._runs}") as store:
            summary = Runner(spec, suite, agent if agent is not None else self.make_agent(), store,
                             env_factory=env_factory, keep_records=True).run()
            records = {r.key: comparable(r) for r in store.records()}
            transcripts = sorted(({k: v for k, v in row.items() if k not in CALL_TIMING}
                                  for row in store.transcripts()),
                                 key=lambda r: (str(r.get("episode_id")), str(r.get("seed")), r.get("call", 0)))
        if len(records) != summary.total - summary.skipped:
            raise self.fail("runner", f"{summary.total} episodes selected but {len(records)} records stored")
        return records, transcripts, summary

    def base(self) -> tuple[dict, list]:
        """The reference run: lockstep, local executor."""
        if self._base is None:
            records, transcripts, _ = self.records(pipeline=False, batch_size=max(2, self.n))
            if not records:
                raise self.fail("runner", f"split {self.suite.split} has no episode to run")
            for key, row in records.items():
                if row["error_kind"] is not None:
                    raise self.fail("runner", f"episode {key[2]} {error_rule(self.suite.name, row)}")
            self._base = (records, transcripts)
        return self._base

    def same_records(self, check: str, what: str, got: tuple[dict, list], want: tuple[dict, list],
                     nested: bool = False) -> None:
        """The records and transcripts of two runs equal. ``nested``: one run's episodes may be
        a prefix of the other's (a parameter that sizes the split, checked on a split no longer
        than the episodes checked); those they share must be equal."""
        (records, transcripts), (ref, ref_t) = got, want
        if nested and records.keys() != ref.keys() and (records.keys() <= ref.keys() or ref.keys() <= records.keys()):
            shared = records.keys() & ref.keys()
            keep = lambda rows: [t for t in rows if any(  # noqa: E731
                (t.get("episode_id"), t.get("seed")) == (k[2], k[3]) for k in shared)]
            records, ref = {k: records[k] for k in shared}, {k: ref[k] for k in shared}
            transcripts, ref_t = keep(transcripts), keep(ref_t)
        if records.keys() != ref.keys():
            raise self.fail(check, f"{what}: other episodes ({sorted(records)[:3]} vs {sorted(ref)[:3]})")
        for key, row in ref.items():
            other = records[key]
            if row["error_kind"] is None and other.get("error_kind") is not None:
                raise self.fail(check, f"{what}: episode {key[2]} ended with an error ({other['error_kind']}): "
                                       f"{((other.get('error_message') or '').strip().splitlines() or [''])[-1]}")
            differ = [k for k in row if k not in ("run_id",) and differs(row[k], other.get(k)) is not None]
            if differ:
                k = differ[0]
                raise self.fail(check, f"{what}: episode {key[2]} differs in {k} "
                                       f"({short(other.get(k))} vs {short(row[k])})")
        if transcripts != ref_t:
            raise self.fail(check, f"{what}: the transcripts differ ({len(transcripts)} vs {len(ref_t)} rows)")

    def watch(self, env: Any, episode: EpisodeSpec) -> EpisodeWatch:
        return EpisodeWatch(env, episode.episode_id, bool(getattr(self.suite.obj, "success_at_stop", False)))

    def watched(self, check: str, problem: str | None, info: Any = None) -> None:
        """Fail ``check`` with the episode invariant broken (:mod:`harness.check.invariants`),
        or with ``info`` (of an episode reset with privileged=False) holding the privileged state."""
        if problem is not None:
            raise self.fail(check, problem)
        if isinstance(info, Mapping) and INFO_PRIVILEGED in info:
            raise self.fail(check, f"info holds {INFO_PRIVILEGED!r} although privileged=False")


def error_rule(suite: str, row: Mapping[str, Any]) -> str:
    """How an error record of a check's run breaks the contract, naming the rule: what the suite
    declares (the runner's record checks, :mod:`harness.run.record_checks`, whose messages name the
    suite), an env that raised, an action refused with an error, a time limit."""
    kind = row.get("error_kind")
    lines = (row.get("error_message") or "").strip().splitlines()
    if kind == "env" and lines and lines[0].startswith(f"suite {suite}: "):
        return f"ended in an env error record: what the suite declares is broken: {'; '.join(lines)}"
    rule = {"env": "the env raised (an invalid or unusable action is counted, not raised)",
            "agent": "the env refused an action with an error (a text action it cannot use is counted, "
                     "with action_ok=False)",
            "timeout": "ran past its wall-clock limit (an episode ends within its step limit)",
            "worker": "its worker process died"}.get(str(kind), f"ended in an {kind} error")
    return f"ended in an {kind} error: {rule}: {lines[-1] if lines else ''}"


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line, for a one-line verdict."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
