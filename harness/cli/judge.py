"""``harness judge``: score a store's answers with a judge model (harness/judging/stage.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from harness.cli.common import UsageError, summary
from harness.judging.judges import JudgeError, load_config, split_judge_overrides
from harness.judging.stage import Counts, judge_store


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "judge", help=summary("judge"),
        description="Judge the answers stored in OUT with the suite's rubric through a model backend "
        "(openai server or hf in process). Resumable: a rerun judges only what this judge has not.")
    p.add_argument("out", help="output directory of `harness run` (or its results.sqlite)")
    p.add_argument("overrides", nargs="*", help="judge=NAME (configs/judge/NAME.yaml or a .yaml path) and "
                   "judge.KEY=VALUE overrides, e.g. judge.model=M judge.params.base_url=URL")


#: What this invocation's judging has committed so far (for the message on a stop signal):
#: the verdicts per output directory (``harness run ... judge=NAME`` judges several).
JUDGED: dict[str, Any] = {}


def main(args: argparse.Namespace) -> int:
    JUDGED.clear()
    return run_judge(args.out, args.overrides)


def saved_on_stop() -> str | None:
    """What a stop signal leaves saved, for ``harness: stopped by SIG...; <this>`` (None: nothing)."""
    done = {out: counts.judged for out, counts in JUDGED.items()}
    if not done:
        return None
    where = ", ".join(f"{n} in {out}" for out, n in done.items())
    return (f"{sum(done.values())} verdict(s) judged in this invocation are saved ({where}); "
            "rerun the same command to judge the rest")


def run_judge(out: str, overrides: Sequence[str], writer: str = "harness judge") -> int:
    name, mine, rest = split_judge_overrides(overrides)
    if rest:
        raise UsageError(f"harness judge: unknown argument {rest[0]!r} (expected judge=NAME or judge.KEY=VALUE)")
    if not name:
        raise UsageError("harness judge: judge=NAME is required (a config in configs/judge/ or a .yaml path)")
    counts = JUDGED[out] = Counts()  # filled as verdicts are committed
    try:
        result = judge_store(out, name, mine, print_fn=lambda line: print(line, file=sys.stderr), counts=counts,
                             writer=writer)
    except JudgeError as exc:
        raise UsageError(str(exc)) from None
    return 1 if result.error or result.not_computed else 0


def check_config(overrides: Sequence[str]) -> tuple[str | None, list[str], list[str]]:
    """For ``harness run ... judge=NAME``: the judge part of the command line, its config checked."""
    name, mine, rest = split_judge_overrides(overrides)
    if name is None and mine:
        raise UsageError(f"{mine[0]!r} needs judge=NAME")
    if name is not None:
        try:
            load_config(name, mine)
        except JudgeError as exc:
            raise UsageError(str(exc)) from None
    return name, mine, rest
