"""The ``harness`` command: the entry point (:mod:`.main`) and one module per command."""

from harness.cli.main import main

__all__ = ["main"]
