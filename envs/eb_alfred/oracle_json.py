"""``oracle_json``: the oracle's plan written as model output and read back by the VLM parser.

A scripted planner that exercises everything between a model and the env
except the model: the oracle's plan (privileged, from the true state) becomes
the JSON text a VLM is asked for (``executable_plan`` entries with the action's
id in the episode's action list), which goes through the real parser
(:mod:`envs.eb_alfred.parse`) and comes back as an :class:`AgentReply`. It must
score exactly what the oracle scores. The oracle is EB-ALFRED's own (its plugin's
target, ``envs.eb_alfred.plugin.ORACLE``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from envs.eb_alfred.parse import PARSER_VERSION, parse_plan
from envs.eb_alfred.plugin import ORACLE, OracleJSONParams
from envs.eb_alfred.prompt import action_id_and_text
from envs.eb_alfred.skills import BASIN_ALIASES
from harness.interfaces import AgentReply, AgentRequest
from harness.params import parse
from harness.registry.loader import load_target
from harness.types import EpisodeSpec

ORACLE_JSON_VERSION = "1"


def listed_form(action: str) -> str:
    """The action as the list writes it: the oracle addresses basins by their engine type
    (``find a SinkBasin``), the list by the skill name (``find a Sink``, skills.BASIN_ALIASES)."""
    for name, basin in BASIN_ALIASES.items():
        if action.endswith(" " + basin):
            return action[: -len(basin)] + name
    return action


def plan_to_output(plan: Sequence[str], actions: Sequence[str], instruction: str = "") -> str:
    """The model-format JSON text of a plan (ids from the episode's action list)."""
    entries = []
    for step in plan:
        action_id, text = action_id_and_text(actions, step)
        if action_id < 0:
            action_id, text = action_id_and_text(actions, listed_form(step))
        entries.append({"action_id": action_id, "action_name": text})
    return json.dumps({
        "visual_state_description": "Not used: this output is scripted from the true state.",
        "reasoning_and_reflection": f"Plan for: {instruction}",
        "language_plan": "; ".join(e["action_name"] for e in entries),
        "executable_plan": entries,
    })


class OracleJSONPlanner:
    """The oracle, round-tripped through the VLM output format and parser."""

    name = "oracle_json"
    privileged = True
    action_kinds = frozenset({"text"})
    reads_images = False

    Params = OracleJSONParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        self.parser = self.params.parser
        self.oracle = load_target(ORACLE, "planner")(max_plan_length=self.params.max_plan_length)

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": ORACLE_JSON_VERSION, "parser_version": PARSER_VERSION,
                "oracle": dict(self.oracle.identity())}

    def reset(self, episode: EpisodeSpec) -> None:
        self.oracle.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        plans = self.oracle.act(requests)
        replies = []
        for r, plan in zip(requests, plans):
            actions = r.observation["actions"]
            text = plan_to_output(plan, actions, r.episode.instruction)
            result = parse_plan(text, actions, self.parser)
            replies.append(result.reply(text))
        return replies
