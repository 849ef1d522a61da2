"""The ``zero`` baseline: LIBERO's dummy action every step.

The no-op of the standard protocol (zero EEF and rotation deltas, gripper
open: see ``envs/libero/protocol.py``). It never reads images, so the runner
lets the env skip rendering. A LIBERO task is never solved by it: SR 0 is the
floor every policy's number sits above.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import EpisodeSpec
from policies.plugin import ZeroParams

#: LIBERO's no-op (source: envs/libero/protocol.py DUMMY_ACTION).
_DUMMY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)


class ZeroPolicy:
    name = "zero"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = False
    replan_steps = None

    Params = ZeroParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        #: Actions per call: only the number of round trips; the executed actions are the same.
        self.chunk = self.params.chunk
        self.action = [float(x) for x in (self.params.action if self.params.action is not None else _DUMMY)]

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[list[float]]]:
        return [[list(self.action) for _ in range(self.chunk)] for _ in requests]
