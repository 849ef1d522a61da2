"""What a finished episode's record must keep before it is stored: the record's own invariants
and the suite's metric declarations (:func:`harness.metric_declaration.value_problems`).

The runner checks every record of an episode that ended without an error
(:func:`problems_of`); a broken rule makes that episode an ``env`` error record whose message
names the suite and the rule (the values it broke are dropped), so a table never shows a value
outside what the suite declared -- an error counts as each metric's ``missing`` value. The
conformance checker (:mod:`harness.check.conformance`) finds the same problems as error records.

The invariants every suite keeps (Gymnasium's ``check_env`` checks the spaces; these are the
harness's episode facts, :mod:`harness.types` ``INFO_*``):

* ``0 <= gc_satisfied <= gc_total`` (a table's GC is then at most 100);
* ``invalid_actions >= 0`` and ``expert_length >= 0`` where known.

A declared metric's value the env gives as NaN, an infinity or text was *not delivered*
(:func:`harness.values.read_value`, the rule the runner read the env's values by): an error
record naming the suite and the metric, never a "missing" value counted as the metric's
``missing`` (None is the env's "no value").
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from harness.metric_declaration import undelivered_problems, value_problems
from harness.scoring.policy import episode_values, suite_scoring
from harness.types import EpisodeRecord


def record_problems(record: EpisodeRecord) -> list[str]:
    """The record's invariants it breaks, one line each naming the suite."""
    where = f"suite {record.suite}"
    out: list[str] = []
    if record.gc_total < 0 or record.gc_satisfied < 0:
        out.append(f"{where}: goal conditions below 0 (gc_satisfied {record.gc_satisfied}, gc_total {record.gc_total})")
    elif record.gc_satisfied > record.gc_total:
        out.append(f"{where}: gc_satisfied {record.gc_satisfied} is above gc_total {record.gc_total}")
    if record.invalid_actions < 0:
        out.append(f"{where}: invalid_actions {record.invalid_actions} is below 0")
    if record.expert_length is not None and not (isinstance(record.expert_length, (int, float))
                                                 and record.expert_length >= 0):
        out.append(f"{where}: expert_length {record.expert_length!r} is not a number >= 0")
    return out


def problems_of(record: EpisodeRecord, undelivered: Mapping[str, Any] | None = None) -> tuple[list[str], set[str]]:
    """What ``record`` (of an episode that ended without an error) breaks: one line per problem,
    and the names of the stored values involved (dropped from the error record). ``undelivered``:
    the values the runner found the env did not deliver as it read them (each name to what the
    env gave; stored as None): those a declared metric reads are named
    (:func:`harness.metric_declaration.undelivered_problems`)."""
    problems = record_problems(record)
    metrics, derive = suite_scoring(record.suite)
    found = undelivered_problems(record.suite, metrics, undelivered or {})
    try:
        values = episode_values(dataclasses.asdict(record), derive)
    except Exception as exc:  # noqa: BLE001 - the suite's own function: named in the record
        problems.append(f"suite {record.suite}: its values(record) raised {type(exc).__name__}: {exc}")
    else:
        # An episode the agent ended (an empty plan) may end before the env delivered any value.
        found += value_problems(record.suite, metrics, values, require=not record.empty_plan)
    return problems + [message for _, message in found], {key for key, _ in found}


def as_error(record: EpisodeRecord, problems: list[str], keys: set[str]) -> EpisodeRecord:
    """``record`` as the ``env`` error record of its broken rules (success False, the values
    involved dropped)."""
    values: dict[str, Any] = {k: (None if k in keys else v) for k, v in record.values.items()}
    message = "; ".join(problems)
    return dataclasses.replace(record, success=False, error_kind="env", error_message=message, values=values)
