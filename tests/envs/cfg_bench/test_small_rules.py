"""Smaller cfg_bench rules: a task split in either case is one run; what the prompt says the model
was shown; a JSON list around the multiple-choice object, beside the originals' reading of it."""

from __future__ import annotations

import json

import pytest

from envs.cfg_bench.data import load_questions
from envs.cfg_bench.prompt import build_prompt
from envs.cfg_bench.scoring import extract_choice
from harness.cli.entry import main
from harness.store import ResultStore

OPTS = ["lifts the lid", "pours the water", "stirs the pot"]


def test_a_task_split_in_upper_case_is_the_same_run(cfg_data, tmp_path, capsys):
    out = tmp_path / "fau"
    common = ["suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={out}", "progress=false"]
    assert main(["run", "split=FAU", *common]) == 0
    assert main(["run", "split=fau", *common]) == 0
    assert "1 resumed" in capsys.readouterr().err  # the second names the same run
    runs = ResultStore(out, readonly=True).runs()
    assert list(runs["split"]) == ["fau"] and len(ResultStore(out, readonly=True).frame()) == 1


@pytest.mark.parametrize("visual", ["video", "frame", "none"])
def test_the_prompt_says_what_the_model_sees(cfg_data, visual):
    for q in load_questions(cfg_data):
        text = build_prompt(q, visual=visual)
        assert ("the video you were shown" in text) == (visual == "video")
        assert ("cannot see" in text) == (visual == "none")


def test_the_blind_adapter_asks_the_blind_prompt(cfg_data):
    from envs.cfg_bench.adapter import make_adapter
    from envs.cfg_bench.plugin import CFGBenchPromptParams
    from envs.cfg_bench.suite import CFGBenchSuite
    from harness.interfaces import AgentRequest

    suite = CFGBenchSuite(data_dir=str(cfg_data))
    adapter = make_adapter(CFGBenchPromptParams(visual="none"), None)
    for episode in suite.episodes("all"):
        obs, info = suite.make_env().reset(options={"episode": episode})
        (part,) = adapter.messages(AgentRequest(episode=episode, observation=obs, info=info))[0]["content"]
        assert part["type"] == "text" and "you were shown" not in part["text"] and "cannot see" in part["text"]


def originals_choice(reply: str, options: list[str]) -> str:
    """The originals' reading of a multiple-choice reply, written out (CFG-Bench/CFG-Bench at b50bb6d,
    evaluate/open_source_mllms/eval_qwen_local.py ``parse_json_object`` and ``normalize_close_result``,
    lines 108-134): a non-object becomes {"result": the whole reply}; then exact match, then the first
    option whose text occurs in the result."""
    text = reply.strip()
    try:
        value = json.loads(text)
        obj = value if isinstance(value, dict) else {"result": text}
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        try:
            value = json.loads(text[start:end + 1]) if 0 <= start < end else None
            obj = value if isinstance(value, dict) else {"result": text}
        except ValueError:
            obj = {"result": text}
    result = obj.get("result")
    if not isinstance(result, str):
        return ""
    result = result.strip()
    for option in options:
        if result == option.strip():
            return option
    for option in options:
        if option.strip() and option.strip() in result:
            return option
    return result


@pytest.mark.parametrize("reply,ours,theirs", [
    ('[{"result": "pours the water"}]', "pours the water", "pours the water"),          # alike
    ('[{"result": "stirs the pot", "reason": "it never lifts the lid"}]', "stirs the pot", "lifts the lid"),
    ('[{"result": "stirs the pot"}, {"result": "pours the water"}]', None, "pours the water"),
    ('[{"result": "stirs the pot"}, "pours the water"]', None, "pours the water"),    # a list of two things
])
def test_a_json_list_around_the_object(reply, ours, theirs):
    assert extract_choice(reply, OPTS).choice == ours
    assert originals_choice(reply, OPTS) == theirs
