"""EB-Manipulation prompt text (golden file), example loading, output parsing, fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.interfaces import AgentReply
from planners import eb_manipulation_prompt as P

GOLDEN = Path(__file__).parent / "testdata" / "eb_manipulation_prompt.txt"

INSTRUCTION = "Pick up the star and place it into the cyan container."
COORDS = "{'object 1': [40, 21, 17], 'object 2': [52, 48, 18], 'object 3': [35, 70, 17]}"
HISTORY = [([40, 21, 26, 0, 60, 75, 1], "Task: Pick up the star and place it into the cyan container. Steps executed "
            "so far: 1. The last action was valid. Reward: 0.")]


def _prompt():
    examples = {"pick": ["Instruction: A\nObjects: {}\nAnswer: {}", "Instruction: B\nObjects: {}\nAnswer: {}"],
                "stack": ["Instruction: C"]}
    return P.build_prompt_text(INSTRUCTION, COORDS, "pick", HISTORY, examples, n_shot=4)


def test_prompt_text_matches_the_golden_file():
    """Regenerate after an intended change (and bump PROMPT_VERSION):
    python -m tests.planners.test_eb_manipulation_prompt"""
    assert _prompt() == GOLDEN.read_text()


def test_prompt_structure():
    text = _prompt()
    order = [text.index(s) for s in ("[0, 100]", "ascending order of Y", '"red"', "Example 0: \nInstruction: A",
                                     "Example 1: \nInstruction: B", "Instruction: Pick up the star",
                                     "Objects: {'object 1'", "Output gripper actions:", "Step 0: action [40, 21, 26",
                                     "'executable_plan'")]
    assert order == sorted(order)
    assert "Instruction: C" not in text  # only the episode's task class
    assert "[0, 120]" in text and "3 degrees" in text
    import numpy as np

    msgs = P.build_messages(INSTRUCTION, COORDS, "pick", [], {"pick": []}, image=np.zeros((50, 50, 3), np.uint8),
                            image_size=32)
    assert msgs[0]["role"] == "user" and [c["type"] for c in msgs[0]["content"]] == ["text", "image"]
    assert msgs[0]["content"][1]["image"].size == (32, 32)
    assert [c["type"] for c in P.build_messages(INSTRUCTION, COORDS, "pick", [], {})[0]["content"]] == ["text"]


def test_shipped_examples_are_ours_and_parse():
    ex = P.load_examples()
    assert set(ex) == {"pick", "stack", "place", "wipe"} and all(len(v) == 4 for v in ex.values())
    for cls, items in ex.items():
        for item in items:
            answer = item.split("Answer: ", 1)[1]
            actions = P.parse_actions(answer)
            assert actions and all(len(a) == 7 for a in actions)


def test_examples_in_the_original_file_layout_are_read_without_executing(tmp_path):
    src = tmp_path / "eb_manipulation_example.py"
    src.write_text('import os\nos.system("echo should-not-run")\n'
                   'pick_examples_vlm = ["P0", "P1"]\nstack_examples_vlm = ["S0"]\n'
                   'shape_sorter_examples_vlm = ["Q0"]\nwipe_examples_vlm = ["W0"]\n'
                   'pick_examples_llm = ["L"]\n')
    assert P.load_examples(src) == {"pick": ["P0", "P1"], "stack": ["S0"], "place": ["Q0"], "wipe": ["W0"]}
    bad = tmp_path / "other.py"
    bad.write_text("x = 1\n")
    with pytest.raises(ValueError):
        P.load_examples(bad)


@pytest.mark.parametrize("raw,expected", [
    ('{"executable_plan": "[[1, 2, 3, 4, 5, 6, 1], [7, 8, 9, 10, 11, 12, 0]]"}', [[1, 2, 3, 4, 5, 6, 1], [7, 8, 9, 10, 11, 12, 0]]),
    ('```json\n{"visual_state_description": "x", "executable_plan": [[1, 2, 3, 4, 5, 6, 1]]}\n```', [[1, 2, 3, 4, 5, 6, 1]]),
    ("Sure! {'executable_plan': [[1.0, 2, 3, 4, 5, 6, 0]]} hope it helps", [[1, 2, 3, 4, 5, 6, 0]]),
    ('{"executable_plan": [1, 2, 3, 4, 5, 6, 1]}', [[1, 2, 3, 4, 5, 6, 1]]),
    ('{"executable_plan": "[]"}', []),
    ('{"reasoning_and_reflection": "a "quoted" word", "executable_plan": "[[1, 2, 3, 4, 5, 6, 1]]"}', [[1, 2, 3, 4, 5, 6, 1]]),
])
def test_parse_actions(raw, expected):
    assert P.parse_actions(raw) == expected


@pytest.mark.parametrize("raw", ["", "no json here", '{"plan": []}', '{"executable_plan": "[[1, 2, 3]]"}',
                                 '{"executable_plan": "[[1, 2, 3, 4, 5, 6, 0.5]]"}', '{"executable_plan": 7}',
                                 '{"executable_plan": "[[1, 2, "'])
def test_unparseable_output_is_a_parse_error(raw):
    with pytest.raises(P.ParseError):
        P.parse_actions(raw)


def test_reply_invalid_by_default_and_seeded_random_fallback():
    r = P.reply_from_output("garbage", episode_key=("eb_manipulation", "base", "x", 1))
    assert isinstance(r, AgentReply) and not r.actions and r.output_error and r.raw_output == "garbage"
    pytest.importorskip("mujoco", reason="the random fallback action comes from the EB-Manipulation twin's extra")
    a = P.reply_from_output("garbage", on_bad_output="random", seed=0, episode_key=("s", "b", "x", 1), call_index=2)
    b = P.reply_from_output("garbage", on_bad_output="random", seed=0, episode_key=("s", "b", "x", 1), call_index=2)
    c = P.reply_from_output("garbage", on_bad_output="random", seed=0, episode_key=("s", "b", "x", 1), call_index=3)
    assert a.actions == b.actions and a.actions != c.actions
    (act,) = a.actions
    assert len(act) == 7 and act[6] == 1 and all(0 <= v <= 100 for v in act[:3])
    good = P.reply_from_output('{"executable_plan": [[1, 2, 3, 4, 5, 6, 1]]}')
    assert good.actions == [[1, 2, 3, 4, 5, 6, 1]] and good.output_error is None
    with pytest.raises(ValueError):
        P.reply_from_output("x", on_bad_output="skip")


def test_examples_digest_changes_with_content():
    assert P.examples_digest({"pick": ["a"]}) != P.examples_digest({"pick": ["b"]})


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(_prompt())
