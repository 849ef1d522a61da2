"""``prompt_source=embodiedbench``: the original's EB-Manipulation prompt, read from a user's checkout.

The project ships none of EmbodiedBench's prompt text or examples. With
``prompt_source=embodiedbench`` the planner reads, from the checkout named by
``embodiedbench_dir`` (else ``$EMBODIEDBENCH_DIR``; layout of commit
b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04):

- ``embodiedbench/evaluator/config/system_prompts.py``: ``eb_manipulation_system_prompt``;
- ``embodiedbench/evaluator/config/eb_manipulation_example.py``: ``vlm_examples_baseline``, the
  examples of the main setting (detection boxes, one view, no visual ICL, no multistep:
  evaluator/eb_manipulation_evaluator.py:36-38), per task class (``variation.split('_')[0]``);
- ``embodiedbench/planner/planner_utils.py``: ``template_manip`` (the output layout appended for
  some model families, planner/manip_planner.py:372-374);
- ``embodiedbench/envs/eb_manipulation/eb_man_utils.py``: ``VOXEL_SIZE``, ``ROTATION_RESOLUTION``;
- ``embodiedbench/planner/manip_planner.py``: ``ManipPlanner.process_prompt``, compiled on its own
  (string operations only) and called as ``act`` calls it with ``chat_history`` off (configs/eb-man.yaml
  ``chat_history: 0``), so the system text, the examples, the task line and the history are the
  original's to the character; the message is ``general_prompt + task_prompt`` (manip_planner.py:186).

Everything is read with ``ast`` (literals) or compiled alone (the one method); the sha256 of
everything read enters the planner identity.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.promptkit.checkout import State, checkout_root, literal, methods, string_constant

SYSTEM_PROMPTS = "embodiedbench/evaluator/config/system_prompts.py"
EXAMPLES = "embodiedbench/evaluator/config/eb_manipulation_example.py"
PLANNER_UTILS = "embodiedbench/planner/planner_utils.py"
MANIP_PLANNER = "embodiedbench/planner/manip_planner.py"
MAN_UTILS = "embodiedbench/envs/eb_manipulation/eb_man_utils.py"
REQUIRED = (SYSTEM_PROMPTS, EXAMPLES, PLANNER_UTILS, MANIP_PLANNER, MAN_UTILS)
#: The example mapping of the main setting (eb_manipulation_evaluator.py:12, :36-38).
BASELINE_EXAMPLES = "vlm_examples_baseline"
TASK_CLASSES = ("pick", "stack", "place", "wipe")
#: The per-class example lists of that mapping, for a file that has no mapping (older layouts).
EXAMPLE_LISTS = {"pick": "pick_examples_vlm", "stack": "stack_examples_vlm",
                 "place": "shape_sorter_examples_vlm", "wipe": "wipe_examples_vlm"}


def read_examples(path: str | Path) -> dict[str, list[str]]:
    """The examples per task class of an ``eb_manipulation_example.py`` (read, never executed):
    its ``vlm_examples_baseline`` mapping, else the four per-class lists it names."""
    path = Path(path)
    try:
        table = literal(path, BASELINE_EXAMPLES, dict)
    except ValueError as e:
        if f"no assignment {BASELINE_EXAMPLES}" not in str(e):
            raise
        table = {}
        for cls, var in EXAMPLE_LISTS.items():
            try:
                table[cls] = literal(path, var, list)
            except ValueError as e2:
                if "no assignment" not in str(e2):
                    raise
        if not table:
            raise ValueError(f"{path}: no EB-Manipulation examples ({BASELINE_EXAMPLES} or "
                             f"{', '.join(EXAMPLE_LISTS.values())})") from None
    bad = [k for k, v in table.items() if not (isinstance(v, list) and all(isinstance(x, str) for x in v))]
    if bad:
        raise ValueError(f"{path}: the examples of {', '.join(map(str, bad))} are not a list of strings")
    return {str(k): list(v) for k, v in table.items()}


def history_pairs(history: Sequence[tuple[Any, str]]) -> list[list[Any]]:
    """``[action, env feedback]`` per executed action, as the original's ``update_info`` keeps them
    (manip_planner.py:418-421), the action as plain Python numbers (a JSON-parsed list there)."""
    return [[plain_action(a), fb] for a, fb in history]


def plain_action(action: Any) -> Any:
    if hasattr(action, "tolist"):
        return action.tolist()
    if isinstance(action, (list, tuple)):
        return [v.item() if hasattr(v, "item") else v for v in action]
    return action


class EmbodiedBenchManipulationPrompt:
    """The prompt text of EmbodiedBench's ManipPlanner, from a checkout."""

    def __init__(self, root: str | Path | None) -> None:
        self.root = checkout_root(str(root) if root else None, REQUIRED)
        p = {k: self.root / k for k in REQUIRED}
        self.system_prompt = string_constant(p[SYSTEM_PROMPTS], "eb_manipulation_system_prompt")
        self.template = string_constant(p[PLANNER_UTILS], "template_manip")
        self.examples = read_examples(p[EXAMPLES])
        missing = [c for c in TASK_CLASSES if c not in self.examples]
        if missing:
            raise ValueError(f"{p[EXAMPLES]}: {BASELINE_EXAMPLES} has no {', '.join(missing)}")
        constants = {n: literal(p[MAN_UTILS], n, int) for n in ("VOXEL_SIZE", "ROTATION_RESOLUTION")}
        fns, source = methods(p[MANIP_PLANNER], "ManipPlanner", ("process_prompt",), constants)
        self._process_prompt = fns["process_prompt"]
        blob = json.dumps([self.system_prompt, self.template, self.examples, constants, source],
                          ensure_ascii=False, sort_keys=True).encode()
        #: sha256 of everything read from the checkout.
        self.sha256 = hashlib.sha256(blob).hexdigest()

    def text(self, instruction: str, coords_text: str, task_class: str, history: Sequence[tuple[Any, str]],
             n_shot: int, output_template: bool) -> str:
        """The text of one call: ``process_prompt`` (manip_planner.py:42-64, ``chat_history`` off),
        ``"\\n\\n" + template_manip`` where the family gets it (:372-374), joined as in :186."""
        state = State(system_prompt=self.system_prompt, examples=self.examples, n_shot=n_shot, chat_history=False)
        general, task = self._process_prompt(state, instruction, coords_text, task_class,
                                             prev_act_feedback=history_pairs(history))
        if output_template:
            task += "\n\n"
            task = task + self.template
        return general + task

    def identity(self) -> Mapping[str, Any]:
        return {"source": "embodiedbench", "checkout_sha256": self.sha256}
