"""The judge stage (``harness judge``, :mod:`.stage`), the judges it runs (:mod:`.judges`), what
they return (:mod:`.verdicts`), how far they agree (:mod:`.agreement`) and the views tables read
of their judgements (:mod:`.views`). ``Verdict`` and ``NotComputed`` are importable from here, the path
judge authors use."""

from harness.judging.verdicts import NotComputed, Verdict

__all__ = ["NotComputed", "Verdict"]
