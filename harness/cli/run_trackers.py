"""``harness run``'s experiment trackers (``tracker=NAME``): each job's setting checked, one
tracker per distinct setting, and after the last job each output directory's table and
report logged to its tracker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.cli import report, table
from harness.cli.common import UsageError, one_line
from harness.cli.run_checks import Missing
from harness.params import NoParams, ParamError, parse, values_of
from harness.registry.catalog import TRACKERS
from harness.registry.extras import missing_extra_message
from harness.registry.loader import MissingDependencyError, UnknownPluginError
from harness.run.trackers import call, channel


def check_tracker(cfg: Any) -> Any:
    """tracker=NAME: (name, its parameters checked against the declaration); None without one."""
    node = cfg.get("tracker")
    if node is None:
        return None
    values = dict(OmegaConf.to_container(node, resolve=True) or {})
    name = values.pop("name", None)
    try:
        plugin = TRACKERS.entry(name)
        parsed = parse(plugin.params or NoParams, values)
    except MissingDependencyError as exc:
        raise Missing([str(exc)]) from None
    except UnknownPluginError as exc:
        raise UsageError(str(exc)) from None
    except ParamError as exc:
        raise UsageError(exc.of(f"tracker {name}") if exc.unknown else str(exc.at("tracker."))) from None
    return name, values_of(parsed)


def tracker_key(job: Any) -> Any:
    """The job's tracker setting as one key (jobs with the same setting share a tracker); None without one."""
    return None if job.tracker is None else json.dumps(job.tracker, sort_keys=True, default=str)


def build_trackers(prepared: list[Any]) -> dict[Any, Any]:
    """One tracker object per distinct tracker setting of the jobs (a missing extra: one line, nothing run)."""
    out: dict[Any, Any] = {}
    for job in prepared:
        key = tracker_key(job)
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


def close_trackers(trackers: dict[Any, Any]) -> None:
    for tracker in trackers.values():
        if not channel(tracker, type(tracker).__name__).dead:
            call(tracker, type(tracker).__name__, "closing", tracker.close)


def _unless_refused(make: Any) -> Any:
    """``make()``, or None where the command doing it would fail with one line (exit 2): bad
    input, an unreadable store, a missing optional extra (harness.cli.entry)."""
    try:
        return make()
    except UsageError:
        return None
    except ModuleNotFoundError as exc:
        if missing_extra_message(exc) is None:
            raise
        return None


def log_outputs(prepared: list[Any], trackers: dict[Any, Any], experiment: str | None) -> None:
    """After the last job: each output directory's table (Markdown, JSON) and report, to its trackers."""
    done: set[tuple[Any, str]] = set()
    for job in prepared:
        key = tracker_key(job)
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
            text = _unless_refused(lambda: table.render(out, fmt, experiment))
            if text is not None:
                (folder / f"table.{suffix}").write_text(text, encoding="utf-8")
                files[f"table.{suffix}"] = folder / f"table.{suffix}"
        folders = {}
        if _unless_refused(lambda: report.write_report(out)) is not None:
            folders["report"] = Path(out) / "report"
        call(trackers[key], job.tracker[0], "logging the table and report", trackers[key].log_outputs,
             name=f"table {Path(out).name}", files=files, folders=folders, out=Path(out),
             group=experiment or Path(out).name)
