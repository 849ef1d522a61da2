"""procobject's oracle: the reference answer and evidence (privileged). The blind and
single-frame controls are the ``vlm`` planner with ``planner.params.visual=none`` / ``frame``."""

from __future__ import annotations

import json
from typing import Any

from envs.video_qa import ReferenceOracle


class ProcObjectOracle(ReferenceOracle):
    name = "procobject_oracle"

    def reply(self, request: Any, revealed: Any) -> str:
        return json.dumps(revealed)
