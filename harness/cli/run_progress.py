"""``harness run``'s progress: a bar on a terminal or a plain line at a bounded rate, and the
agent's failures as the progress and end lines print them."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Mapping


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
    """One record's contribution to :meth:`harness.store.database.ResultStore.run_failures`."""
    extra = record.extra if isinstance(getattr(record, "extra", None), dict) else {}
    kind = getattr(record, "error_kind", None)
    output_errors = int(getattr(record, "planner_output_errors", 0) or 0)
    return {"errors": int(kind is not None and kind != "timeout"), "timeouts": int(kind == "timeout"),
            "output_error_episodes": int(output_errors > 0), "output_errors": output_errors,
            "empty_plans": int(bool(getattr(record, "empty_plan", False)) and not getattr(record, "success", False)),
            "fallback_episodes": int(bool(extra.get("fallback_plans")))}


class Progress:
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

    def __enter__(self) -> "Progress":
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

