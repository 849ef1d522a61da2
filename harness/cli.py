"""``harness`` command line: ``run``, ``table``, ``list``.

Bad input (unknown suite, bad override, missing data, unreadable store) exits
with status 2 and one line naming the fix; no traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Sequence

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad user input; printed as one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
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
    p_table.add_argument("--baseline", default="base", help="variant the delta column compares against (default: base)")
    p_table.add_argument("--metrics", default="sr,gc", help="comma-separated: sr, gc, progress, plw_sr, plw_gc")
    p_table.add_argument("--by", choices=["task_type"], default=None, help="per-task-type breakdown instead")

    sub.add_parser("list", help="registered suites, planners, policies, executors and config choices")

    p_serve = sub.add_parser(
        "serve-policy", help="serve a registered policy over websockets (openpi and StarVLA protocols)",
        description="e.g. harness serve-policy policy=vla policy.params.checkpoint=/ckpt port=8000 "
        "(loopback by default; host=0.0.0.0 exposes it). See policies/server.py.",
    )
    p_serve.add_argument("overrides", nargs="*", help="policy=NAME, policy.params.KEY=VALUE, host=, port=, max_batch=")

    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args.overrides, args.multirun)
        if args.command == "table":
            return _cmd_table(args)
        if args.command == "serve-policy":
            from policies.server import main as serve_policy

            return serve_policy(args.overrides)
        return _cmd_list()
    except UsageError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("harness: interrupted; finished episodes are saved, rerun the same command to resume", file=sys.stderr)
        return 130


# --- run ------------------------------------------------------------------
def _cmd_run(overrides: list[str], multirun: bool) -> int:
    from harness.config import ConfigError, compose, expand_sweeps

    try:
        jobs = expand_sweeps(overrides) if multirun else [overrides]
        if not multirun and any(_is_sweep(o) for o in overrides):
            raise UsageError(f"{next(o for o in overrides if _is_sweep(o))!r} sweeps several values: add -m")
        configs = [compose(job) for job in jobs]  # validate every job before running any
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    failed = 0
    for i, cfg in enumerate(configs):
        if len(configs) > 1:
            print(f"[{i + 1}/{len(configs)}] {' '.join(jobs[i])}", file=sys.stderr)
        failed += _run_one(cfg) != 0
    return 1 if failed else 0


def _is_sweep(override: str) -> bool:
    value = override.partition("=")[2]
    return "," in value and not value.startswith(("[", "{", "'", '"'))


def _run_one(cfg: Any) -> int:
    from omegaconf import OmegaConf

    from harness import provenance
    from harness.catalog import PLANNERS, POLICIES, SUITES
    from harness.config import ConfigError, to_run_spec
    from harness.executors import SuiteEnvFactory
    from harness.registry import UnknownPluginError
    from harness.runner import Runner
    from harness.store import ResultStore, StoreError

    try:
        spec = to_run_spec(cfg)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    registry = POLICIES if spec.agent_kind == "policy" else PLANNERS
    try:
        SUITES.entry(spec.suite), registry.entry(spec.agent)  # unknown names fail before any work
        suite = SUITES.build(spec.suite, **dict(spec.suite_params))
        if spec.split not in suite.splits():
            import difflib

            close = difflib.get_close_matches(spec.split, list(suite.splits()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"unknown split {spec.split!r} for suite {spec.suite}{hint} (splits: {', '.join(suite.splits())})")
        suite.episodes(spec.split)  # surfaces missing data before anything starts
        agent = registry.build(spec.agent, **dict(spec.agent_params))
    except UnknownPluginError as exc:
        raise UsageError(str(exc)) from None
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise UsageError(_one_line(exc)) from None
    except TypeError as exc:
        raise UsageError(f"bad parameters for {spec.suite}/{spec.agent}: {_one_line(exc)}") from None
    except ValueError as exc:  # malformed data files, bad parameter values
        raise UsageError(f"{spec.suite}/{spec.split}: {_one_line(exc)}") from None
    try:
        store = ResultStore(cfg.out)
    except StoreError as exc:
        raise UsageError(str(exc)) from None

    env_factory = SuiteEnvFactory(spec.suite, dict(spec.suite_params)) if spec.executor == "process" else None
    prov = provenance.collect(OmegaConf.to_container(cfg, resolve=True), agent.identity())
    bar = _Progress(f"{spec.variant} · {spec.suite}/{spec.split}", enabled=cfg.progress)
    runner = Runner(spec, suite, agent, store, env_factory=env_factory, provenance=prov,
                    on_start=bar.start, on_record=bar.update)
    t0 = time.monotonic()
    try:
        with bar:
            summary = runner.run()
    except StoreError as exc:
        raise UsageError(f"{exc} (finished episodes up to the failure are saved)") from None
    finally:
        store.close()
    done = summary.skipped + summary.finished
    print(
        f"{spec.variant} {spec.suite}/{spec.split}: {summary.finished} episodes run, {summary.skipped} resumed, "
        f"{summary.successes}/{summary.finished} succeeded, {summary.errors} errors, "
        f"{time.monotonic() - t0:.1f}s -> {store.path} (run {summary.run_id}, {done}/{summary.total} done)",
        file=sys.stderr,
    )
    return 0


class _Progress:
    """Rich progress bar: episodes done/total, running SR, errors, ETA."""

    def __init__(self, label: str, enabled: bool):
        self.label, self.enabled = label, enabled and sys.stderr.isatty()
        self._progress: Any = None
        self._task: Any = None
        self.ok = self.n = self.errors = 0

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
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def start(self, total: int, skipped: int) -> None:
        if self._progress is not None:
            self._task = self._progress.add_task(self.label, total=total, completed=skipped, sr="-", err=0)

    def update(self, record: Any) -> None:
        self.n += 1
        self.ok += bool(record.success)
        self.errors += record.error_kind is not None
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, sr=f"{100 * self.ok / self.n:.1f}%", err=self.errors)


# --- table ----------------------------------------------------------------
def _cmd_table(args: argparse.Namespace) -> int:
    from harness import tables
    from harness.store import ResultStore, StoreError

    try:
        with ResultStore(args.outdir, readonly=True) as store:
            df, notes = store.latest_frame()
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if df.empty:
        raise UsageError(f"the store in {args.outdir} holds no episodes yet")
    render = {"markdown": tables.to_markdown, "latex": tables.to_latex, "csv": tables.to_csv}[args.format]
    try:
        if args.by:
            table = tables.breakdown_table(df, by=args.by)
        else:
            metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
            table = tables.transfer_table(df, baseline=args.baseline, metrics=metrics)
    except ValueError as exc:
        raise UsageError(_one_line(exc)) from None
    text = render(table)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
