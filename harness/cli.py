"""``harness`` command line: one module per command under :mod:`harness.commands`.

Bad input (unknown suite, bad override, missing data, unreadable store) exits
with status 2 and one line naming the fix; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import time
from typing import Any, Sequence

from harness.commands.common import EXIT_USAGE, UsageError

#: Subcommand -> module of harness.commands (each has ``add_parser(sub)`` and ``main(args)``).
COMMANDS = {"run": "run", "table": "table", "report": "report", "export": "export", "fetch": "fetch",
            "store": "store", "list": "list", "serve-policy": "serve_policy",
            "judge": "judge"}

__all__ = ["main", "UsageError", "EXIT_USAGE", "Terminated"]


class Terminated(KeyboardInterrupt):
    """SIGTERM / SIGHUP, handled like Ctrl-C (SIGINT)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


def main(argv: Sequence[str] | None = None, *, process: bool | None = None) -> int:
    """The CLI. ``process``: this call is the whole process (default: when ``argv`` is None, as
    the ``harness`` script calls it), so it may end the process itself at exit (below)."""
    process = argv is None if process is None else process
    if argv is None:  # the `harness` process itself: third-party warnings go to the run's log
        from harness import console

        console.install()
    status = _main(argv)
    if process:  # the `harness` process itself (not a caller inside Python)
        _exit_cleanly_if_agent_calls_linger(status)
        _exit_if_stopped_with_calls_left(status)
    return status


#: After a stop signal: how long the process waits for the calls it abandoned to end.
STOPPED_CALL_GRACE_S = 2.0


def _exit_if_stopped_with_calls_left(status: int) -> None:
    """After a stop signal (status 128 + signal), end the process at once even when a network
    call the command abandoned is still held by a server (a thread of a call pool, which Python
    would otherwise join at exit for as long as the call's own limit): everything the command
    committed is saved and its stop line printed; output is flushed first."""
    import threading

    if status <= 128:
        return
    deadline = time.monotonic() + STOPPED_CALL_GRACE_S
    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread()):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


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


def package_version() -> str:
    """The installed distribution's version (the source tree's own where it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("embodied-transfer")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        return tomllib.loads(pyproject.read_text())["project"]["version"]


def _command(name: str) -> Any:
    return importlib.import_module(f"harness.commands.{COMMANDS[name]}")


def _main(argv: Sequence[str] | None) -> int:
    parser = _Parser(prog="harness", description="Embodied transfer evaluation harness.")
    parser.add_argument("--version", action="version", version=f"harness {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        _command(name).add_parser(sub)
    args = parser.parse_args(argv)
    handlers = {sig: signal.signal(sig, _raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _command(args.command).main(args)
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
        # The command says what it committed before the signal (run: episodes; judge: verdicts).
        saved_on_stop = getattr(sys.modules.get(f"harness.commands.{COMMANDS[args.command]}"), "saved_on_stop", None)
        kept = (saved_on_stop() if callable(saved_on_stop) else None) or "nothing was written"
        print(f"harness: stopped by {what}; {kept}", file=sys.stderr)
        return 128 + int(signum)
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


if __name__ == "__main__":
    sys.exit(main())
