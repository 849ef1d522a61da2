"""The ``harness`` command: the entry point (:mod:`.entry`) and one module per command."""

from harness.cli.entry import main

__all__ = ["main"]
