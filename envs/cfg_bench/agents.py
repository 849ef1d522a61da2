"""cfg_bench's reference agents: the oracle (the reference answer, privileged) and random choice.

The blind and single-frame controls are the ``vlm`` planner with the prompt option
``planner.params.prompt.visual=none`` / ``frame`` (docs/cfg_bench.md).
"""

from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

from envs.video_qa import ReferenceOracle
from harness.types import EpisodeSpec


class CFGBenchOracle(ReferenceOracle):
    """The reference answer: ``{"result": <correct option>}`` for MC, the reference text otherwise."""

    name = "cfg_bench_oracle"

    def reply(self, request: Any, revealed: Any) -> str:
        answer = revealed["answer"]
        return json.dumps({"result": answer}) if request.observation["options"] else answer


class CFGBenchRandom:
    """A uniformly random option for MC (seeded by the seed and the question id); an empty
    answer for open-ended questions (the judge then gives it nothing to score)."""

    name = "cfg_bench_random"
    privileged = False
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, seed: int = 0, **values: Any) -> None:
        self.seed = int(seed)

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "seed": self.seed}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[Any]) -> list[list[str]]:
        out = []
        for r in requests:
            options = r.observation["options"]
            if options:
                rng = random.Random(f"cfg_bench_random|{self.seed}|{r.episode.episode_id}")
                out.append([json.dumps({"result": rng.choice(options)})])
            else:
                out.append([""])
        return out
