"""The prompt toolkit suites share, below both the suites and the planners.

* :mod:`harness.promptkit.episode_cache` - a bounded, thread-safe per-episode cache (the state
  a prompt adapter or an agent keeps between calls of one episode).
* :mod:`harness.promptkit.family` - per-model-family settings a prompt adapter resolves its
  ``auto`` values with (:class:`harness.interfaces.ModelFacts` ``auto``), and the reply clean-up
  they name.
* :mod:`harness.promptkit.checkout` - reading constants and method bodies from a reference
  checkout's Python source without importing it (a suite's prompt built from the original's
  own files).

``envs/`` imports these, never ``planners/``: a suite's prompt adapter needs no planner package.
(:mod:`harness.promptkit.prompting` holds the adapter-driving loop and the output-size rules.)
"""
