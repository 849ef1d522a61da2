"""``prompt_source=embodiedbench``: the paper's exact EB-ALFRED prompt, read from a user's checkout.

The project ships none of EmbodiedBench's prompt text. With
``prompt_source=embodiedbench`` and ``embodiedbench_dir=<checkout>`` the
planner reads, from that checkout (layout of commit
b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04):

- ``embodiedbench/evaluator/config/system_prompts.py``: ``alfred_system_prompt``
  (a string literal, read with ``ast``, not imported);
- ``embodiedbench/evaluator/config/alfred_examples.json`` and
  ``alfred_long_horizon_examples.json`` (the long-horizon subset's examples,
  evaluator/eb_alfred_evaluator.py:13-14, :60);
- ``embodiedbench/planner/planner_utils.py``: ``template`` (the output layout
  appended for some model families, planner/vlm_planner.py:186-187);
- ``embodiedbench/planner/vlm_planner.py``: the methods ``process_prompt`` and
  ``get_availabel_action_prompt`` of ``VLMPlanner``, compiled on their own
  (they use only string operations) and called as EmbodiedBench calls them, so
  the instruction line, the history lines, the id range and the first- and
  later-call requests are the original's to the character.

Only the single-turn layout exists in this form (EmbodiedBench's
``chat_history: False``, its EB-ALFRED setting). The sha256 of everything read
enters the planner identity.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from harness.promptkit.checkout import State, methods, string_constant

SYSTEM_PROMPTS = "embodiedbench/evaluator/config/system_prompts.py"
EXAMPLES = "embodiedbench/evaluator/config/alfred_examples.json"
LONG_HORIZON_EXAMPLES = "embodiedbench/evaluator/config/alfred_long_horizon_examples.json"
PLANNER_UTILS = "embodiedbench/planner/planner_utils.py"
VLM_PLANNER = "embodiedbench/planner/vlm_planner.py"


class EmbodiedBenchPrompt:
    """The prompt text of EmbodiedBench's VLMPlanner, from a checkout at ``root``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        paths = {k: self.root / k for k in (SYSTEM_PROMPTS, EXAMPLES, LONG_HORIZON_EXAMPLES, PLANNER_UTILS,
                                            VLM_PLANNER)}
        missing = [k for k, p in paths.items() if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"embodiedbench_dir {self.root} is not an EmbodiedBench checkout: "
                                    f"missing {', '.join(missing)}")
        self.system_prompt = string_constant(paths[SYSTEM_PROMPTS], "alfred_system_prompt")
        self.template = string_constant(paths[PLANNER_UTILS], "template")
        self.examples = self._examples(paths[EXAMPLES])
        self.long_horizon_examples = self._examples(paths[LONG_HORIZON_EXAMPLES])
        self._fns, source = methods(paths[VLM_PLANNER], "VLMPlanner",
                                     ("get_availabel_action_prompt", "process_prompt"))
        blob = json.dumps([self.system_prompt, self.template, self.examples, self.long_horizon_examples, source],
                          ensure_ascii=False).encode()
        #: sha256 of everything read from the checkout.
        self.sha256 = hashlib.sha256(blob).hexdigest()

    @staticmethod
    def _examples(path: Path) -> list[str]:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise ValueError(f"{path}: expected a JSON list of example strings")
        return data

    def text(self, instruction: str, actions: Sequence[str], feedback: Sequence[tuple[int, str]],
             long_horizon: bool, options: Any) -> str:
        """The user text of one call: ``process_prompt`` (+ ``template`` where the family gets it);
        ``feedback``: (action id, env feedback) of each executed action, oldest first."""
        state = State(system_prompt=self.system_prompt, n_shot=options.num_examples,
                       examples=self.long_horizon_examples if long_horizon else self.examples,
                       actions=list(actions), chat_history=False, language_only=False,
                       use_feedback=bool(options.feedback))
        state.available_action_str = self._fns["get_availabel_action_prompt"](state, list(actions))
        prompt = self._fns["process_prompt"](state, instruction, prev_act_feedback=[list(p) for p in feedback])
        if options.output_template:
            prompt += self.template
        return prompt
