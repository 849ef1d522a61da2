"""The step feedback the model reads in its history: the original's facts, order and format
(EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04 ``envs/eb_manipulation/EBManEnv.py:237-252``
``get_env_feedback``), in our words. Side by side with the original's function when
``EMBODIEDBENCH_DIR`` names a checkout."""

from __future__ import annotations

import ast
import os
import re
import types
from pathlib import Path

import pytest

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation.env import EBManipulationEnv
from harness.interfaces import InvalidOutput

EBMANENV = "embodiedbench/envs/eb_manipulation/EBManEnv.py"


def _steps():
    """(feedback, reward, failure reason or None) of a valid step, a failed motion, a malformed action."""
    env = EBManipulationEnv(render=False)
    spec = next(e for e in E.episodes("base") if e.metadata["family"] == "pick_cube_shape")
    env.reset(options={"episode": spec})
    out = []
    for action in ([50, 50, 30, 0, 60, 60, 1], [50, 50, 5, 0, 60, 60, 1], [1, 2, 3]):
        _, r, _, _, info = env.step(action)
        out.append((info["feedback"], r))
    env.close()
    return spec.instruction, out


def test_feedback_carries_the_originals_facts_in_its_order():
    """Instruction lower-cased, steps executed (this one included, EBManEnv.py:170), valid / invalid
    with the reason and a full stop (no space after it, :250-251), the reward as Python prints the
    original's (a float, or the int -1 its failure handler sets, :195-198)."""
    instruction, steps = _steps()
    low = instruction.lower()
    (valid, r0), (motion, r1), (malformed, r2) = steps
    assert (r0, r1, r2) == (0.0, -1.0, -1.0)
    assert valid == f"The task under way is to {low} Steps executed so far: 1. The last action was valid. " \
                    "The reward now is 0.0."
    assert motion == (f"The task under way is to {low} Steps executed so far: 2. The last action was invalid. "
                      "The target position is outside the robot's workspace.The reward now is -1.")
    assert malformed.startswith(f"The task under way is to {low} Steps executed so far: 3. The last action was "
                                "invalid. an action has 7 numbers")
    assert malformed.endswith(", got 3.The reward now is -1.")
    env = EBManipulationEnv(render=False)
    env.reset(options={"episode": E.episodes("base")[0]})
    _, r, _, _, info = env.step(InvalidOutput(raw="x", reason="no JSON object"))
    assert info["feedback"].endswith("Steps executed so far: 1. The last action was invalid. no JSON object."
                                     "The reward now is 0.0.")
    env.close()


def _original_feedback():
    root = os.environ.get("EMBODIEDBENCH_DIR")
    src = Path(root or "/nonexistent") / EBMANENV
    if not src.is_file():
        pytest.skip("set EMBODIEDBENCH_DIR to an EmbodiedBench checkout to compare with the original")
    tree = ast.parse(src.read_text())
    fn = next(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body
              if isinstance(n, ast.FunctionDef) and n.name == "get_env_feedback")
    ns: dict = {}
    exec(compile(ast.Module([fn], []), str(src), "exec"), ns)  # noqa: S102 - the original's function
    return ns["get_env_feedback"]


def _slots(text: str, values: list[str]) -> list[int]:
    """Where each value sits in ``text``, searched left to right."""
    at, out = 0, []
    for v in values:
        at = text.index(v, at)
        out.append(at)
        at += len(v)
    return out


def test_feedback_has_the_originals_structure():
    """The original's ``get_env_feedback`` on the same facts (instruction, step count, the failure
    as its exception message, the reward it would hold) fills the same slots in the same order with
    the same text between the last ones: ``<reason>.`` straight before the reward sentence, the
    reward printed alike, a full stop at the end."""
    original = _original_feedback()
    instruction, steps = _steps()
    rewards = (0.0, -1, -1)  # the original's: RLBench's float, the handler's int
    for n, ((ours, _), reward) in enumerate(zip(steps, rewards), start=1):
        m = re.search(r"The last action was invalid\. (.*)\.The reward", ours)
        reason = m.group(1) if m else None
        state = types.SimpleNamespace(episode_language_instruction=instruction, _current_step=n)
        theirs = original(state, True if reason is None else Exception(reason), reward)
        values = [instruction.lower(), f" {n}", *([reason + "."] if reason else []), f" {reward}."]
        a, b = _slots(ours, values), _slots(theirs, values)
        assert a == sorted(a) and b == sorted(b)
        assert ours.endswith(f" {reward}.") and theirs.endswith(f" {reward}.")
        if reason:  # no space between the reason's full stop and the reward sentence, in both
            assert ours[a[2] + len(reason) + 1] != " " and theirs[b[2] + len(reason) + 1] != " "
        assert ("invalid" in ours) == ("invalid" in theirs) and ("valid" in ours) and ("valid" in theirs)
