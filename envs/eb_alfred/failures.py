"""EB-ALFRED's failure reader: its skill language, for ``harness table --by failure``.

Skills: ``find a X``, ``pick up the X``, ``put down the object in hand``, ``drop the
object in hand``, ``open/close the X``, ``turn on/off the X``, ``slice the X``. An
action is *successful* unless its feedback starts with EB-ALFRED's ``"Last action is
invalid."`` (EmbodiedBench ``EBAlfEnv.get_env_feedback``); an object type is absent when
the feedback says it "may not exist in this scene" (the ``find`` of an object the scene
lacks). The task rules are ALFRED's family's (:mod:`envs.household.failures`).
"""

from __future__ import annotations

import re
from typing import Any

from envs.household.failures import AlfredTaskRules, HistoryStep, obj_type

#: EmbodiedBench ``EBAlfEnv.get_env_feedback``: the prefix of an invalid action's feedback.
INVALID_PREFIX = "Last action is invalid."
#: The feedback of an action on an object type the scene does not hold
#: ("Cannot find X. This object may not exist in this scene. ...").
ABSENT = re.compile(r"may not exist in this scene|can be found in this scene")

_ACTION = re.compile(
    r"^\s*(?P<verb>find (?:a|an)|pick up the|open the|close the|turn on the|turn off the|slice the)\s+(?P<obj>\S+)\s*$"
    r"|^\s*(?P<put>put down the object in hand|drop the object in hand)\s*$",
    re.I,
)
_VERBS = {"find a": "find", "find an": "find", "pick up the": "pick", "open the": "open", "close the": "close",
          "turn on the": "on", "turn off the": "off", "slice the": "slice"}


class SkillRules(AlfredTaskRules):
    """EB-ALFRED's skills read as generic steps (an action id or an unknown text is ``other``)."""

    def read(self, action: Any, feedback: str) -> HistoryStep:
        action, feedback = str(action), str(feedback)
        ok = not feedback.startswith(INVALID_PREFIX)
        m = _ACTION.match(action)
        if m is None:
            return HistoryStep("other", None, ok, False)
        if m.group("put"):
            return HistoryStep("put", None, ok, False)
        verb = _VERBS[" ".join(m.group("verb").casefold().split())]
        return HistoryStep(verb, obj_type(m.group("obj")), ok, bool(ABSENT.search(feedback)))


RULES = SkillRules()
