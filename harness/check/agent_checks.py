"""The agent's checker (:class:`AgentChecker`): the shared checks and the agent's own ``reset``
(one ``agent.reset()`` per attempt, a retry included) and ``draws`` (fallback and random
actions drawn per episode and call). What it checks: :mod:`harness.check.conformance`."""

from __future__ import annotations

import uuid
from typing import Any, Mapping

from harness.check.diffs import short
from harness.check.probe import FaultOnce, Probe
from harness.check.shared_checks import SharedChecks
from harness.check.targets import AgentTarget, SuiteTarget


class AgentChecker(SharedChecks):
    """``check_agent``'s checks: contract, reset, determinism, schedule, draws, identity (of the agent).
    ``random_actions``: every action the agent returns is a random draw (``draws`` then checks
    them all, not only fallbacks)."""

    whose = "agent"

    def __init__(self, suite: SuiteTarget, agent: AgentTarget, episodes: int, workdir: Any, subject: str,
                 examples: Mapping[str, Any] | None = None, random_actions: bool = False):
        super().__init__(suite, agent, episodes, workdir, subject, examples)
        self.random_actions = bool(random_actions)

    # -- reset ------------------------------------------------------------------------
    def check_reset(self) -> None:
        c = "reset"
        episodes = self.episodes()
        victim = episodes[0]
        for pipeline in (False, True):
            marker = self.tmp / f"fault-{uuid.uuid4().hex[:8]}"
            faulty = FaultOnce(self.suite.obj.make_env, victim.episode_id, str(marker))
            probe = Probe(self.make_agent())
            _, _, summary = self.records(agent=probe, env_factory=faulty, pipeline=pipeline, batch_wait_s=0.0,
                                         batch_size=max(2, self.n), max_retries=1)
            how = "pipelined" if pipeline else "lockstep"
            if probe.violations:
                raise self.fail(c, f"{how}: {probe.violations[0]}")
            if not marker.exists():
                raise self.fail(c, f"{how}: the injected fault of episode {victim.episode_id} never ran "
                                   "(it took no step)")
            for record in summary.records or ():
                resets = probe.resets.get(record.key, 0)
                if record.error_kind not in (None, "env", "worker") or record.key not in probe.acted:
                    continue  # an agent error or no call: nothing to count against
                if resets != record.attempts:
                    raise self.fail(c, f"{how}: episode {record.episode_id} was reset {resets} times in "
                                       f"{record.attempts} attempts (exactly one agent.reset() per attempt)")
            if probe.resets.get(victim.key, 0) < 2:
                raise self.fail(c, f"{how}: episode {victim.episode_id} was retried after a fault but reset "
                                   f"{probe.resets.get(victim.key, 0)} time(s)")

    # -- draws ------------------------------------------------------------------------
    def check_draws(self) -> None:
        c = "draws"
        probe = Probe(self.make_agent())
        self.records(agent=probe, pipeline=False, batch_size=max(2, self.n))
        draws = probe.fallbacks if not self.random_actions else probe.plans
        kind = "random actions" if self.random_actions else "fallback actions"
        per_episode = {k: v for k, v in draws.items() if v}
        if not per_episode:
            self.report.skipped.append(f"draws: the agent drew no {kind} in {self.n} episodes")
            return
        for key, seq in per_episode.items():
            if len(seq) >= 3 and all(d == seq[0] for d in seq):
                raise self.fail(c, f"all {len(seq)} {kind} of episode {key[2]} are the same draw "
                                   f"({short(seq[0])}): draws must differ per call")
        if len(per_episode) >= 2:
            firsts = [seq[0] for seq in per_episode.values()]
            if all(d == firsts[0] for d in firsts):
                raise self.fail(c, f"every episode's first {kind[:-1]} is the same draw ({short(firsts[0])}): "
                                   "draws must be seeded per episode")
