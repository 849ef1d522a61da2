"""What every command shares: the usage error (one line, exit 2) and message helpers."""

from __future__ import annotations

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad user input; printed as one line, exit status 2."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def first_lines(exc: BaseException, limit: int = 40) -> str:
    """The message, kept whole when it is a deliberate list (one bad episode per line)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    more = f"\n  ... {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more
