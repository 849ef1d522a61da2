"""harness.check.scripted's scripted model backend: the test chooses the replies, so every built-in
suite's prompt adapter runs through ``planner=vlm`` (messages, parser, records) in a fast test,
without a model."""

from __future__ import annotations

import importlib.util
import json

import pytest

from harness.registry.catalog import SUITES
from harness.cli.entry import main
from harness.store import ResultStore
from harness.check.scripted import ScriptedBackend, conversation_text, scripted_replies


def _plan(*actions):
    return json.dumps({"visual_state_description": "a table", "reasoning_and_reflection": "start",
                       "language_plan": "act", "executable_plan": list(actions)})


#: Per suite: (split, a reply its parser reads as a plan, a word its prompt holds).
READABLE = {
    "eb_alfred": ("seen", _plan({"action_id": 0, "action_name": "find a Cart"}), "action"),
    "alfred": ("seen", "(PickupObject, Apple, CounterTop), (HeatObject, Apple, 0)", "Objects in this room"),
    "eb_manipulation": ("base", _plan([50, 50, 30, 0, 60, 0, 1]), "object"),
    "cfg_bench": ("all", '{"result": "right hand"}', "Options:"),
    "procobject": ("test", '{"answer": "It has boiled.", "evidence": [[0.5, 2.0]]}', "evidence"),
}
#: One-step answer suites: the reply is the answer, passed through by the adapter; one the env
#: can't read is an invalid answer (counted), not a planner output error.
ANSWERS = {"cfg_bench", "procobject"}
#: The fixture of a suite's generated data folder (tests/video_qa_data.py): suite.params.data_dir.
DATA = {"cfg_bench": "cfg_data", "procobject": "po_data"}
GARBAGE = "I am not sure what to do here."


#: Cheaper settings where a suite's episodes are slow (a simulated arm): no camera image (the
#: adapter's image path runs in tests/planners/test_vlm_suites.py with a real tiny model).
CHEAP = {"eb_manipulation": ["limit=1", "suite.params.render=false"]}


def _run(tmp_path, suite: str, split: str, replies, name: str, extra=()) -> tuple[list, list]:
    out = tmp_path / name
    with scripted_replies(replies, name=name):
        assert main(["run", f"suite={suite}", "planner=vlm", "planner.params.backend=scripted",
                     f"planner.params.script={name}", "planner.params.model=scripted-model", f"split={split}",
                     f"out={out}", "progress=false", *CHEAP.get(suite, ["limit=2"]), *extra]) == 0
    with ResultStore(out, readonly=True) as store:
        return store.records(), store.transcripts()


def test_every_suite_with_a_prompt_is_covered():
    built_in = {p.name for p in SUITES.entries() if getattr(p, "prompt", None) and p.target.startswith("envs.")}
    assert built_in == set(READABLE)


@pytest.mark.parametrize("suite", sorted(READABLE))
def test_each_suites_prompt_adapter_runs_through_planner_vlm(tmp_path, suite, request):
    if suite == "eb_manipulation" and importlib.util.find_spec("mujoco") is None:
        pytest.skip("EB-Manipulation needs the eb_manipulation extra (mujoco)")
    split, readable, word = READABLE[suite]
    extra = [f"suite.params.data_dir={request.getfixturevalue(DATA[suite])}"] if suite in DATA else []
    seen: list[str] = []

    def reply(text, schema, call):
        seen.append(text)
        return readable

    records, transcripts = _run(tmp_path, suite, split, reply, "readable", extra)
    assert len(records) == (1 if suite in CHEAP else 2), records
    assert all(r.error_kind is None for r in records), [(r.error_kind, r.error_message) for r in records]
    # The suite's parser read the reply: actions ran, no output error.
    assert all(r.steps > 0 and r.planner_output_errors == 0 for r in records), [
        (r.steps, r.planner_output_errors) for r in records]
    assert transcripts and all(t["raw_output"] == readable for t in transcripts)
    assert seen and word in seen[0]  # the suite's own prompt reached the backend

    records, transcripts = _run(tmp_path, suite, split, GARBAGE, "garbage", extra)
    if suite in ANSWERS:
        assert all(r.error_kind is None and r.invalid_actions == 1 and r.planner_output_errors == 0 for r in records)
    else:
        assert all(r.error_kind is None and r.planner_output_errors >= 1 for r in records)


def test_replies_can_be_a_list_and_unknown_scripts_are_refused():
    with scripted_replies(["one", "two"], name="turns"):
        backend = ScriptedBackend("m", "turns")
        convs = [[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]] * 3
        assert backend.generate(convs) == ["one", "two", "one"]
        assert backend.identity() == {"backend": "scripted", "model": "m", "script": "turns"}
        with pytest.raises(ValueError, match="already registered"):
            with scripted_replies("x", name="turns"):
                pass
    with pytest.raises(ValueError, match="no reply script named 'turns'"):
        ScriptedBackend("m", "turns")
    assert conversation_text([{"role": "user", "content": "plain"}]) == "plain"
