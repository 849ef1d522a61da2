"""procobject's oracle: the reference answer and evidence (privileged). The blind and
single-frame controls are the ``vlm`` planner with ``planner.params.visual=none`` / ``frame``."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from harness.types import INFO_PRIVILEGED, EpisodeSpec


class ProcObjectOracle:
    name = "procobject_oracle"
    privileged = True
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, **values: Any) -> None:
        pass

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[Any]) -> list[list[str]]:
        return [[json.dumps(r.info[INFO_PRIVILEGED])] for r in requests]
