"""``harness run``: compose the config, check every job, run its episodes into the store."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.cli import judge, run_sequential, run_sweep
from harness.cli.common import UsageError, first_lines, one_line, summary
from harness.cli.run_checks import Missing, missing_checkpoints, missing_message, unreachable_servers
from harness.cli.run_progress import Progress, failures_text
from harness.cli.run_trackers import build_trackers, check_tracker, close_trackers, log_outputs, tracker_key
from harness.interfaces import action_mismatch
from harness.params import INVOCATION_SUITES, Composite, fields_of
from harness.registry.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
from harness.registry.extras import missing_extra_message, not_installed
from harness.registry.loader import MissingDependencyError, UnknownPluginError, load_target
from harness.run import provenance
from harness.run.config import ConfigError, MissingPrerequisite, compose, expand_sweeps
from harness.run.executors import SuiteEnvFactory
from harness.run.runner import Runner
from harness.run.servers import Lifecycle, ServeError
from harness.run.spec import to_run_spec
from harness.run.sweep import CheckpointSweep
from harness.run.trackers import RunLogger, run_config
from harness.store import ResultStore, StoreError
from harness.tables import experiments
from harness.util.redact import redact_override

#: What this invocation has committed so far (for the message on an interrupt):
#: episodes of finished jobs, the running job's runner, the output directory.
SAVED: dict[str, Any] = {"episodes": 0, "runner": None, "out": None}
#: Output directories this invocation wrote (``judge=NAME`` judges them after the run).
OUTS: list[str] = []


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help=summary("run"),
        description="Run a suite split with an agent. Overrides are Hydra's key=value; "
        "with -m, comma-separated values sweep (e.g. -m planner=oracle,random split=seen,unseen).",
    )
    p.add_argument("-m", "--multirun", action="store_true", help="sweep comma-separated override values")
    p.add_argument("--cfg", choices=["job"], default=None,
                   help="print the composed config of each job (YAML) and exit without running")
    p.add_argument("--dry-run", action="store_true",
                   help="check every job, print one line per run (variant, suite, split, episodes), run nothing")
    p.add_argument("overrides", nargs="*", help="key=value overrides; +experiment=NAME runs an experiment "
                   "(configs/experiment/NAME.yaml: a run per variant x suite x split)")


def main(args: argparse.Namespace) -> int:
    # One invocation's state: a process that calls main() again (tests, a notebook) must not
    # judge, or count as saved, what an earlier invocation wrote.
    SAVED.update(episodes=0, runner=None, out=None)
    OUTS.clear()
    judge.JUDGED.clear()
    # judge=NAME judge.KEY=VALUE: judge the run's answers once it is done (harness/judging/stage.py).
    name, mine, overrides = judge.check_config(args.overrides)
    OUTS.clear()  # this invocation's outputs only (an earlier `main` in the same process wrote others)
    status = _cmd_run(overrides, args.multirun, show=args.cfg, dry_run=args.dry_run)
    if name is None or args.cfg or args.dry_run or status not in (0, 1):  # 1: some episodes failed
        return status
    for out in dict.fromkeys(OUTS):
        status = max(status, judge.run_judge(out, [f"judge={name}", *mine], writer="harness run"))
    return status


def saved_on_stop() -> str | None:
    """What a stop signal leaves saved, for ``harness: stopped by SIG...; <this>`` (None: nothing):
    the episodes finished in this invocation and the verdicts of its ``judge=NAME``."""
    parts = []
    if SAVED.get("out") is not None:
        runner = SAVED["runner"]
        episodes = SAVED["episodes"] + (runner.committed if runner is not None else 0)
        parts.append(f"{episodes} episode(s) finished in this invocation are saved in {SAVED['out']}")
    verdicts = judge.saved_on_stop()
    if verdicts:
        parts.append(verdicts.rpartition("; ")[0])
    return "; ".join(parts) + "; rerun the same command to resume" if parts else None


def _experiment_jobs(overrides: list[str], multirun: bool) -> list[list[str]] | None:
    """``+experiment=NAME``: one override list per variant x suite x split (harness/tables/experiments.py),
    times the sweep of the other overrides with -m (``seed=0,1,2``: repeats); None without one."""
    try:
        name, edits, rest = experiments.split_overrides(overrides)
        if name is None:
            return None
        experiment = experiments.load(name, edits)
        if not multirun and any(_is_sweep(o) for o in rest):
            raise UsageError(f"{next(o for o in rest if _is_sweep(o))!r} sweeps several values: add -m")
        sweeps = expand_sweeps(rest) if multirun else [rest]
    except (experiments.ExperimentError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    return [job for sweep in sweeps for job in experiment.jobs(sweep)]


@dataclass
class _Job:
    """One job of a run or sweep, validated before any job runs."""

    cfg: Any
    spec: Any
    suite: Any
    label: str
    #: "[2/6] " in a sweep: printed with the label once the job's agent is built.
    position: str = ""
    #: tracker=NAME: (name, its checked parameters); None without one.
    tracker: Any = None
    #: The experiment's name with +experiment= (the tracker runs' group).
    experiment: str | None = None
    #: The agent, once built (a sequential comparison runs a job once per round, on this one agent).
    agent: Any = None
    #: Variants whose servers stay up while this job runs (a sequential comparison's runs take
    #: turns every round: each server is started once, not once a round).
    keep_serving: tuple[str, ...] = ()


def _cmd_run(overrides: list[str], multirun: bool, show: str | None = None, dry_run: bool = False) -> int:
    try:
        jobs = _experiment_jobs(overrides, multirun)
        if jobs is None:
            jobs = expand_sweeps(overrides) if multirun else [overrides]
            if not multirun and any(_is_sweep(o) for o in overrides):
                raise UsageError(f"{next(o for o in overrides if _is_sweep(o))!r} sweeps several values: add -m")
        # A dry run lists the variants' unset checkpoints with the other missing prerequisites.
        missing: list[tuple[str, str]] | None = [] if dry_run else None  # (what is missing, its job)
        configs = []
        for job in jobs:
            unset: list[str] | None = [] if dry_run else None
            configs.append(compose(job, unset))
            if missing is not None:
                missing += [(text, " ".join(job)) for text in unset or ()]
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _check_per_variant_settings(overrides, configs)
    if show == "job":  # Hydra's --cfg job: the composed config of each job, nothing run or written
        for job, cfg in zip(jobs, configs):
            try:
                spec = to_run_spec(cfg)
            except ConfigError as exc:
                raise UsageError(str(exc)) from None
            if cfg.split is None:
                cfg.split = spec.split
            if len(configs) > 1:
                print(f"# {' '.join(job)}")
            sys.stdout.write(OmegaConf.to_yaml(cfg))
        return 0
    # Every job is checked (names, parameters, splits, data paths) before the first episode runs.
    suites: dict[str, Any] = {}
    prepared = []
    # Servers the harness starts itself (an experiment's serve.command) do not answer before the run.
    managed = missing is not None and _servers(overrides) is not None
    # A suite-specific key (a prompt setting) that no job of this invocation uses is refused.
    invocation = INVOCATION_SUITES.set(frozenset(str(c.suite.name) for c in configs if c.get("suite") is not None))
    try:
        for overrides_i, cfg in zip(jobs, configs):
            label = " ".join(redact_override(o) for o in overrides_i)
            try:
                job_ = _prepare(cfg, suites, label)
                prepared.append(job_)
                if missing is not None:
                    missing += [(text, label) for text in missing_checkpoints(job_.spec)
                                + ([] if managed else unreachable_servers(job_.spec))]
            except Missing as exc:
                if missing is None:
                    where = f" (job {label})" if len(configs) > 1 else ""
                    raise UsageError(f"{exc}{where}") from None
                missing += [(text, label) for text in exc.items]
                if exc.spec is not None:  # the job's other prerequisites: its checkpoints, its servers
                    missing += [(text, label) for text in missing_checkpoints(exc.spec)
                                + ([] if managed else unreachable_servers(exc.spec))]
            except UsageError as exc:
                where = f" (job {label})" if len(configs) > 1 else ""
                raise UsageError(f"{exc}{where}") from None
    finally:
        INVOCATION_SUITES.reset(invocation)
    if dry_run and missing:
        raise UsageError(missing_message(missing, len(configs)))
    sequential = sweep = None
    swept = _checkpoint_sweep(overrides)
    if swept is not None:  # +experiment=checkpoint_sweep: a race on selection episodes, then held-out
        sweep = run_sweep.plan(prepared, swept)  # checked before any episode runs (exit 2), dry run too
    elif any(job.spec.stopping for job in prepared):  # stopping=sequential: the jobs run in rounds
        sequential = run_sequential.plan(prepared)  # checked before any episode runs (exit 2), dry run too
    if dry_run:
        _print_plan(prepared)
        return 0
    experiment = _experiment_name(overrides)
    trackers = build_trackers(prepared)
    servers = _servers(overrides)  # an experiment's policy servers, one variant at a time
    failed = 0
    try:
        for i, job in enumerate(prepared):
            job.position = f"[{i + 1}/{len(prepared)}] " if len(prepared) > 1 else ""
            job.experiment = experiment
        if sequential is not None:
            failed += run_sequential.run(sequential, lambda job: _run_job(job, servers, trackers))
        if sweep is not None:
            failed += run_sweep.run(sweep, lambda job: _run_job(job, servers, trackers))
        for job in prepared if sequential is None and sweep is None else ():
            failed += _run_job(job, servers, trackers)
        log_outputs(prepared, trackers, experiment)
    finally:
        if servers is not None:
            servers.stop()
        close_trackers(trackers)
    return 1 if failed else 0


def _run_job(job: _Job, servers: Any, trackers: dict[Any, Any]) -> int:
    """Run one job's episodes (what it has not stored yet); 1 when it failed, else 0."""
    if servers is not None:
        _serve(servers, job)
    return int(_run_one(job, trackers.get(tracker_key(job))) != 0)


def _servers(overrides: list[str]) -> Any:
    """``+experiment=NAME`` with ``experiment.serve.command``: its server lifecycle (harness/run/servers.py)."""
    name, edits, _rest = experiments.split_overrides(overrides)
    if name is None:
        return None
    try:
        return Lifecycle.for_experiment(experiments.load(name, edits))
    except (experiments.ExperimentError, ServeError) as exc:
        raise UsageError(str(exc)) from None


def _checkpoint_sweep(overrides: list[str]) -> Any:
    """``+experiment=NAME`` naming a checkpoint sweep (harness/run/sweep.py), else None."""
    name, edits, _rest = experiments.split_overrides(overrides)
    if name is None:
        return None
    try:
        experiment = experiments.load(name, edits)
    except experiments.ExperimentError as exc:
        raise UsageError(str(exc)) from None
    return experiment if isinstance(experiment, CheckpointSweep) else None


def _serve(lifecycle: Any, job: _Job) -> None:
    try:
        lifecycle.enter(job.spec.variant, job.cfg.out, keep=job.keep_serving)
    except ServeError as exc:
        raise UsageError(f"{exc} (finished episodes are saved)") from None


def _experiment_name(overrides: list[str]) -> str | None:
    name = experiments.split_overrides(overrides)[0]
    return None if name is None else (Path(name).stem if name.endswith((".yaml", ".yml")) or "/" in name else name)


def _print_plan(prepared: list[_Job]) -> None:
    """``--dry-run``: one line per checked job (variant, suite, split, episodes, seed, output), nothing run."""
    total = 0
    for job in prepared:
        spec = job.spec
        n = len(job.suite.episodes(spec.split))
        n = min(n, spec.limit) if spec.limit is not None else n
        total += n
        repeat = f"\trepeat={spec.repeat}" if spec.repeat else ""
        print(f"{spec.variant}\t{spec.suite}\t{spec.split}\t{n} episodes\tseed={spec.seed}{repeat}\tout={job.cfg.out}")
    print(f"{len(prepared)} runs, {total} episodes (dry run: nothing was run or written)", file=sys.stderr)


#: Settings that identify one variant's weights: given once on the command line of a sweep
#: over several variants they would be hashed into every variant's identity.
_PER_VARIANT = ("served_checkpoint",)


def _check_per_variant_settings(overrides: list[str], configs: list[Any]) -> None:
    variants = {c.variant.name for c in configs}
    if len(variants) < 2:
        return
    for ov in overrides:
        key = ov.partition("=")[0].lstrip("+~")
        name = key.rpartition(".")[2]
        if name in _PER_VARIANT and key.endswith(f"params.{name}"):
            raise UsageError(
                f"{key} would be the same for every variant of this sweep ({', '.join(sorted(variants))}): "
                f"give each variant its own (${{VARIANT}}_SERVED_CHECKPOINT, e.g. $BASE_SERVED_CHECKPOINT, "
                "or its configs/variant file), or run the variants one at a time")


def _is_sweep(override: str) -> bool:
    value = override.partition("=")[2]
    return "," in value and not value.startswith(("[", "{", "'", '"'))


def _prepare(cfg: Any, suites: dict[str, Any], label: str) -> _Job:
    """The checked job. Whatever it needs that is not here (an optional extra of the suite, the
    agent or its model backend; the suite's data) is gathered, every one, into one
    :class:`Missing` (with the spec, so that the dry run also checks its checkpoints and
    servers); bad input is a :class:`UsageError` at once."""
    try:
        spec = to_run_spec(cfg)
    except MissingPrerequisite as exc:
        raise Missing([str(exc)]) from None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    missing: list[str] = []
    try:
        SUITES.entry(spec.suite)
        agent_plugin = registry.entry(spec.agent, spec.suite)
        _setup_executor(EXECUTORS.entry(spec.executor), spec)
    except MissingDependencyError as exc:
        raise Missing([str(exc)], spec) from None
    except UnknownPluginError as exc:
        raise UsageError(str(exc)) from None
    missing += _agent_not_installed(agent_plugin, spec)
    try:
        agent_factory = registry.load(spec.agent, spec.suite)
    except MissingDependencyError as exc:
        missing.append(str(exc))
        agent_factory = None
    suite = None
    try:
        key = json.dumps([spec.suite, dict(spec.suite_params)], sort_keys=True, default=str)
        suite = suites.get(key)
        if suite is None:
            factory = SUITES.load(spec.suite)
            suite = suites[key] = factory(**dict(spec.suite_params))
        unavailable = getattr(suite, "unavailable", None)  # optional: a split known but not installed
        reason = unavailable(spec.split) if callable(unavailable) else None
        if reason:
            raise Missing([f"{spec.suite}/{spec.split}: {reason}"])
        canonical = getattr(suite, "canonical_split", None)  # optional: a split known under another spelling
        if callable(canonical) and canonical(spec.split) != spec.split:
            spec = dataclasses.replace(spec, split=str(canonical(spec.split)))  # one run identity for both
        if spec.split not in suite.splits():
            close = difflib.get_close_matches(spec.split, list(suite.splits()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"unknown split {spec.split!r} for suite {spec.suite}{hint} (splits: {', '.join(suite.splits())})")
        # surfaces missing or malformed data before anything starts; a split with no episode
        # (a count of 0, a filter that keeps none) would "succeed" having run nothing
        if not len(suite.episodes(spec.split)):
            decl = SUITES.entry(spec.suite).params
            try:
                defaults = {f.name: f.default for f in fields_of(decl)} if decl is not None else {}
            except (TypeError, ValueError):  # a declaration that is not one dataclass
                defaults = {}
            zeros = [f"suite.params.{k}={v}" for k, v in spec.suite_params.items()
                     if (v == 0 and not isinstance(v, bool) or v in ([], ())) and defaults.get(k) != v]
            raise UsageError(f"{spec.suite}/{spec.split} has no episodes to run"
                             + (f" ({', '.join(zeros)})" if zeros else ""))
    except Missing as exc:
        missing += exc.items
        suite = None
    except MissingDependencyError as exc:
        missing.append(str(exc))
        suite = None
    except ModuleNotFoundError as exc:  # the suite's extra, imported as it is built
        line = missing_extra_message(exc, f"suite {spec.suite!r}")
        if line is None:
            raise
        missing.append(line)
        suite = None
    except (FileNotFoundError, NotADirectoryError) as exc:  # a data folder not set or not there
        missing.append(one_line(exc))
        suite = None
    except PermissionError as exc:
        raise UsageError(one_line(exc)) from None
    except OSError as exc:
        raise UsageError(f"{spec.suite}/{spec.split}: cannot read its data: {one_line(exc)}") from None
    except TypeError as exc:
        raise UsageError(f"bad parameters for {spec.suite}/{spec.agent}: {one_line(exc)}") from None
    except ValueError as exc:  # malformed data files, bad parameter values
        raise UsageError(f"{spec.suite}/{spec.split}: {first_lines(exc)}") from None
    except (IndexError, KeyError) as exc:  # e.g. suite.params.tasks=[99] on a 10-task suite
        raise UsageError(f"bad parameters for suite {spec.suite}: {type(exc).__name__}: {one_line(exc)} "
                         f"({json.dumps(dict(spec.suite_params), default=str)})") from None
    try:
        tracker = check_tracker(cfg)
    except Missing as exc:
        missing += exc.items
    if missing:
        raise Missing(missing, spec)
    # planner=oracle on a suite runs that suite's own oracle (harness.plugins.AgentPlugin.suite).
    # An agent that cannot produce the suite's kind of action is refused before any episode.
    mismatch = action_mismatch(suite, spec.suite, agent_factory, f"{spec.agent_kind} {spec.agent}")
    if mismatch is not None:
        raise UsageError(mismatch)
    return _Job(cfg, spec, suite, label, tracker=tracker)


def _agent_not_installed(plugin: Any, spec: Any) -> list[str]:
    """The agent's, and its chosen groups' plugins' (the ``vlm`` planner's model backend),
    declared modules that are not installed: one line each (harness.registry.extras.not_installed)."""
    who = f"{spec.agent_kind} {spec.agent}"
    found = [(plugin, who)]
    if isinstance(plugin.params, Composite):
        try:
            groups = plugin.params.groups(dict(spec.agent_params), spec.suite)
        except (KeyError, ValueError):  # to_run_spec has parsed the values: not expected
            groups = []
        found += [(g.plugin, f"{who} ({g.title})") for g in groups if g.plugin is not None]
    return [line for p, w in found if (line := not_installed(p, w)) is not None]


def _setup_executor(plugin: Any, spec: Any) -> None:
    """The executor's own setup (joining a cluster...), before any store or run exists."""
    if plugin.setup is None:
        return
    hook = load_target(plugin, "executor", plugin.setup)
    try:
        hook(dict(spec.executor_params))
    except (ValueError, RuntimeError, OSError) as exc:
        raise UsageError(one_line(exc)) from None


def _run_one(job: _Job, tracker: Any = None) -> int:
    cfg, spec, suite = job.cfg, job.spec, job.suite
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    try:
        agent = job.agent if job.agent is not None else registry.build(spec.agent, spec.suite, **dict(spec.agent_params))
        job.agent = agent
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise UsageError(f"{spec.agent_kind} {spec.agent}: {one_line(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"bad parameters for {spec.agent_kind} {spec.agent}: {one_line(exc)}") from None
    except ModuleNotFoundError:
        raise  # a missing optional extra: _main names the extra
    except Exception as exc:  # a checkpoint that does not load (OSError from the hub client, ...)
        raise UsageError(f"cannot build {spec.agent_kind} {spec.agent}: {type(exc).__name__}: {one_line(exc)}") from None
    if job.position:
        print(f"{job.position}{job.label}", file=sys.stderr)
    try:
        store = ResultStore(cfg.out, writer="harness run")
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    SAVED["out"] = str(store.path.parent)
    OUTS.append(SAVED["out"])

    in_process = getattr(EXECUTORS.entry(spec.executor), "in_process", False)
    env_factory = None if in_process else SuiteEnvFactory(spec.suite, dict(spec.suite_params))
    share_cores = getattr(agent, "share_cores", None)  # an in-process model leaves env workers their cores
    if callable(share_cores):
        share_cores(0 if in_process else spec.num_workers)
    prov = provenance.collect(OmegaConf.to_container(cfg, resolve=True), agent.identity())
    bar = Progress(f"{spec.variant} · {spec.suite}/{spec.split}", enabled=cfg.progress,
                    batch=spec.batch_size if in_process else spec.num_workers * spec.envs_per_worker)

    logger = RunLogger(tracker, job.tracker[0] if job.tracker else "")

    def on_record(record: Any) -> None:
        bar.update(record)
        logger.episode(record)

    def on_start(total: int, skipped: int) -> None:
        bar.start(total, skipped)
        repeat = f" r{spec.repeat}" if spec.repeat else ""
        logger.start(name=f"{spec.variant} {spec.suite}/{spec.split} seed {spec.seed}{repeat}", run_id=runner.run_id,
                     config=run_config(spec, runner.identity), out=Path(cfg.out),
                     group=job.experiment or Path(str(cfg.out)).name, skipped=skipped)

    try:
        runner = Runner(spec, suite, agent, store, env_factory=env_factory, provenance=prov,
                        on_start=on_start, on_record=on_record, on_call=bar.call, keep_records=False)
    except ValueError as exc:
        store.close()
        raise UsageError(f"{spec.agent_kind} {spec.agent}: {one_line(exc)}") from None
    t0 = time.monotonic()
    SAVED["runner"] = runner
    try:
        with bar:
            summary = runner.run()
        stored, successes, errors = store.run_counts(summary.run_id)  # resumed episodes included
        failures = store.run_failures(summary.run_id)
        logger.end(stored, successes, errors)
    except StoreError as exc:
        raise UsageError(f"{exc} (finished episodes up to the failure are saved)") from None
    finally:
        store.close()
    SAVED["episodes"] += runner.committed
    SAVED["runner"] = None
    done = summary.skipped + summary.finished
    tracked = logger.where()
    print(
        f"{spec.variant} {spec.suite}/{spec.split}: {summary.finished} episodes run, {summary.skipped} resumed; "
        f"{successes}/{stored} succeeded; {failures_text(failures, full=True)} (all stored episodes of this run), "
        f"{time.monotonic() - t0:.1f}s -> {store.path} (run {summary.run_id}, {done}/{summary.total} done)"
        + (f"; {tracked}" if tracked else ""),
        file=sys.stderr,
    )
    return 0


