"""``harness run ... stopping=sequential``: a sweep's runs in rounds, stopped once decided.

The jobs of one comparison group (same suite, split, suite parameters, seed, repeat, output
and stopping settings) take the same episodes and seeds in *rounds*, in one seeded order of the
episode ids (:mod:`harness.stats.sequential.order`): round k runs the first ``k * stopping.round``
episodes of that order in every run still open (each run resumes what it stored, so a round runs
only the new episodes), the baseline first, so no run gets ahead of the others. After each round
the group's comparisons are decided together from the stored episodes
(:func:`harness.stats.sequential.decide_family`: alpha shared as ``stopping.family`` says), and a
decided comparison's run stops; the baseline runs while any comparison is open.

Every stored record of such a run is final: an episode that erred counts by the error policy
and is never run again, by a later round, a resume or a rerun (the test may have read it). The
only retries are the declared ``stopping.retries`` of simulator / worker faults, made by the
runner inside the episode's round before its record is stored, alike in every run of the group.
Nothing but the records holds the test's state: a killed run, rerun with the same command,
replays the rounds over what is stored (no episode runs twice) and stands where it stood.
Each job's agent is built once and kept for all its rounds.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from harness.cli.common import UsageError
from harness.run.identity import run_id_of, run_identity
from harness.scoring.policy import suite_scoring
from harness.stats.sequential import GROUP_SEQUENTIAL, decide_family, paired_values, tested_metric
from harness.stats.sequential.order import OrderedSuite
from harness.stats.sequential.stopping import Comparison, family_text
from harness.store import ResultStore, StoreError


@dataclass
class _Group:
    baseline: Any
    others: list[Any]
    stopping: dict[str, Any]
    #: Episodes the comparison may use: the split (or ``limit``), capped by ``max_episodes``.
    cap: int
    specs: dict[int, Any] = field(default_factory=dict)


def plan(prepared: list[Any]) -> list[_Group]:
    """The comparison groups of the prepared jobs; UsageError (exit 2) when a group has no
    baseline, several, or nothing to compare, or a job of the sweep is not sequential. Each job
    gets its group's settings (the family's size, the bounded design's maximum, the retries as
    its ``max_retries``) and the split in the group's seeded order."""
    if not all(job.spec.stopping for job in prepared):
        plain = next(job for job in prepared if not job.spec.stopping)
        raise UsageError(f"stopping=sequential applies to every run of the sweep; job {plain.label} has none")
    groups: dict[str, list[Any]] = {}
    for job in prepared:
        s = job.spec
        key = json.dumps([s.suite, s.split, dict(s.suite_params), s.seed, s.repeat, str(job.cfg.out),
                          dict(s.stopping)], sort_keys=True, default=str)
        groups.setdefault(key, []).append(job)
    out = []
    for jobs in groups.values():
        s = jobs[0].spec
        stopping = dict(s.stopping)
        where = f"{s.suite}/{s.split}" + (f" seed={s.seed}" if s.seed else "")
        names = [job.spec.variant for job in jobs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"stopping=sequential: {twice[0]} runs twice on {where} (each run of a comparison "
                             "needs its own variant name)")
        base = [job for job in jobs if job.spec.variant == stopping["baseline"]]
        if not base:
            raise UsageError(f"stopping.baseline={stopping['baseline']} is not a run of the sweep on {where} "
                             f"(runs: {', '.join(names)})")
        others = [job for job in jobs if job is not base[0]]
        if not others:
            raise UsageError(f"stopping=sequential: nothing to compare with {stopping['baseline']} on {where} "
                             "(sweep another variant, e.g. -m planner=oracle,random)")
        size = len(base[0].suite.episodes(s.split))
        cap = min(size, s.limit if s.limit is not None else size,
                  stopping["max_episodes"] if stopping.get("max_episodes") else size)
        stopping["family_size"] = len(others)
        if stopping.get("rule") == GROUP_SEQUENTIAL:
            stopping["n_max"] = cap
        ordered = OrderedSuite(base[0].suite, s.split, int(stopping.get("order_seed") or 0))
        group = _Group(base[0], others, stopping, cap)
        for job in jobs:
            job.suite = ordered
            job.keep_serving = tuple(names)
            job.spec = dataclasses.replace(job.spec, stopping=stopping, max_retries=int(stopping.get("retries") or 0))
        group.specs = {id(job): job.spec for job in jobs}
        out.append(group)
    return out


def run(groups: list[_Group], run_job: Callable[[Any], int]) -> int:
    """Every group in rounds until each comparison is decided or out of episodes; the number
    of failed jobs (as the plain run loop counts them)."""
    failed = 0
    for group in groups:
        failed += _run_group(group, run_job)
    return failed


def _run_group(group: _Group, run_job: Callable[[Any], int]) -> int:
    stopping = group.stopping
    step = int(stopping["round"])
    open_ = list(group.others)
    failed = 0
    n = 0
    metric, values_fn = _metric(group.baseline.spec.suite, stopping["metric"])
    while open_ and n < group.cap:
        n = min(n + step, group.cap)
        for job in [group.baseline, *open_]:
            job.spec = dataclasses.replace(group.specs[id(job)], limit=n)
            failed += run_job(job)
        rows = _stored(group.baseline.cfg.out, [group.baseline, *group.others])
        base_rows = rows[_run_id(group.baseline)]
        values = {job.spec.variant: paired_values(rows[_run_id(job)], base_rows, metric, values_fn, upto=n)
                  for job in group.others}
        decisions = decide_family(values, metric, stopping, n_max=group.cap)
        still = []
        for job in open_:
            d, level = decisions[job.spec.variant]
            if d.outcome is None:
                still.append(job)
                continue
            v = values[job.spec.variant]
            c = Comparison(job.spec.variant, group.baseline.spec.variant, job.spec.suite, job.spec.split, metric.name,
                           d, len(v), int(np.isnan(v).sum()), group.cap, family=str(stopping.get("family") or "none"),
                           family_size=int(stopping.get("family_size") or 1), level=level,
                           family_alpha_=float(stopping["alpha"]))
            left_out = c.without_value
            print(f"sequential: {job.spec.variant} vs {group.baseline.spec.variant} on "
                  f"{job.spec.suite}/{job.spec.split} ({metric.name}): {d.outcome} after {c.paired} of "
                  f"{group.cap} paired episodes (decided at pair {d.at}, level {level:.4g}; {family_text(c)}"
                  + (f"; {left_out} pair(s) without a value left out" if left_out else "")
                  + f"); Δ {d.mean:+.3f}, interval [{d.lo:+.3f}, {d.hi:+.3f}]; its run stops", file=sys.stderr)
        open_ = still
    for job in open_:
        print(f"sequential: {job.spec.variant} vs {group.baseline.spec.variant} on {job.spec.suite}/"
              f"{job.spec.split}: undecided after {n} of {group.cap} paired episodes", file=sys.stderr)
    return failed


def _run_id(job: Any) -> str:
    return run_id_of(run_identity(job.spec, job.suite, job.agent))


def _stored(out: Any, jobs: list[Any]) -> dict[str, list[dict]]:
    """The stored records of the jobs' runs (jobs, or their run ids), by run id (read-only: the
    runs are closed)."""
    ids = [job if isinstance(job, str) else _run_id(job) for job in jobs]
    try:
        with ResultStore(out, readonly=True) as store:
            frame = store.frame(ids)
    except StoreError as exc:
        raise UsageError(f"{exc} (finished episodes are saved)") from None
    rows: dict[str, list[dict]] = {run_id: [] for run_id in ids}
    for row in frame.to_dict("records"):
        rows.setdefault(row["run_id"], []).append(row)
    return rows


def _metric(suite: str, name: str) -> tuple[Any, Any]:
    metrics, values_fn = suite_scoring(suite)
    return tested_metric(metrics, name), values_fn
