"""The conformance checker behind ``harness.testing``: suite and agent checks, the probe agent,
the scripted backend and the suites' invariants. Plugin authors import it from
:mod:`harness.testing`."""
