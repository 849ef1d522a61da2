"""``harness`` command line: one module per command under :mod:`harness.cli`.

Bad input (unknown suite, bad override, missing data, unreadable store) exits
with status 2 and one line naming the fix; no traceback. A stop signal (SIGINT, SIGTERM,
SIGHUP) ends a command with one line and status 128 + its number, at most
:data:`STOPPED_CALL_GRACE_S` after that line; a second one, of any kind, ends the process at
once with the first one's status (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import time
from typing import Any, Iterable, Sequence

from harness.cli.common import COMMANDS, EXIT_USAGE, UsageError, summary
from harness.plugins import COMMAND_GROUP, own_entry_points, registered
from harness.registry.extras import missing_extra_message
from harness.util import console, spool
from harness.util.redact import redact_text

#: Commands of other installed packages come from the entry-point group
#: :data:`harness.plugins.COMMAND_GROUP` (this project's policies add ``serve-policy``); the core's
#: are :data:`harness.cli.common.COMMANDS`.
__all__ = ["main", "UsageError", "EXIT_USAGE", "Terminated"]


class Terminated(KeyboardInterrupt):
    """A stop signal: SIGINT (Ctrl-C), SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


#: The signals that stop a command: each ends it with one line and status 128 + its number.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: The first stop signal this process got (its status is 128 + that number), and whether its
#: stop line was printed.
_STOP: dict[str, Any] = {"signum": None, "line": None, "process": False}


def _on_stop_signal(signum: int, _frame: Any) -> None:
    """The first stop signal raises :class:`Terminated` in the main thread (the command stops and
    prints its stop line); any later one, of any kind (a second Ctrl-C during a hung call,
    SIGTERM after SIGINT), raises nothing, so no cleanup is interrupted into a traceback: in the
    ``harness`` process it ends the process at once with the first signal's status, printing
    the stop line first if the command had not printed it yet."""
    if _STOP["signum"] is None:
        _STOP["signum"] = signum
        if not _STOP.get("returned"):
            raise Terminated(signum)
        # The command already returned (the process waits for threads at exit): nothing to
        # interrupt, the process ends now with the signal's status and its line.
    if not _STOP["process"]:  # a caller inside Python: each signal interrupts, as Python's own handler
        raise Terminated(signum)
    _end_now(128 + int(_STOP["signum"]))


def _end_now(status: int) -> None:
    """End the process with ``status`` now: the stop line if it was not printed, output flushed,
    the spool folder removed (``os._exit`` runs no atexit)."""
    import os

    if _STOP["line"] is None and _STOP["signum"] is not None:
        _STOP["line"] = _stop_line(_STOP["signum"], _STOP.get("command"))
        try:
            os.write(2, (_STOP["line"] + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: a reentrant flush from a handler
            pass
    spool.remove_own()
    os._exit(status)


def _stop_line(signum: int, command: str | None) -> str:
    """``harness: stopped by SIGINT; <what the command committed before the signal>``."""
    what = signal.Signals(signum).name
    module = COMMANDS[command][0] if command in COMMANDS else None
    saved_on_stop = getattr(sys.modules.get(module), "saved_on_stop", None) if module else None
    try:
        kept = (saved_on_stop() if callable(saved_on_stop) else None) or "nothing was written"
    except Exception:  # noqa: BLE001 - the line is printed whatever the count's state
        kept = "nothing was written"
    return redact_text(f"harness: stopped by {what}; {kept}")


def main(argv: Sequence[str] | None = None, *, process: bool | None = None) -> int:
    """The CLI. ``process``: this call is the whole process (default: when ``argv`` is None, as
    the ``harness`` script calls it), so it may end the process itself at exit (below)."""
    process = argv is None if process is None else process
    if argv is None:  # the `harness` process itself: third-party warnings go to the run's log
        console.install()
    _STOP.update(signum=None, line=None, command=None, process=process, returned=False)
    status = _main(argv)
    _STOP["returned"] = True
    if process:  # the `harness` process itself (not a caller inside Python)
        if status > 128:  # stopped by a signal: 2 s for whatever is left, abandoned calls included
            _exit_if_stopped_with_calls_left(status)
        else:
            _exit_cleanly_if_agent_calls_linger(status)
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
    calls = sys.modules.get("harness.run.calls")
    if calls is not None and not calls.wait_for_abandoned(STOPPED_CALL_GRACE_S):
        _end_now(status)  # an abandoned agent call still runs (maybe in native code): no finalizers
    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread()):
        _end_now(status)


#: How long the CLI waits at exit for abandoned (timed-out) agent calls to stop.
ABANDONED_CALL_GRACE_S = 5.0


def _exit_cleanly_if_agent_calls_linger(status: int) -> None:
    """End the process with ``status`` even when an abandoned agent call is still running.

    A timed-out call is cancelled (``harness.run.calls.call_cancelled``; the hf backend stops
    generating at its next token), but one may still be inside native code when Python
    exits, and torch then aborts the process (status 134, "terminate called without an
    active exception") after every record was saved. If one is still running after
    :data:`ABANDONED_CALL_GRACE_S`, the process ends with its documented status without
    running native destructors (output flushed first; the store is already closed).
    """
    calls = sys.modules.get("harness.run.calls")
    if calls is None or calls.wait_for_abandoned(ABANDONED_CALL_GRACE_S):
        return
    _end_now(status)


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

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text())["project"]["version"]


def commands() -> dict[str, str]:
    """Every command's module: the core's, then those installed packages register (the first
    registration of a name wins; a core command is never replaced)."""
    found = {name: module for name, (module, _) in COMMANDS.items()}
    for _, name, value in registered(COMMAND_GROUP, own_entry_points()):
        found.setdefault(name, value.partition(":")[0].strip())
    return found


def _chosen(argv: Sequence[str], names: Iterable[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if it names one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in set(names) else None


def _add_commands(sub: Any, modules: dict[str, str], chosen: str | None) -> None:
    """The subcommands: the chosen one with its own parser (its module imported); each other core
    command by its one-line help alone, so nothing of its rooms is imported."""
    for name, module in modules.items():
        if name == chosen or name not in COMMANDS:
            importlib.import_module(module).add_parser(sub)
        else:
            sub.add_parser(name, help=summary(name), add_help=False)


def _main(argv: Sequence[str] | None) -> int:
    # First of all: a stop signal while the commands load (seconds) is one line too.
    # SIGINT ignored (a job started in the background) stays ignored, as Python leaves it.
    handlers = {sig: signal.signal(sig, _on_stop_signal) for sig in STOP_SIGNALS
                if sig != signal.SIGINT or signal.getsignal(sig) is not signal.SIG_IGN}
    command = None
    try:
        parser = _Parser(prog="harness", description="Embodied transfer evaluation harness.")
        parser.add_argument("--version", action="version", version=f"harness {package_version()}")
        sub = parser.add_subparsers(dest="command", required=True)
        modules = commands()
        _add_commands(sub, modules, _chosen(sys.argv[1:] if argv is None else argv, modules))
        args = parser.parse_args(argv)
        command = _STOP["command"] = args.command
        spool.remove_stale()  # the spool folders of harness processes that were killed
        return importlib.import_module(modules[command]).main(args)
    except UsageError as exc:
        print(f"harness: error: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as exc:
        line = missing_extra_message(exc)
        if line is None or command is None:
            raise
        print(f"harness: error: {command}: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        if _STOP["signum"] is None:
            _STOP["signum"] = signum
        signum = _STOP["signum"]
        # The command says what it committed before the signal (run: episodes; judge: verdicts).
        if _STOP["line"] is None:
            _STOP["line"] = _stop_line(signum, command)
            print(_STOP["line"], file=sys.stderr)
        return 128 + int(signum)
    finally:
        if not _STOP["process"]:  # a caller inside Python gets its handlers back; the process keeps
            for sig, old in handlers.items():  # ours to its end (a second signal ends it at once)
                signal.signal(sig, old)


if __name__ == "__main__":
    sys.exit(main())
