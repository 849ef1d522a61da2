"""What a conformance check tells its caller: the broken rule (:class:`ConformanceError`) or
what it did (:class:`Report`). Shared by every checker module; :mod:`harness.check.conformance`
is the face that re-exports them."""

from __future__ import annotations

from dataclasses import dataclass, field


class ConformanceError(AssertionError):
    """A broken contract; ``str()`` is one line: ``<plugin>: <check>: <what is wrong>``."""


@dataclass
class Report:
    """What a check run did: the checks passed, and what it skipped and why."""

    subject: str
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"{self.subject}: passed {', '.join(self.passed) or 'nothing'}"
        return text + (f"; skipped: {'; '.join(self.skipped)}" if self.skipped else "")
