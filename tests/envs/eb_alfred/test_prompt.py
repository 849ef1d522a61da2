"""The EB-ALFRED prompt: golden texts of a first and a later call, examples, identity."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.golden import check_golden

from envs.eb_alfred.suite import EBAlfredSuite
from envs.eb_alfred.prompt import (
    DEFAULT_EXAMPLES_DIR, HISTORY_HEADER, PromptBuilder, PromptOptions, action_id_and_text, is_long_horizon,
)

GOLDEN = Path(__file__).parent / "testdata"


def _episode():
    suite = EBAlfredSuite(render=True, generated_per_split=1)
    spec = suite.episodes("seen")[0]
    env = suite.make_env()
    obs, info = env.reset(seed=spec.seed, options={"episode": spec})
    return spec, env, obs


def _check_golden(name: str, text: str) -> None:
    check_golden(GOLDEN / name, text)


def test_first_and_later_call_match_golden_files() -> None:
    spec, env, obs = _episode()
    builder = PromptBuilder()
    first = builder.messages(spec.instruction, obs["actions"], (), obs["image"], is_long_horizon(spec.metadata))
    assert len(first) == 1 and first[0]["role"] == "user"
    parts = first[0]["content"]
    assert [p["type"] for p in parts] == ["image", "text"]  # one image, before the text
    assert parts[0]["image"].size == (500, 500)
    _check_golden("prompt_first_call.txt", parts[1]["text"])

    history = []
    for action in (obs["actions"].index("find a Microwave"), "pick up the Apple"):
        obs, _, _, _, info = env.step(action)
        history.append((action, info["feedback"]))
    later = builder.messages(spec.instruction, obs["actions"], history, obs["image"], False)
    text = later[0]["content"][1]["text"]
    _check_golden("prompt_later_call.txt", text)
    assert text.count("\nStep ") == 2
    assert f"Step 1, action id {obs['actions'].index('pick up the Apple')}, pick up the Apple, env feedback: " in text


def test_prompt_layout_follows_the_protocol() -> None:
    actions = ["find a Apple", "pick up the Apple", "put down the object in hand"]
    builder = PromptBuilder(options=PromptOptions(num_examples=2, output_template=False))
    text = builder.text("Put the apple away.", actions, (), long_horizon=False)
    assert "(0 ~ 2)" in text
    assert ", \naction id 1: pick up the Apple, \naction id 2" in text
    assert "## Task Execution Example 0: \n " in text and "## Task Execution Example 1: \n " in text
    assert "## Task Execution Example 2" not in text
    assert text.count("\n\n## Now the human instruction is: Put the apple away.") == 1
    assert HISTORY_HEADER not in text
    later = builder.text("Put the apple away.", actions, [(1, "Last action executed successfully.")], False)
    assert later.startswith(text.split("\n\n## Now")[0])
    assert (HISTORY_HEADER + "\nStep 0, action id 1, pick up the Apple, env feedback: Last action executed "
            "successfully.") in later
    assert action_id_and_text(actions, "Pick up the apple.") == (1, "pick up the Apple")
    assert action_id_and_text(actions, "fly away")[0] == -1


def test_long_horizon_uses_its_own_examples_and_identity_tracks_examples(tmp_path: Path) -> None:
    builder = PromptBuilder()
    assert len(builder.examples) == 10 and len(builder.long_horizon_examples) == 7
    actions = ["find a Apple"]
    lh = builder.text("x", actions, (), long_horizon=True)
    assert builder.long_horizon_examples[0] in lh and builder.examples[0] not in lh
    assert is_long_horizon({"style": "long_horizon"}) and is_long_horizon({"subset": "long_horizon"})
    assert not is_long_horizon({"style": "base"})

    # Another example set changes the identity; so do the protocol options.
    for name in ("alfred_examples.json", "alfred_long_horizon_examples.json"):
        data = json.loads((DEFAULT_EXAMPLES_DIR / name).read_text())
        (tmp_path / name).write_text(json.dumps(data[::-1]))
    other = PromptBuilder(tmp_path)
    assert other.identity()["examples_sha256"] != builder.identity()["examples_sha256"]
    assert PromptBuilder(options=PromptOptions(num_examples=3)).identity() != builder.identity()
    with pytest.raises(FileNotFoundError, match="alfred_examples.json"):
        PromptBuilder(tmp_path / "missing")


def test_embodiedbench_examples_load_from_their_data_folder(data_dir: Path) -> None:
    builder = PromptBuilder(data_dir / "examples")
    assert len(builder.examples) == 10 and len(builder.long_horizon_examples) == 7
    assert builder.identity()["examples_sha256"] != PromptBuilder().identity()["examples_sha256"]


def test_chat_mode_puts_history_in_earlier_turns() -> None:
    actions = ["find a Apple", "pick up the Apple"]
    builder = PromptBuilder(options=PromptOptions(mode="chat", num_examples=1))
    image = np.zeros((32, 32, 3), np.uint8)
    msgs = builder.messages("Take the apple", actions, [(0, "Last action executed successfully.")], image, False,
                            past_outputs=['{"executable_plan": []}'])
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[-1]["content"][0]["type"] == "image"
    single = PromptBuilder(options=PromptOptions(num_examples=1)).messages(
        "Take the apple", actions, [(0, "ok")], image, False, past_outputs=["x"])
    assert len(single) == 1
    with pytest.raises(ValueError, match="mode"):
        PromptOptions(mode="multi")


def test_shipped_examples_are_what_the_generator_writes_today(tmp_path: Path) -> None:
    """The default examples are oracle plans under the current household rules: a rule change
    (e.g. the microwave must be closed before it is turned on) must regenerate them
    (``python -m envs.eb_alfred.make_examples``). Mutation guarded: stale shipped examples."""
    from envs.eb_alfred.make_examples import generate
    from envs.eb_alfred.prompt import DEFAULT_EXAMPLES_DIR, EXAMPLES_FILE, LONG_HORIZON_EXAMPLES_FILE

    generate(tmp_path)
    for name in (EXAMPLES_FILE, LONG_HORIZON_EXAMPLES_FILE):
        assert (tmp_path / name).read_text() == (DEFAULT_EXAMPLES_DIR / name).read_text(), name
