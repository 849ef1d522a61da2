"""``harness run``: compose the config, check every job, run its episodes into the store."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from harness.cli.common import UsageError, first_lines, one_line

#: What this invocation has committed so far (for the message on an interrupt):
#: episodes of finished jobs, the running job's runner, the output directory.
SAVED: dict[str, Any] = {"episodes": 0, "runner": None, "out": None}
#: Output directories this invocation wrote (``judge=NAME`` judges them after the run).
OUTS: list[str] = []


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="run episodes (Hydra overrides, e.g. suite=NAME split=SPLIT planner=oracle)",
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
    from harness.cli import judge

    # One invocation's state: a process that calls main() again (tests, a notebook) must not
    # judge, or count as saved, what an earlier invocation wrote.
    SAVED.update(episodes=0, runner=None, out=None)
    OUTS.clear()
    judge.JUDGED.clear()
    # judge=NAME judge.KEY=VALUE: judge the run's answers once it is done (harness/judging.py).
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
    from harness.cli import judge

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
    from harness.tables import experiments
    from harness.run.config import ConfigError, expand_sweeps

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
    from harness.run.config import ConfigError, compose, expand_sweeps

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
        from omegaconf import OmegaConf

        from harness.run.spec import to_run_spec
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
    from harness.util.redact import redact_override

    # Servers the harness starts itself (an experiment's serve.command) do not answer before the run.
    managed = missing is not None and _servers(overrides) is not None
    from harness.params import INVOCATION_SUITES

    # A suite-specific key (a prompt setting) that no job of this invocation uses is refused.
    invocation = INVOCATION_SUITES.set(frozenset(str(c.suite.name) for c in configs if c.get("suite") is not None))
    try:
        for overrides_i, cfg in zip(jobs, configs):
            label = " ".join(redact_override(o) for o in overrides_i)
            try:
                job_ = _prepare(cfg, suites, label)
                prepared.append(job_)
                if missing is not None:
                    missing += [(text, label) for text in _missing_checkpoints(job_.spec)
                                + ([] if managed else _unreachable_servers(job_.spec))]
            except _Missing as exc:
                if missing is None:
                    where = f" (job {label})" if len(configs) > 1 else ""
                    raise UsageError(f"{exc}{where}") from None
                missing += [(text, label) for text in exc.items]
                if exc.spec is not None:  # the job's other prerequisites: its checkpoints, its servers
                    missing += [(text, label) for text in _missing_checkpoints(exc.spec)
                                + ([] if managed else _unreachable_servers(exc.spec))]
            except UsageError as exc:
                where = f" (job {label})" if len(configs) > 1 else ""
                raise UsageError(f"{exc}{where}") from None
    finally:
        INVOCATION_SUITES.reset(invocation)
    if dry_run and missing:
        raise UsageError(_missing_message(missing, len(configs)))
    sequential = sweep = None
    swept = _checkpoint_sweep(overrides)
    if swept is not None:  # +experiment=checkpoint_sweep: a race on selection episodes, then held-out
        from harness.cli import run_sweep

        sweep = run_sweep.plan(prepared, swept)  # checked before any episode runs (exit 2), dry run too
    elif any(job.spec.stopping for job in prepared):  # stopping=sequential: the jobs run in rounds
        from harness.cli import run_sequential

        sequential = run_sequential.plan(prepared)  # checked before any episode runs (exit 2), dry run too
    if dry_run:
        _print_plan(prepared)
        return 0
    experiment = _experiment_name(overrides)
    trackers = _build_trackers(prepared)
    servers = _servers(overrides)  # an experiment's policy servers, one variant at a time
    failed = 0
    try:
        for i, job in enumerate(prepared):
            job.position = f"[{i + 1}/{len(prepared)}] " if len(prepared) > 1 else ""
            job.experiment = experiment
        if sequential is not None:
            from harness.cli import run_sequential

            failed += run_sequential.run(sequential, lambda job: _run_job(job, servers, trackers))
        if sweep is not None:
            from harness.cli import run_sweep

            failed += run_sweep.run(sweep, lambda job: _run_job(job, servers, trackers))
        for job in prepared if sequential is None and sweep is None else ():
            failed += _run_job(job, servers, trackers)
        _log_outputs(prepared, trackers, experiment)
    finally:
        if servers is not None:
            servers.stop()
        _close_trackers(trackers)
    return 1 if failed else 0


def _run_job(job: _Job, servers: Any, trackers: dict[Any, Any]) -> int:
    """Run one job's episodes (what it has not stored yet); 1 when it failed, else 0."""
    if servers is not None:
        _serve(servers, job)
    return int(_run_one(job, trackers.get(_tracker_key(job))) != 0)


def _servers(overrides: list[str]) -> Any:
    """``+experiment=NAME`` with ``experiment.serve.command``: its server lifecycle (harness/run/servers.py)."""
    from harness.tables import experiments
    from harness.run import servers

    name, edits, _rest = experiments.split_overrides(overrides)
    if name is None:
        return None
    try:
        return servers.Lifecycle.for_experiment(experiments.load(name, edits))
    except (experiments.ExperimentError, servers.ServeError) as exc:
        raise UsageError(str(exc)) from None


def _checkpoint_sweep(overrides: list[str]) -> Any:
    """``+experiment=NAME`` naming a checkpoint sweep (harness/run/sweep.py), else None."""
    from harness.tables import experiments
    from harness.run.sweep import CheckpointSweep

    name, edits, _rest = experiments.split_overrides(overrides)
    if name is None:
        return None
    try:
        experiment = experiments.load(name, edits)
    except experiments.ExperimentError as exc:
        raise UsageError(str(exc)) from None
    return experiment if isinstance(experiment, CheckpointSweep) else None


def _serve(lifecycle: Any, job: _Job) -> None:
    from harness.run.servers import ServeError

    try:
        lifecycle.enter(job.spec.variant, job.cfg.out, keep=job.keep_serving)
    except ServeError as exc:
        raise UsageError(f"{exc} (finished episodes are saved)") from None


class _Missing(UsageError):
    """Prerequisites of a run that are not here (data, an optional extra, a checkpoint), one
    line each (``items``), and the run's spec where it was read (``spec``: its checkpoints
    and servers are checked too): a dry run lists every one, a run stops with them."""

    def __init__(self, items: list[str], spec: Any = None) -> None:
        items = _one_per_package(items)
        super().__init__("; ".join(items))
        self.items = list(items)
        self.spec = spec


def _one_per_package(items: list[str]) -> list[str]:
    """Lines that name the same missing package the same way (a suite and its oracle both
    needing mujoco) as one: "planner 'oracle' and suite 'eb_manipulation' need the package ..."."""
    import re

    merged: dict[str, list[str]] = {}
    order: list[str] = []
    for item in items:
        m = re.match(r"^(.+?) needs (the package '[^']+'.*)$", item)
        key = m.group(2) if m else item
        if key not in merged:
            order.append(key)
            merged[key] = []
        if m and m.group(1) not in merged[key]:
            merged[key].append(m.group(1))
    out = []
    for key in order:
        who = merged[key]
        out.append(key if not who else f"{who[0]} needs {key}" if len(who) == 1 else
                   f"{', '.join(who[:-1])} and {who[-1]} need {key}")
    return out


def _missing_message(missing: list[tuple[str, str]], jobs: int) -> str:
    """Every missing prerequisite in one message: one line when there is one, else a line each
    (the same text once, with how many of the runs need it)."""
    by_text: dict[str, list[str]] = {}
    for text, label in missing:
        by_text.setdefault(text, [])
        if label not in by_text[text]:
            by_text[text].append(label)
    if len(by_text) == 1:
        (text, labels), = by_text.items()
        return text + (f" (job {labels[0]})" if jobs > 1 and len(labels) == 1 else
                       f" ({len(labels)} of the {jobs} runs)" if jobs > 1 else "")
    lines = [f"{len(by_text)} prerequisites of the requested runs are missing (dry run: nothing was run or written):"]
    for text, labels in by_text.items():
        where = (f"job {labels[0]}" if len(labels) == 1 else f"{len(labels)} of the {jobs} runs") if jobs > 1 else ""
        lines.append(f"  - {text}" + (f" ({where})" if where else ""))
    return "\n".join(lines)


#: Agent parameters that name a server the agent calls (an OpenAI-compatible endpoint, a
#: policy server): the dry run checks that something listens there.
_SERVER_PARAMS = ("base_url", "url")


#: Agent parameters that may name a local checkpoint folder or file (``model`` only when no
#: server is named: a served model's name is the server's business).
_CHECKPOINT_PARAMS = ("model", "adapter", "served_checkpoint")


def _missing_checkpoints(spec: Any) -> list[str]:
    """The checkpoint parameters whose value is a local path (``/``, ``./``, ``../``, ``~``) that
    does not exist: looked up, never read (a Hub id is left to the run)."""
    import os

    out = []
    for name in _CHECKPOINT_PARAMS:
        value = spec.agent_params.get(name)
        if name == "model" and spec.agent_params.get("base_url"):
            continue
        if isinstance(value, str) and value.startswith(("/", "./", "../", "~")) \
                and not os.path.exists(os.path.expanduser(value)):
            out.append(f"variant {spec.variant}: {spec.agent_kind}.params.{name}={value} does not exist")
    return out


def _unreachable_servers(spec: Any, timeout_s: float = 2.0) -> list[str]:
    """The servers the agent's parameters name that accept no connection (a TCP connect to
    host:port, nothing sent): what the dry run reports as missing."""
    import socket
    from urllib.parse import urlsplit

    from harness.util.redact import redact_text

    out = []
    for name in _SERVER_PARAMS:
        value = spec.agent_params.get(name)
        if not isinstance(value, str) or "://" not in value:
            continue
        try:
            parts = urlsplit(value)
            port = parts.port or {"https": 443, "wss": 443}.get(parts.scheme, 80)
            host = parts.hostname
        except ValueError:
            continue
        if not host:
            continue
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            out.append(f"{spec.agent_kind} {spec.agent}: no server answers at {redact_text(value)} "
                       f"({spec.agent_kind}.params.{name}): {type(exc).__name__}: {one_line(exc)}")
    return out


def _close_trackers(trackers: dict[Any, Any]) -> None:
    from harness.run.trackers import call, channel

    for tracker in trackers.values():
        if not channel(tracker, type(tracker).__name__).dead:
            call(tracker, type(tracker).__name__, "closing", tracker.close)


def _experiment_name(overrides: list[str]) -> str | None:
    from pathlib import Path

    from harness.tables import experiments

    name = experiments.split_overrides(overrides)[0]
    return None if name is None else (Path(name).stem if name.endswith((".yaml", ".yml")) or "/" in name else name)


def _tracker_key(job: _Job) -> Any:
    import json

    return None if job.tracker is None else json.dumps(job.tracker, sort_keys=True, default=str)


def _check_tracker(cfg: Any) -> Any:
    """tracker=NAME: (name, its parameters checked against the declaration); None without one."""
    from harness.registry.catalog import TRACKERS
    from harness.params import NoParams, ParamError, parse, values_of
    from harness.registry.loader import MissingDependencyError, UnknownPluginError

    node = cfg.get("tracker")
    if node is None:
        return None
    from omegaconf import OmegaConf

    values = dict(OmegaConf.to_container(node, resolve=True) or {})
    name = values.pop("name", None)
    try:
        plugin = TRACKERS.entry(name)
        parsed = parse(plugin.params or NoParams, values)
    except MissingDependencyError as exc:
        raise _Missing([str(exc)]) from None
    except UnknownPluginError as exc:
        raise UsageError(str(exc)) from None
    except ParamError as exc:
        raise UsageError(exc.of(f"tracker {name}") if exc.unknown else str(exc.at("tracker."))) from None
    return name, values_of(parsed)


def _build_trackers(prepared: list[_Job]) -> dict[Any, Any]:
    """One tracker object per distinct tracker setting of the jobs (a missing extra: one line, nothing run)."""
    from harness.registry.catalog import TRACKERS
    from harness.registry.loader import MissingDependencyError

    out: dict[Any, Any] = {}
    for job in prepared:
        key = _tracker_key(job)
        if key is None or key in out:
            continue
        name, params = job.tracker
        try:
            out[key] = TRACKERS.build(name, **params)
        except MissingDependencyError as exc:
            raise UsageError(str(exc)) from None
        except (TypeError, ValueError, OSError) as exc:
            raise UsageError(f"tracker {name}: {one_line(exc)}") from None
    return out


def _log_outputs(prepared: list[_Job], trackers: dict[Any, Any], experiment: str | None) -> None:
    """After the last job: each output directory's table (Markdown, JSON) and report, to its trackers."""
    import contextlib
    import io
    from pathlib import Path

    from harness.cli.entry import main as cli
    from harness.run.trackers import call, channel

    done: set[tuple[Any, str]] = set()
    for job in prepared:
        key = _tracker_key(job)
        out = str(job.cfg.out)
        if key is None or (key, out) in done:
            continue
        done.add((key, out))
        if channel(trackers[key], job.tracker[0]).dead:  # failed or not answering: warned once already
            continue
        folder = Path(out) / "tracker"
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for fmt, suffix in (("markdown", "md"), ("json", "json")):
            argv = ["table", out, "--format", fmt] + (["--experiment", experiment] if experiment else [])
            text, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
                rc = cli(argv)
            if rc == 0:
                (folder / f"table.{suffix}").write_text(text.getvalue(), encoding="utf-8")
                files[f"table.{suffix}"] = folder / f"table.{suffix}"
        folders = {}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = cli(["report", out])
        if rc == 0:
            folders["report"] = Path(out) / "report"
        call(trackers[key], job.tracker[0], "logging the table and report", trackers[key].log_outputs,
             name=f"table {Path(out).name}", files=files, folders=folders, out=Path(out),
             group=experiment or Path(out).name)


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
    :class:`_Missing` (with the spec, so that the dry run also checks its checkpoints and
    servers); bad input is a :class:`UsageError` at once."""
    import difflib
    import json

    from harness.registry.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
    from harness.run.config import ConfigError, MissingPrerequisite
    from harness.run.spec import to_run_spec
    from harness.registry.extras import missing_extra_message
    from harness.interfaces import action_mismatch
    from harness.registry.loader import MissingDependencyError, UnknownPluginError

    try:
        spec = to_run_spec(cfg)
    except MissingPrerequisite as exc:
        raise _Missing([str(exc)]) from None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    missing: list[str] = []
    try:
        SUITES.entry(spec.suite)
        agent_plugin = registry.entry(spec.agent, spec.suite)
        _setup_executor(EXECUTORS.entry(spec.executor), spec)
    except MissingDependencyError as exc:
        raise _Missing([str(exc)], spec) from None
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
            raise _Missing([f"{spec.suite}/{spec.split}: {reason}"])
        canonical = getattr(suite, "canonical_split", None)  # optional: a split known under another spelling
        if callable(canonical) and canonical(spec.split) != spec.split:
            import dataclasses

            spec = dataclasses.replace(spec, split=str(canonical(spec.split)))  # one run identity for both
        if spec.split not in suite.splits():
            close = difflib.get_close_matches(spec.split, list(suite.splits()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"unknown split {spec.split!r} for suite {spec.suite}{hint} (splits: {', '.join(suite.splits())})")
        # surfaces missing or malformed data before anything starts; a split with no episode
        # (a count of 0, a filter that keeps none) would "succeed" having run nothing
        if not len(suite.episodes(spec.split)):
            from harness.params import fields_of

            decl = SUITES.entry(spec.suite).params
            try:
                defaults = {f.name: f.default for f in fields_of(decl)} if decl is not None else {}
            except (TypeError, ValueError):  # a declaration that is not one dataclass
                defaults = {}
            zeros = [f"suite.params.{k}={v}" for k, v in spec.suite_params.items()
                     if (v == 0 and not isinstance(v, bool) or v in ([], ())) and defaults.get(k) != v]
            raise UsageError(f"{spec.suite}/{spec.split} has no episodes to run"
                             + (f" ({', '.join(zeros)})" if zeros else ""))
    except _Missing as exc:
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
        tracker = _check_tracker(cfg)
    except _Missing as exc:
        missing += exc.items
    if missing:
        raise _Missing(missing, spec)
    # planner=oracle on a suite runs that suite's own oracle (harness.plugins.AgentPlugin.suite).
    # An agent that cannot produce the suite's kind of action is refused before any episode.
    mismatch = action_mismatch(suite, spec.suite, agent_factory, f"{spec.agent_kind} {spec.agent}")
    if mismatch is not None:
        raise UsageError(mismatch)
    return _Job(cfg, spec, suite, label, tracker=tracker)


def _agent_not_installed(plugin: Any, spec: Any) -> list[str]:
    """The agent's, and its chosen groups' plugins' (the ``vlm`` planner's model backend),
    declared modules that are not installed: one line each (harness.registry.extras.not_installed)."""
    from harness.registry.extras import not_installed
    from harness.params import Composite

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
    from harness.registry.loader import load_target

    if plugin.setup is None:
        return
    hook = load_target(plugin, "executor", plugin.setup)
    try:
        hook(dict(spec.executor_params))
    except (ValueError, RuntimeError, OSError) as exc:
        raise UsageError(one_line(exc)) from None


def _run_one(job: _Job, tracker: Any = None) -> int:
    from omegaconf import OmegaConf

    from harness.run import provenance
    from harness.registry.catalog import EXECUTORS, PLANNERS, POLICIES
    from harness.run.executors import SuiteEnvFactory
    from harness.run.runner import Runner
    from harness.store import ResultStore, StoreError

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
    bar = _Progress(f"{spec.variant} · {spec.suite}/{spec.split}", enabled=cfg.progress,
                    batch=spec.batch_size if in_process else spec.num_workers * spec.envs_per_worker)

    from pathlib import Path

    from harness.run.trackers import RunLogger, run_config

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


def failures_text(counts: Mapping[str, int], *, full: bool = False) -> str:
    """The agent's failures as the progress and end lines print them: runtime errors always,
    then timeouts, episodes with output errors (agent outputs that yielded no usable action,
    e.g. unparseable replies), failed episodes an empty plan ended and episodes that ran fallback actions -- every one
    when ``full`` (the end line), the ones that happened otherwise (progress lines)."""
    n = {key: int(counts.get(key, 0)) for key in ("errors", "timeouts", "output_error_episodes",
                                                  "output_errors", "empty_plans", "fallback_episodes")}
    parts = [f"{n['errors']} errors"]
    if full or n["timeouts"]:
        parts.append(f"{n['timeouts']} timeouts")
    if full or n["output_error_episodes"]:
        parts.append(f"{n['output_error_episodes']} with output errors ({n['output_errors']} unusable replies)")
    if full or n["empty_plans"]:
        parts.append(f"{n['empty_plans']} failed on an empty plan")
    if full or n["fallback_episodes"]:
        parts.append(f"{n['fallback_episodes']} with fallback actions")
    return ", ".join(parts)


def _record_failures(record: Any) -> dict[str, int]:
    """One record's contribution to :meth:`harness.store.ResultStore.run_failures`."""
    extra = record.extra if isinstance(getattr(record, "extra", None), dict) else {}
    kind = getattr(record, "error_kind", None)
    output_errors = int(getattr(record, "planner_output_errors", 0) or 0)
    return {"errors": int(kind is not None and kind != "timeout"), "timeouts": int(kind == "timeout"),
            "output_error_episodes": int(output_errors > 0), "output_errors": output_errors,
            "empty_plans": int(bool(getattr(record, "empty_plan", False)) and not getattr(record, "success", False)),
            "fallback_episodes": int(bool(extra.get("fallback_plans")))}


class _Progress:
    """Progress of one job: a rich bar on a terminal; without one (CI, nohup, a cluster job's
    log) a plain line at a bounded rate -- every ``interval_s`` (30 s) even while nothing
    finishes, and when a batch of episodes finishes but at most every ``min_gap_s`` (5 s) --
    with done/total, SR so far, errors and ETA. Once the agent is called, both also show the
    agent calls done and in flight and, when the agent reports token counts (model backends),
    the output tokens per second since the first call started: a long model run shows that
    it works before its first episode ends (the first call's start prints a line)."""

    def __init__(self, label: str, enabled: bool, *, batch: int = 8, interval_s: float = 30.0,
                 min_gap_s: float = 5.0, stream: Any = None):
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.enabled = label, enabled and tty
        self.lines = enabled and not tty
        self.batch, self.interval_s, self.min_gap_s = max(1, int(batch)), interval_s, min_gap_s
        self._progress: Any = None
        self._task: Any = None
        self.ok = self.n = 0
        self.failures: dict[str, int] = {}
        self.total = self.skipped = 0
        self._t0 = self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.calls_started = self.calls_done = 0
        self._first_call: float | None = None
        self.output_tokens: int | None = None  # None until a call reports its tokens

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("SR {task.fields[sr]}"), TextColumn("{task.fields[err]}"),
                TimeRemainingColumn(), TextColumn("{task.fields[calls]}"), transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def start(self, total: int, skipped: int) -> None:
        self.total, self.skipped = total, skipped
        self._t0 = self._last = time.monotonic()
        if self._progress is not None:
            self._task = self._progress.add_task(self.label, total=total, completed=skipped, sr="-", err="0 errors",
                                                 calls=self.calls_text())
        if self.lines and total > skipped:
            self._ticker = threading.Thread(target=self._tick, name="harness-progress", daemon=True)
            self._ticker.start()

    def update(self, record: Any) -> None:
        with self._lock:
            self.n += 1
            self.ok += bool(record.success)
            for key, n in _record_failures(record).items():
                self.failures[key] = self.failures.get(key, 0) + n
            err = failures_text(self.failures)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, sr=f"{100 * self.ok / self.n:.1f}%", err=err)
        elif self.lines and (self.n % self.batch == 0 or self.skipped + self.n == self.total) \
                and time.monotonic() - self._last >= self.min_gap_s:
            self.print_line()

    def call(self, event: str, requests: int, output_tokens: int | None) -> None:
        """The runner's ``on_call``: an agent call ``started`` or ``finished`` (from its threads)."""
        now = time.monotonic()
        with self._lock:
            if event == "started":
                self.calls_started += 1
                first = self._first_call is None
                if first:
                    self._first_call = now
            else:
                self.calls_done += 1
                first = False
                if output_tokens is not None:
                    self.output_tokens = (self.output_tokens or 0) + int(output_tokens)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, calls=self.calls_text())
        elif self.lines and first:
            self.print_line()

    def calls_text(self) -> str:
        """'agent calls 12 done, 2 in flight, 35.1 output tok/s' ('' before the first call; the
        rate only when the agent reports tokens)."""
        now = time.monotonic()
        with self._lock:
            if not self.calls_started:
                return ""
            tokens, done, started, first = self.output_tokens, self.calls_done, self.calls_started, self._first_call
        text = f"agent calls {done} done, {started - done} in flight"
        if tokens is not None:
            text += f", {tokens / max(1e-3, now - (first or now)):.1f} output tok/s"
        return text

    def _tick(self) -> None:
        while not self._stop.wait(max(0.05, self.interval_s - (time.monotonic() - self._last))):
            if time.monotonic() - self._last >= self.interval_s:
                self.print_line()

    def line(self) -> str:
        with self._lock:
            n, ok, errors = self.n, self.ok, failures_text(self.failures)
        elapsed = time.monotonic() - self._t0
        done = self.skipped + n
        left = self.total - done
        eta = _duration(elapsed / n * left) if n else "?"
        sr = f"{100 * ok / n:.1f}%" if n else "-"
        calls = self.calls_text()
        return (f"progress: {self.label} {done}/{self.total} ({100 * done / max(1, self.total):.0f}%), "
                f"SR {sr} of {n} run, {errors}, elapsed {_duration(elapsed)}, ETA {eta}"
                + (f"; {calls}" if calls else ""))

    def print_line(self) -> None:
        self._last = time.monotonic()
        print(self.line(), file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"

