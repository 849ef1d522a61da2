"""The conformance checker behind ``harness.testing``: the entry points and their verdict
(:mod:`~harness.check.conformance`, :mod:`~harness.check.verdict`), what is checked
(:mod:`~harness.check.targets`), the checkers (:mod:`~harness.check.checker`,
:mod:`~harness.check.shared_checks`, :mod:`~harness.check.suite_checks`,
:mod:`~harness.check.agent_checks`), the probe and wrappers they drive plugins with
(:mod:`~harness.check.probe`), how runs are compared (:mod:`~harness.check.diffs`), the suites'
episode invariants (:mod:`~harness.check.invariants`) and the scripted model backend
(:mod:`~harness.check.scripted`). Plugin authors import it from :mod:`harness.testing`."""
