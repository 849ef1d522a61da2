"""What one per-episode value is, read once from the env to the cell (docs/tables.md, "What a
value can be").

A per-episode value (a key of a record's ``values``, of what a suite's ``values(record)``
derives, or of what a judge view adds) is in one of the states of :class:`ValueState`, and
:func:`read_value` is the one rule that reads a raw value into its state and number: the
runner (:mod:`harness.run.runner`'s episode values, which keep the names an env did not
deliver), the record checks (:mod:`harness.run.record_checks`), the conformance checker and the
cells (:func:`harness.scoring.policy.classify`) all read a value through it.

No value is encoded twice: ``None`` is *missing* (the env's, or a stored record's, "no value"),
the marker :data:`AWAITS_SCORE` is *unscored* (an in-memory caller's "a score is still to
come"), and NaN is never "unscored": like an infinity or text it is *not delivered*.
"""

from __future__ import annotations

import enum
import math
from typing import Any


class ValueState(str, enum.Enum):
    """The state of one episode's value for one metric (a ``str`` enum: its value is the word
    tables and exports show)."""

    #: A finite number (or a bool) of its own: counted as itself.
    VALUE = "value"
    #: No value (``None``: the episode errored, gave no answer, or an unusable one): counted as
    #: the metric's ``missing`` value, or left out where that is None.
    MISSING = "missing"
    #: A score still to come that is not the model's to give (a judged value not judged yet, an
    #: unreadable verdict, a failed judge call): left out, shown as the cell's coverage.
    UNSCORED = "unscored"
    #: NaN, an infinity, text or another non-number where a number or None belongs: the env did
    #: not deliver it. The runner makes such an episode an error record (so a stored record never
    #: holds one); a cell counts one an in-memory caller passes as it counts an error record's
    #: value, i.e. as the metric's ``missing`` value.
    NOT_DELIVERED = "not_delivered"
    #: The metric is not about this episode (another suite's, or its ``applies`` value is false):
    #: never read from a value, only given by :func:`harness.scoring.policy.classify`.
    NOT_APPLICABLE = "not_applicable"


class _AwaitsScore:
    """The type of :data:`AWAITS_SCORE` (one instance; copies and pickles stay that instance)."""

    _instance: "_AwaitsScore | None" = None

    def __new__(cls) -> "_AwaitsScore":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "AWAITS_SCORE"

    def __reduce__(self) -> str:
        return "AWAITS_SCORE"


#: The value an in-memory caller (a judge view, a test) puts in a values mapping where an
#: answer awaits a score: read as :attr:`ValueState.UNSCORED`. Never stored: a record's JSON
#: keeps numbers or None (json refuses to write it).
AWAITS_SCORE = _AwaitsScore()

#: The states an env may deliver a value in (the runner stores them: a number, or None).
DELIVERED = frozenset({ValueState.VALUE, ValueState.MISSING})


def read_value(raw: Any) -> tuple[ValueState, float | None]:
    """One raw value's state and number (the number only for :attr:`ValueState.VALUE`).

    ``None`` is MISSING; :data:`AWAITS_SCORE` is UNSCORED; a bool or a finite number (anything
    ``float()`` reads, other than text) is a VALUE; NaN, an infinity, text or anything else is
    NOT_DELIVERED. An *absent* value is not read here: its caller decides what absence means (a
    judged metric's: UNSCORED; another's: MISSING; an env's that owed it: not delivered)."""
    if raw is None:
        return ValueState.MISSING, None
    if raw is AWAITS_SCORE:
        return ValueState.UNSCORED, None
    if isinstance(raw, bool):
        return ValueState.VALUE, float(raw)
    if isinstance(raw, (str, bytes)):  # text is never a number, whatever it spells
        return ValueState.NOT_DELIVERED, None
    try:
        x = float(raw)
    except (TypeError, ValueError, OverflowError):
        return ValueState.NOT_DELIVERED, None
    return (ValueState.VALUE, x) if math.isfinite(x) else (ValueState.NOT_DELIVERED, None)
