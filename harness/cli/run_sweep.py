"""``harness run +experiment=checkpoint_sweep ...``: race the checkpoints on the selection part
of the split, then run the chosen one on the held-out part (harness/run/sweep.py).

Round k runs the first ``k * round`` selection episodes in every checkpoint still in the race
(each run resumes what it stored, so a round runs only the new episodes); after each round the
race is replayed from the stored records (:func:`harness.run.sweep.replay`) and the
checkpoints decided worse than a survivor stop. When one checkpoint is left, or the selection
part (or ``max_episodes``) is used up, the survivor with the highest selection mean is chosen
and run on every held-out episode as ``NAME@held-out``. A killed sweep, rerun with the same
command, replays the rounds over what is stored and goes on. One checkpoint's agent is in
memory at a time: each is built for its share of a round and freed after it (a larger
``experiment.sweep.round`` loads each checkpoint fewer times).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable

from harness.cli.common import UsageError
from harness.cli.run_sequential import _run_id, _stored
from harness.run import sweep as sw
from harness.run.sweep import ordered_values
from harness.scoring.policy import suite_scoring
from harness.stats.sequential.stopping import tested_metric


@dataclass
class _Sweep:
    jobs: list[Any]
    settings: Any
    metric: Any
    values_fn: Any
    cap: int
    #: The held-out part of the split (a PartSuite) and its size.
    held_out: Any
    specs: dict[int, Any]
    #: Each checkpoint's selection run id (taken while its agent is built; agents are freed after each round).
    ids: dict[str, str] = dataclasses.field(default_factory=dict)


def plan(prepared: list[Any], experiment: Any) -> _Sweep:
    """The sweep of the prepared jobs (one per checkpoint): their suite swapped for the
    selection part, their spec given the race's ``stopping`` entry. UsageError (exit 2) when
    the jobs do not share one suite, split and seed, or a setting does not fit."""

    settings = experiment.settings
    keys = {json.dumps([j.spec.suite, j.spec.split, dict(j.spec.suite_params), j.spec.seed, j.spec.repeat,
                        str(j.cfg.out)], sort_keys=True, default=str) for j in prepared}
    if len(keys) != 1:
        raise UsageError(f"experiment {experiment.name}: a sweep runs one suite and split with one seed "
                         "(run several sweeps for several splits or seeds)")
    first = prepared[0].spec
    names = [j.spec.variant for j in prepared]
    if len(set(names)) != len(names):
        raise UsageError(f"experiment {experiment.name}: each checkpoint's run needs its own variant name "
                         f"(got {', '.join(names)}; do not give variant.name=)")
    if any(j.spec.stopping for j in prepared):
        raise UsageError(f"experiment {experiment.name} races its checkpoints itself: drop stopping=sequential")
    if first.limit is not None:
        raise UsageError(f"experiment {experiment.name}: limit= is not taken (the selection part is the split's "
                         f"{settings.selection:g}; experiment.sweep.max_episodes caps the race)")
    try:
        metrics, values_fn = suite_scoring(first.suite)
        metric = tested_metric(metrics, settings.metric)
        selection = sw.PartSuite(prepared[0].suite, first.split, sw.SELECTION, settings.selection,
                                 settings.partition_seed)
        held = sw.PartSuite(prepared[0].suite, first.split, sw.HELD_OUT, settings.selection, settings.partition_seed)
    except ValueError as exc:
        raise UsageError(f"experiment {experiment.name}: {exc}") from None
    specs = {}
    for job in prepared:
        job.suite = selection
        # the race's runs keep every stored record (errors included) as final, like a comparison's;
        # their simulator / worker retries are the sweep's shared max_retries, in the identity
        job.spec = dataclasses.replace(job.spec, stopping={**settings.stopping(metric.name),
                                                           "retries": job.spec.max_retries})
        specs[id(job)] = job.spec
    size = len(selection.episodes(first.split))
    cap = min(size, settings.max_episodes or size)
    return _Sweep(list(prepared), settings, metric, values_fn, cap, held, specs)


def run(sweep: _Sweep, run_job: Callable[[Any], int]) -> int:
    """The race in rounds, then the chosen checkpoint's held-out run; the failed jobs' count."""
    s = sweep.settings
    names = [j.spec.variant for j in sweep.jobs]
    by_name = {j.spec.variant: j for j in sweep.jobs}
    lo, hi = (float(v) for v in sweep.metric.range)
    failed = 0
    n = 0
    state = sw.RaceState(names, s.alpha, 0)
    while len(state.alive) > 1 and n < sweep.cap:
        n = min(n + s.round, sweep.cap)
        for name in state.alive:
            job = by_name[name]
            job.spec = dataclasses.replace(sweep.specs[id(job)], limit=n)
            failed += run_job(job)
            if job.agent is not None:
                sweep.ids.setdefault(name, _run_id(job))
            job.agent = None  # one checkpoint in memory at a time: it is built again for its next round
        values = _values(sweep, [by_name[x] for x in names])
        before = set(state.dropped)
        state = sw.replay(values, names, alpha=s.alpha, step=s.round, upto=n, width=hi - lo,
                          higher_is_better=sweep.metric.higher_is_better, rule=s.rule)
        for name in [x for x in names if x in state.dropped and x not in before]:
            d = state.dropped[name]
            print(f"checkpoint sweep: {name} dropped after {d.after} of {sweep.cap} selection episodes "
                  f"({d.by} decided better at episode {d.decided_at}, {s.rule} at α/(K−1) = "
                  f"{s.alpha / max(1, len(names) - 1):.4g})", file=sys.stderr)
    chosen = state.chosen
    if chosen is None:
        raise UsageError("checkpoint sweep: no selection episode has a value; nothing to choose")
    print(f"checkpoint sweep: chose {chosen} after {state.n} selection episodes "
          f"({len(state.alive)} of {len(names)} checkpoints left); running it on the "
          f"{len(sweep.held_out.episodes(sweep.jobs[0].spec.split))} held-out episodes", file=sys.stderr)
    job = by_name[chosen]
    held = dataclasses.replace(job, suite=sweep.held_out, spec=dataclasses.replace(
        sweep.specs[id(job)], variant=f"{chosen}{sw.HELD_OUT_SUFFIX}", stopping=None, limit=None))
    failed += run_job(held)
    return failed


def _values(sweep: _Sweep, jobs: list[Any]) -> dict[str, Any]:

    rows = _stored(jobs[0].cfg.out, [sweep.ids[j.spec.variant] for j in jobs])
    return {j.spec.variant: ordered_values(rows[sweep.ids[j.spec.variant]], sweep.metric, sweep.values_fn)
            for j in jobs}
