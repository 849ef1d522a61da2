"""The ``zero`` baseline: LIBERO's dummy action every step.

The no-op of the standard protocol (zero EEF and rotation deltas, gripper
open: see ``envs/libero/protocol.py``). It never reads images, so the runner
lets the env skip rendering. A LIBERO task is never solved by it: SR 0 is the
floor every policy's number sits above.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.interfaces import AgentRequest
from harness.types import EpisodeSpec

#: LIBERO's no-op (source: envs/libero/protocol.py DUMMY_ACTION).
_DUMMY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)


class ZeroPolicy:
    name = "zero"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = False
    replan_steps = None

    def __init__(self, chunk: int = 10, action: Sequence[float] | None = None, **_: Any) -> None:
        if int(chunk) < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        #: Actions per call: only the number of round trips; the executed actions are the same.
        self.chunk = int(chunk)
        self.action = [float(x) for x in (action if action is not None else _DUMMY)]

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "action": self.action}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[list[float]]]:
        return [[list(self.action) for _ in range(self.chunk)] for _ in requests]
