"""``harness`` command line: ``run``, ``table``, ``list``.

Bad input (unknown suite, bad override, missing data, unreadable store) exits
with status 2 and one line naming the fix; no traceback.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad user input; printed as one line, exit status 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM / SIGHUP, handled like Ctrl-C (SIGINT)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


#: What this invocation has committed so far (for the message on an interrupt):
#: episodes of finished jobs, the running job's runner, the output directory.
_saved: dict[str, Any] = {"episodes": 0, "runner": None, "out": None}


def main(argv: Sequence[str] | None = None) -> int:
    status = _main(argv)
    if argv is None:  # the `harness` process itself (not a caller inside Python)
        _exit_cleanly_if_agent_calls_linger(status)
    return status


#: How long the CLI waits at exit for abandoned (timed-out) agent calls to stop.
ABANDONED_CALL_GRACE_S = 5.0


def _exit_cleanly_if_agent_calls_linger(status: int) -> None:
    """End the process with ``status`` even when an abandoned agent call is still running.

    A timed-out call is cancelled (``harness.runner.call_cancelled``; the hf backend stops
    generating at its next token), but one may still be inside native code when Python
    exits, and torch then aborts the process (status 134, "terminate called without an
    active exception") after every record was saved. If one is still running after
    :data:`ABANDONED_CALL_GRACE_S`, the process ends with its documented status without
    running native destructors (output flushed first; the store is already closed).
    """
    runner = sys.modules.get("harness.runner")
    if runner is None or runner.wait_for_abandoned(ABANDONED_CALL_GRACE_S):
        return
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (exit 2), like every other user error."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"harness: error: {message} (`{self.prog} --help` lists the options)\n")


def _main(argv: Sequence[str] | None) -> int:
    parser = _Parser(
        prog="harness", description="Embodied transfer evaluation harness."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser(
        "run", help="run episodes (Hydra overrides, e.g. suite=eb_alfred split=seen planner=oracle)",
        description="Run a suite split with an agent. Overrides are Hydra's key=value; "
        "with -m, comma-separated values sweep (e.g. -m planner=oracle,random split=seen,unseen).",
    )
    p_run.add_argument("-m", "--multirun", action="store_true", help="sweep comma-separated override values")
    p_run.add_argument("overrides", nargs="*", help="key=value overrides")

    p_table = sub.add_parser("table", help="print the transfer table of an output directory (reads the store only)")
    p_table.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p_table.add_argument("--format", choices=["markdown", "latex", "csv"], default="markdown")
    p_table.add_argument("--baseline", default=None,
                         help="variant the Δ columns compare against (default: 'base' if present, else no Δ columns)")
    p_table.add_argument("--metrics", default=None,
                         help="comma-separated (default sr,gc): sr, gc, progress, plw_sr, plw_gc, invalid_rate; "
                              "cost per episode: seconds, prompt_tokens, output_tokens")
    p_table.add_argument("--by", choices=["task_type", "failure"], default=None,
                         help="per-task-type breakdown (takes --metrics), or the failure taxonomy "
                              "(harness/failures.py; takes no --metrics/--stats/--columns), instead")
    p_table.add_argument("--columns", choices=["split", "suite"], default=None,
                         help="one column group per suite/split (default) or per suite (the mean over its splits)")
    p_table.add_argument("--stats", action="store_true",
                         help="paired statistics for every Δ: exact McNemar p-value (SR) and paired bootstrap "
                              "95%% intervals (ΔSR, ΔGC) over episodes both variants ran")

    p_report = sub.add_parser("report", help="write a static HTML report of an output directory (reads the store only)")
    p_report.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p_report.add_argument("--dest", default=None, help="report file or folder (default: OUTDIR/report/index.html)")
    p_report.add_argument("--baseline", default=None, help="variant for Δ and the paired view (default: 'base' or the first)")

    p_fetch = sub.add_parser("fetch", help="download an official dataset from the model hub into the data cache")
    p_fetch.add_argument("dataset", help="eb_alfred, eb_manipulation, libero, libero_spatial, ... (harness/fetch.py)")
    p_fetch.add_argument("--revision", default=None, help="branch, tag or commit to fetch (default: the locked commit)")
    p_fetch.add_argument("--update", action="store_true", help="re-resolve the branch instead of the locked commit")

    p_store = sub.add_parser("store", help="check a result store, or salvage a damaged one into a new store")
    p_store.add_argument("action", choices=["check", "repair"])
    p_store.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p_store.add_argument("--dest", default=None,
                         help="repair: the new store's output directory (default: OUTDIR-repaired)")

    sub.add_parser("list", help="registered suites, planners, policies, executors and config choices")

    p_serve = sub.add_parser(
        "serve-policy", help="serve a registered policy over websockets (openpi and StarVLA protocols)",
        description="e.g. harness serve-policy policy=vla policy.params.checkpoint=/ckpt port=8000 "
        "(loopback by default; host=0.0.0.0 exposes it). See policies/server.py.",
    )
    p_serve.add_argument("overrides", nargs="*", help="policy=NAME, policy.params.KEY=VALUE, host=, port=, max_batch=")

    args = parser.parse_args(argv)
    handlers = {sig: signal.signal(sig, _raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if args.command == "run":
            return _cmd_run(args.overrides, args.multirun)
        if args.command == "table":
            return _cmd_table(args)
        if args.command == "serve-policy":
            from policies.server import main as serve_policy

            return serve_policy(args.overrides)
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "fetch":
            return _cmd_fetch(args)
        if args.command == "store":
            return _cmd_store(args)
        return _cmd_list()
    except UsageError as exc:
        from harness.redact import redact_text

        print(f"harness: error: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as exc:
        from harness.extras import missing_extra_message

        line = missing_extra_message(exc)
        if line is None:
            raise
        print(f"harness: error: {args.command}: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        what = signal.Signals(signum).name
        if args.command == "run" and _saved["out"] is not None:
            runner = _saved["runner"]
            episodes = _saved["episodes"] + (runner.committed if runner is not None else 0)
            kept = (f"{episodes} episode(s) finished in this invocation are saved in {_saved['out']}; "
                    "rerun the same command to resume")
        else:
            kept = "nothing was written"
        print(f"harness: stopped by {what}; {kept}", file=sys.stderr)
        return 128 + int(signum)
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


# --- run ------------------------------------------------------------------
@dataclass
class _Job:
    """One job of a run or sweep, validated before any job runs."""

    cfg: Any
    spec: Any
    suite: Any
    label: str
    #: "[2/6] " in a sweep: printed with the label once the job's agent is built.
    position: str = ""


def _cmd_run(overrides: list[str], multirun: bool) -> int:
    from harness.config import ConfigError, compose, expand_sweeps

    try:
        jobs = expand_sweeps(overrides) if multirun else [overrides]
        if not multirun and any(_is_sweep(o) for o in overrides):
            raise UsageError(f"{next(o for o in overrides if _is_sweep(o))!r} sweeps several values: add -m")
        configs = [compose(job) for job in jobs]
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _check_per_variant_settings(overrides, configs)
    # Every job is checked (names, parameters, splits, data paths) before the first episode runs.
    suites: dict[str, Any] = {}
    prepared = []
    from harness.redact import redact_override

    for overrides_i, cfg in zip(jobs, configs):
        label = " ".join(redact_override(o) for o in overrides_i)
        try:
            prepared.append(_prepare(cfg, suites, label))
        except UsageError as exc:
            where = f" (job {label})" if len(configs) > 1 else ""
            raise UsageError(f"{exc}{where}") from None
    failed = 0
    for i, job in enumerate(prepared):
        job.position = f"[{i + 1}/{len(prepared)}] " if len(prepared) > 1 else ""
        failed += _run_one(job) != 0
    return 1 if failed else 0


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


def check_params(factory: Callable[..., Any], params: dict[str, Any], what: str) -> None:
    """UsageError naming unknown parameters (with did-you-mean) and the accepted ones.

    A mistyped checkpoint setting must not be ignored: it would also leave the
    run identity unchanged. Factories taking ``**kwargs`` are not checked.
    """
    import difflib
    import inspect

    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    accepted = [n for n, p in sig.parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"]
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    unknown = [k for k in params if k not in accepted]
    if unknown:
        close = difflib.get_close_matches(unknown[0], accepted, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown parameter {unknown[0]!r} for {what}{hint} "
                         f"(accepted: {', '.join(accepted) or 'none'})")
    for key, value in params.items():
        _check_param_value(key, value, what)
    validate = getattr(factory, "check_params", None)
    if callable(validate):  # an agent's own checks (paths exist, values in range)
        try:
            validate(**params)
        except (ValueError, FileNotFoundError, TypeError) as exc:
            raise UsageError(f"{what}: {_one_line(exc)}") from None


#: Suite / agent parameters that count something and must be >= 1 where given
#: (null keeps the suite's or agent's default). Checked for every suite and agent,
#: before anything is built.
_COUNT_PARAMS = ("max_new_tokens", "image_size", "trials", "max_steps", "batch_size", "max_concurrency",
                 "replan_steps", "max_plan_length")
#: ... and those that must be >= 0.
_NON_NEGATIVE_PARAMS = ("num_examples", "max_retries", "manipulation_shots", "alfred_k")


def _check_param_value(key: str, value: Any, what: str) -> None:
    import math

    if value is None or isinstance(value, bool) or key not in _COUNT_PARAMS + _NON_NEGATIVE_PARAMS:
        return
    low = 1 if key in _COUNT_PARAMS else 0
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < low or value != int(value):
        raise UsageError(f"{what}: {key} must be a whole number >= {low}, got {value!r}")


def _prepare(cfg: Any, suites: dict[str, Any], label: str) -> _Job:
    import dataclasses
    import difflib
    import json

    from harness.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
    from harness.config import ConfigError, to_run_spec
    from harness.interfaces import action_mismatch
    from harness.registry import MissingDependencyError, UnknownPluginError

    try:
        spec = to_run_spec(cfg)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    try:
        SUITES.entry(spec.suite), registry.entry(spec.agent), EXECUTORS.entry(spec.executor)
        if spec.executor == "ray":
            import importlib.util

            if importlib.util.find_spec("ray") is None:
                raise UsageError("executor=ray needs Ray: pip install -e '.[ray]'")
            from harness.executors_ray import RayConnectError, ensure_ray

            try:  # join the cluster before any store or run exists (the executor then reuses it)
                ensure_ray(cfg.executor.get("address"))
            except RayConnectError as exc:
                raise UsageError(str(exc)) from None
        key = json.dumps([spec.suite, dict(spec.suite_params)], sort_keys=True, default=str)
        suite = suites.get(key)
        if suite is None:
            factory = SUITES.load(spec.suite)
            check_params(factory, dict(spec.suite_params), f"suite {spec.suite}")
            suite = suites[key] = factory(**dict(spec.suite_params))
        if spec.split not in suite.splits():
            close = difflib.get_close_matches(spec.split, list(suite.splits()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"unknown split {spec.split!r} for suite {spec.suite}{hint} (splits: {', '.join(suite.splits())})")
        suite.episodes(spec.split)  # surfaces missing or malformed data before anything starts
        # A suite may name its own implementation of a generic agent (planner=oracle on
        # eb_manipulation runs eb_manipulation_oracle); the row label stays the generic name.
        alias = dict(getattr(suite, "agent_aliases", {}) or {}).get(spec.agent)
        if alias is not None:
            spec = dataclasses.replace(spec, agent=alias)
        registry.entry(spec.agent)
        check_params(registry.load(spec.agent), dict(spec.agent_params), f"{spec.agent_kind} {spec.agent}")
        # An agent that cannot produce the suite's kind of action is refused before any episode.
        mismatch = action_mismatch(suite, spec.suite, registry.load(spec.agent), f"{spec.agent_kind} {spec.agent}")
        if mismatch is not None:
            raise UsageError(mismatch)
    except (UnknownPluginError, MissingDependencyError) as exc:
        raise UsageError(str(exc)) from None
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise UsageError(_one_line(exc)) from None
    except OSError as exc:
        raise UsageError(f"{spec.suite}/{spec.split}: cannot read its data: {_one_line(exc)}") from None
    except TypeError as exc:
        raise UsageError(f"bad parameters for {spec.suite}/{spec.agent}: {_one_line(exc)}") from None
    except ValueError as exc:  # malformed data files, bad parameter values
        raise UsageError(f"{spec.suite}/{spec.split}: {_first_lines(exc)}") from None
    except (IndexError, KeyError) as exc:  # e.g. suite.params.tasks=[99] on a 10-task suite
        raise UsageError(f"bad parameters for suite {spec.suite}: {type(exc).__name__}: {_one_line(exc)} "
                         f"({json.dumps(dict(spec.suite_params), default=str)})") from None
    return _Job(cfg, spec, suite, label)


def _run_one(job: _Job) -> int:
    from omegaconf import OmegaConf

    from harness import provenance
    from harness.catalog import PLANNERS, POLICIES
    from harness.executors import SuiteEnvFactory
    from harness.runner import Runner
    from harness.store import ResultStore, StoreError

    cfg, spec, suite = job.cfg, job.spec, job.suite
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    try:
        agent = registry.build(spec.agent, **dict(spec.agent_params))
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise UsageError(f"{spec.agent_kind} {spec.agent}: {_one_line(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"bad parameters for {spec.agent_kind} {spec.agent}: {_one_line(exc)}") from None
    except ModuleNotFoundError:
        raise  # a missing optional extra: _main names the extra
    except Exception as exc:  # a checkpoint that does not load (OSError from the hub client, ...)
        raise UsageError(f"cannot build {spec.agent_kind} {spec.agent}: {type(exc).__name__}: {_one_line(exc)}") from None
    if job.position:
        print(f"{job.position}{job.label}", file=sys.stderr)
    try:
        store = ResultStore(cfg.out)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    _saved["out"] = str(store.path.parent)

    env_factory = SuiteEnvFactory(spec.suite, dict(spec.suite_params)) if spec.executor != "local" else None
    share_cores = getattr(agent, "share_cores", None)  # an in-process model leaves env workers their cores
    if callable(share_cores):
        share_cores(0 if spec.executor == "local" else spec.num_workers)
    prov = provenance.collect(OmegaConf.to_container(cfg, resolve=True), agent.identity())
    bar = _Progress(f"{spec.variant} · {spec.suite}/{spec.split}", enabled=cfg.progress,
                    batch=spec.batch_size if spec.executor == "local" else spec.num_workers * spec.envs_per_worker)

    def on_record(record: Any) -> None:
        bar.update(record)

    try:
        runner = Runner(spec, suite, agent, store, env_factory=env_factory, provenance=prov,
                        on_start=bar.start, on_record=on_record, keep_records=False)
    except ValueError as exc:
        store.close()
        raise UsageError(f"{spec.agent_kind} {spec.agent}: {_one_line(exc)}") from None
    t0 = time.monotonic()
    _saved["runner"] = runner
    try:
        with bar:
            summary = runner.run()
        stored, successes, errors = store.run_counts(summary.run_id)  # resumed episodes included
    except StoreError as exc:
        raise UsageError(f"{exc} (finished episodes up to the failure are saved)") from None
    finally:
        store.close()
    _saved["episodes"] += runner.committed
    _saved["runner"] = None
    done = summary.skipped + summary.finished
    print(
        f"{spec.variant} {spec.suite}/{spec.split}: {summary.finished} episodes run, {summary.skipped} resumed; "
        f"{successes}/{stored} succeeded, {errors} errors (all stored episodes of this run), "
        f"{time.monotonic() - t0:.1f}s -> {store.path} (run {summary.run_id}, {done}/{summary.total} done)",
        file=sys.stderr,
    )
    return 0


class _Progress:
    """Progress of one job: a rich bar on a terminal; without one (CI, nohup, a cluster job's
    log) a plain line at a bounded rate -- every ``interval_s`` (30 s) even while nothing
    finishes, and when a batch of episodes finishes but at most every ``min_gap_s`` (5 s) --
    with done/total, SR so far, errors and ETA."""

    def __init__(self, label: str, enabled: bool, *, batch: int = 8, interval_s: float = 30.0,
                 min_gap_s: float = 5.0, stream: Any = None):
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.enabled = label, enabled and tty
        self.lines = enabled and not tty
        self.batch, self.interval_s, self.min_gap_s = max(1, int(batch)), interval_s, min_gap_s
        self._progress: Any = None
        self._task: Any = None
        self.ok = self.n = self.errors = 0
        self.total = self.skipped = 0
        self._t0 = self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("SR {task.fields[sr]}"), TextColumn("err {task.fields[err]}"),
                TimeRemainingColumn(), transient=False,
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
            self._task = self._progress.add_task(self.label, total=total, completed=skipped, sr="-", err=0)
        if self.lines and total > skipped:
            self._ticker = threading.Thread(target=self._tick, name="harness-progress", daemon=True)
            self._ticker.start()

    def update(self, record: Any) -> None:
        with self._lock:
            self.n += 1
            self.ok += bool(record.success)
            self.errors += record.error_kind is not None
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, sr=f"{100 * self.ok / self.n:.1f}%", err=self.errors)
        elif self.lines and (self.n % self.batch == 0 or self.skipped + self.n == self.total) \
                and time.monotonic() - self._last >= self.min_gap_s:
            self.print_line()

    def _tick(self) -> None:
        while not self._stop.wait(max(0.05, self.interval_s - (time.monotonic() - self._last))):
            if time.monotonic() - self._last >= self.interval_s:
                self.print_line()

    def line(self) -> str:
        with self._lock:
            n, ok, errors = self.n, self.ok, self.errors
        elapsed = time.monotonic() - self._t0
        done = self.skipped + n
        left = self.total - done
        eta = _duration(elapsed / n * left) if n else "?"
        sr = f"{100 * ok / n:.1f}%" if n else "-"
        return (f"progress: {self.label} {done}/{self.total} ({100 * done / max(1, self.total):.0f}%), "
                f"SR {sr} of {n} run, {errors} errors, elapsed {_duration(elapsed)}, ETA {eta}")

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


# --- table ----------------------------------------------------------------
def _cmd_table(args: argparse.Namespace) -> int:
    from harness.store import ResultStore, StoreError

    try:  # verified once, then read as one snapshot (a run may be writing meanwhile)
        store = ResultStore(args.outdir, readonly=True)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        return _table(args, store)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()


def _table(args: argparse.Namespace, store: Any) -> int:
    from harness import tables

    df, notes = store.latest_frame()
    if df.empty:
        raise UsageError(f"the store in {args.outdir} holds no episodes yet")
    render = {"markdown": tables.to_markdown, "latex": tables.to_latex, "csv": tables.to_csv}[args.format]
    baseline = args.baseline
    if baseline is None:
        if "base" in set(df["variant"].astype(str)):
            baseline = "base"
        elif not args.by:
            # printed after the table: a failure must stay one line (exit 2)
            notes = ["no variant is called 'base', so the table has no Δ columns "
                     "(--baseline NAME compares against NAME)", *notes]
    # Flags a view cannot honour are refused, not ignored (issue 23 §4).
    given = [f for f, on in (("--metrics", args.metrics is not None), ("--stats", args.stats),
                             ("--columns", args.columns is not None)) if on]
    refused = given if args.by == "failure" else [f for f in given if f != "--metrics"] if args.by else []
    if refused:
        raise UsageError(f"--by {args.by} does not take {', '.join(refused)}"
                         + (" (it prints failure classes)" if args.by == "failure" else
                            " (its columns are variants; it has no Δ)"))
    if args.by == "failure":
        return _failure_table(args, df, notes, store)
    metrics = tuple(m.strip() for m in (args.metrics or "sr,gc").split(",") if m.strip())
    try:
        if set(metrics) & set(tables.COST_METRICS):
            df = tables.add_cost_columns(df, store.transcripts(sorted(set(df["run_id"]))))
        if args.by:
            table = tables.breakdown_table(df, by=args.by, metrics=metrics, baseline=baseline)
        else:
            table = tables.transfer_table(df, baseline=baseline, metrics=metrics, columns=args.columns or "split",
                                          stats=args.stats)
    except ValueError as exc:
        raise UsageError(_one_line(exc)) from None
    text = render(table)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _failure_table(args: argparse.Namespace, df: Any, notes: list[str], store: Any) -> int:
    from harness import failures

    if args.format == "latex":
        raise UsageError("--by failure prints markdown or csv")
    tasks = failures.tasks_from_suites(store, df)  # old stores: task params re-derived from the suite
    table = failures.failure_table(df, failures.classify_frame(df, tasks))
    sys.stdout.write(failures.failure_csv(table) if args.format == "csv" else failures.failure_markdown(table))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


# --- report ---------------------------------------------------------------
def _cmd_report(args: argparse.Namespace) -> int:
    from harness.report import build_report
    from harness.store import StoreError

    try:
        path = build_report(args.outdir, dest=args.dest, baseline=args.baseline)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(_one_line(exc)) from None
    print(f"report written to {path}", file=sys.stderr)
    return 0


# --- store ----------------------------------------------------------------
def _cmd_store(args: argparse.Namespace) -> int:
    """``check``: one line and the verdict's exit status (0 sound, 1 damaged, 3 unknown schema
    version, 4 not a harness store; harness.store.EXIT_STATUS). ``repair``: every sound row
    into a new store (the damaged one is left as it is); a file that is not a harness store or
    of an unknown schema is refused with that verdict's status."""
    from pathlib import Path

    from harness.store import RepairRefused, StoreError, inspect_store, repair_store

    try:
        if args.action == "check":
            verdict = inspect_store(args.outdir)
            print(verdict.line(args.outdir), file=sys.stderr)
            return verdict.exit_status
        src = Path(args.outdir)
        dest = Path(args.dest) if args.dest else src.with_name((src.stem if src.suffix == ".sqlite" else src.name)
                                                                + "-repaired")
        report = repair_store(src, dest)
    except RepairRefused as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.verdict.exit_status
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    kept, lost = report.get("episodes")
    dups = report.duplicates
    dropped = (f"; dropped {len(dups)} duplicate episode row(s): {', '.join(dups[:5])}"
               + (f" and {len(dups) - 5} more" if len(dups) > 5 else "")) if dups else ""
    print(f"salvaged {kept} episode(s) ({lost} lost: unreadable, failing their checksum or duplicate) and "
          f"{report.get('transcripts')[0]} transcript row(s) into {dest}{dropped}; `harness table {dest}` reads it, "
          f"and rerunning with out={dest} resumes", file=sys.stderr)
    return 0


# --- fetch ----------------------------------------------------------------
def _cmd_fetch(args: argparse.Namespace) -> int:
    from harness.fetch import FetchError, fetch

    try:
        fetch(args.dataset, revision=args.revision, update=args.update,
              log=lambda line: print(line, file=sys.stderr))
    except FetchError as exc:
        raise UsageError(str(exc)) from None
    return 0


# --- list -----------------------------------------------------------------
def _cmd_list() -> int:
    from harness.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
    from harness.config import CONFIG_DIR

    for registry in (SUITES, PLANNERS, POLICIES, EXECUTORS):
        print(f"{registry.plural}:")
        for entry in registry.entries():
            print(f"  {entry.name:<18} {entry.summary}")
        if not registry.names():
            print("  (none yet)")
    variants = sorted(p.stem for p in (CONFIG_DIR / "variant").glob("*.yaml"))
    print("variants (configs/variant):")
    print("  " + ", ".join(variants))
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _first_lines(exc: BaseException, limit: int = 40) -> str:
    """The message, kept whole when it is a deliberate list (one bad episode per line)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    more = f"\n  ... {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


if __name__ == "__main__":
    sys.exit(main())
