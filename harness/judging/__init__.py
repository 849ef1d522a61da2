"""The judge stage (``harness judge``, :mod:`.stage`) and the views tables read of its
judgements (:mod:`.views`). ``Verdict`` and ``NotComputed`` are importable from here, the path
judge authors use."""

from harness.judging.stage import NotComputed, Verdict

__all__ = ["NotComputed", "Verdict"]
