"""The conformance checker, as plugin authors import it (docs/writing-a-suite.md).

``check_suite`` and ``check_agent`` run a suite or an agent through the checks a run relies on;
``scripted_replies`` registers a reply script for the ``scripted`` model backend. The checker
itself lives in :mod:`harness.check`.
"""

from harness.check.conformance import (
    AGENT_CHECKS,
    SUITE_CHECKS,
    ConformanceError,
    Report,
    check_agent,
    check_suite,
)
from harness.check.scripted import scripted_replies

__all__ = ["AGENT_CHECKS", "SUITE_CHECKS", "ConformanceError", "Report", "check_agent", "check_suite",
           "scripted_replies"]
