"""Moved to :mod:`harness.promptkit.checkout` (the toolkit suites share lives below the suites);
this name stays for code that imports it from here: it is that same module."""

import sys

import harness.promptkit.checkout as _moved

sys.modules[__name__] = _moved
