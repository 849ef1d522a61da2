"""Moved to :mod:`harness.promptkit.episode_cache` (the toolkit suites share lives below the suites);
this name stays for code that imports it from here: it is that same module."""

import sys

import harness.promptkit.episode_cache as _moved

sys.modules[__name__] = _moved
