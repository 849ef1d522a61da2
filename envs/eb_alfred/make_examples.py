"""Generate the default in-context examples of EB-ALFRED's VLM prompt from oracle runs.

``python -m envs.eb_alfred.make_examples`` plans every episode of the generated
``seen`` split with the oracle (true state, shortest plan) and writes, under
``envs/eb_alfred/examples/``, ``alfred_examples.json`` (10 examples, one per task
type and instruction style as far as they go) and
``alfred_long_horizon_examples.json`` (7 examples of long-horizon style). Each
example is ``"Human instruction: <instruction>\\nOutput: <JSON>"`` with ids of
EB-ALFRED's global 162-action list (EmbodiedBench's examples also refer to the
global list). Episodes whose plans need instance names (``Cabinet_2``), which
the global list lacks, are skipped. Deterministic: same code, same files.

Users can point ``examples_dir`` at EmbodiedBench's ``data/examples`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from envs.eb_alfred.prompt import DEFAULT_EXAMPLES_DIR, EXAMPLES_FILE, LONG_HORIZON_EXAMPLES_FILE

NUM_EXAMPLES = 10  # EmbodiedBench configs/eb-alf.yaml n_shots
NUM_LONG_HORIZON_EXAMPLES = 7  # EmbodiedBench alfred_long_horizon_examples.json holds 7


def example_text(instruction: str, plan: list[str], global_ids: dict[str, int]) -> str:
    steps = [{"action_id": global_ids[a], "action_name": a} for a in plan]
    words = "; ".join(plan)
    output = {
        "language_plan": f"To do this I will: {words}.",
        "executable_plan": steps,
    }
    return f"Human instruction: {instruction.rstrip('.')}.\nOutput: {json.dumps(output)}"


def generate(out_dir: Path = DEFAULT_EXAMPLES_DIR, pool: int = 120) -> tuple[list[str], list[str]]:
    from envs.eb_alfred.executor import ExecutorState, SkillExecutor
    from envs.eb_alfred.expert import expert_plan
    from envs.eb_alfred.generator import generate
    from envs.eb_alfred.episodes import task_from_metadata
    from envs.eb_alfred.skills import SceneVocabulary, global_actions
    from envs.household import build_world

    global_ids = {a: i for i, a in enumerate(global_actions())}
    regular: list[tuple[str, str, str]] = []  # (task type, style, text)
    long_h: list[str] = []
    for spec in generate("seen", pool, 0):
        task = task_from_metadata(spec.metadata)
        world = build_world(int(spec.metadata["floor_plan"]), spec.seed, task)
        plan = expert_plan(SkillExecutor(world, SceneVocabulary(world), ExecutorState()), task)
        if not plan or any(a not in global_ids for a in plan):
            continue
        text = example_text(spec.instruction, list(plan), global_ids)
        if spec.metadata["style"] == "long_horizon":
            long_h.append(text)
        else:
            regular.append((task.task_type, spec.metadata["style"], text))
    # One example per task type first, then distinct (task type, style) pairs, in episode order.
    chosen: list[tuple[str, str, str]] = []
    for ex in regular:
        if ex[0] not in {c[0] for c in chosen}:
            chosen.append(ex)
    for ex in regular:
        if len(chosen) < NUM_EXAMPLES and ex not in chosen and (ex[0], ex[1]) not in {c[:2] for c in chosen}:
            chosen.append(ex)
    examples = [c[2] for c in chosen[:NUM_EXAMPLES]]
    long_h = long_h[:NUM_LONG_HORIZON_EXAMPLES]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / EXAMPLES_FILE).write_text(json.dumps(examples, indent=1) + "\n", encoding="utf-8")
    (out_dir / LONG_HORIZON_EXAMPLES_FILE).write_text(json.dumps(long_h, indent=1) + "\n", encoding="utf-8")
    return examples, long_h


if __name__ == "__main__":
    r, lh = generate()
    print(f"wrote {len(r)} examples and {len(lh)} long-horizon examples to {DEFAULT_EXAMPLES_DIR}")
