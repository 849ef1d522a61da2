"""ALFRED's failure reader: its low-level steps, for ``harness table --by failure``.

Steps: ``GotoLocation X [hint]``, ``PickupObject X``, ``PutObject R``, ``OpenObject`` /
``CloseObject X``, ``ToggleObjectOn`` / ``ToggleObjectOff X``, ``SliceObject X``. A step
is successful when its feedback is ``"Done."`` (the env's feedback on success, and
``"Stopped."`` on its stop action); ``GotoLocation`` is the ``find``, ``PutObject R``
puts down at R, and "No X can be found in this scene." marks X absent. Anything else
(``Stop``, text outside the language) is ``other`` and not judged a failed step. The task
rules are ALFRED's family's (:mod:`envs.household.failures`).
"""

from __future__ import annotations

import re
from typing import Any

from envs.household.failures import AlfredTaskRules, HistoryStep, obj_type

#: The env's feedback on a successful step (and on its stop action).
OK_FEEDBACK = ("Done.", "Stopped.", "")
#: The feedback of a step on an object type the scene does not hold.
ABSENT = re.compile(r"may not exist in this scene|can be found in this scene")
_STEP = re.compile(
    r"^\s*(GotoLocation|PickupObject|PutObject|OpenObject|CloseObject|ToggleObjectOn|ToggleObjectOff|SliceObject)"
    r"\s+([A-Za-z]+)(?:\s+[A-Za-z]+)?\s*$")
_VERBS = {"GotoLocation": "find", "PickupObject": "pick", "PutObject": "put", "OpenObject": "open",
          "CloseObject": "close", "ToggleObjectOn": "on", "ToggleObjectOff": "off", "SliceObject": "slice"}


class LowLevelRules(AlfredTaskRules):
    """ALFRED's low-level steps read as generic steps."""

    def read(self, action: Any, feedback: str) -> HistoryStep:
        action, feedback = str(action), str(feedback)
        m = _STEP.match(action)
        if m is None:
            return HistoryStep("other", None, True, False)
        return HistoryStep(_VERBS[m.group(1)], obj_type(m.group(2)), feedback.strip() in OK_FEEDBACK,
                           bool(ABSENT.search(feedback)))


RULES = LowLevelRules()
