"""The example suite's failure reader (``SuitePlugin.failures``) for ``harness table --by failure``.

The core classifies what any suite shares (success, error, empty plan, unusable output);
this reader names the suite's own class of what is left, from the stored record only:
``walked_away`` when the step limit ended an episode farther from the target than it started.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from harness.interfaces import FailedEpisode

_AT = re.compile(r"You are at (\d+)\.")


class ExampleFailures:
    def task_of(self, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The task facts the runner stores with each record (``extra["task"]``)."""
        return {"start": metadata["start"], "target": metadata["target"]} if "target" in metadata else None

    def classify(self, episode: FailedEpisode) -> str | None:
        if episode.termination != "max_steps" or not episode.task:
            return None
        positions = [int(m.group(1)) for _, feedback in episode.history for m in [_AT.search(str(feedback))] if m]
        if not positions:
            return None
        start, target = int(episode.task["start"]), int(episode.task["target"])
        return "walked_away" if abs(positions[-1] - target) > abs(start - target) else None
