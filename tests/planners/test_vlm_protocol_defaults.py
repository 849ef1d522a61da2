"""Prompt and decoding as EmbodiedBench runs them: per-family defaults, the schema on the wire,
the id range and the later-call request, and ``prompt_source=embodiedbench`` on a checkout."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from envs.eb_manipulation import prompt as manip
from harness.promptkit.family import family_defaults, resolve
from envs.eb_alfred.prompt import OUTPUT_KEYS, OUTPUT_SCHEMA, PromptBuilder, PromptOptions
from tests.helpers import chat_completion, send_json

ACTIONS = ["find a Apple", "pick up the Apple", "find a Fridge", "open the Fridge"]


@pytest.mark.parametrize("model,backend,schema,template,parser", [
    # Local models (model_type local): lmdeploy with the schema, remote_model.py:95-121; the template
    # by name only (vlm_planner.py:186).
    ("/ckpt/Qwen2.5-VL-7B-Instruct-favor", "hf", True, False, "embodiedbench"),
    ("OpenGVLab/InternVL2_5-8B", "hf", True, True, "embodiedbench"),
    ("Qwen/Qwen2-VL-72B-Instruct", "hf", True, True, "embodiedbench"),
    # Remote: gpt :162-184, Qwen2-VL-7B :186-211, Llama-3.2-11B :233-257 -> schema, no template.
    ("gpt-4o", "openai", True, False, "embodiedbench"),
    ("Qwen/Qwen2-VL-7B-Instruct", "openai", True, False, "embodiedbench"),
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", "openai", True, False, "embodiedbench"),
    ("gemini-1.5-pro", "openai", True, False, "embodiedbench"),
    # Qwen2-VL-72B and Llama-3.2-90B through _call_qwen72b: schema and the replacements (:260-288);
    # the 72B also gets the template.
    ("Qwen/Qwen2-VL-72B-Instruct", "openai", True, True, "embodiedbench_remote"),
    ("meta-llama/Llama-3.2-90B-Vision-Instruct", "openai", True, False, "embodiedbench_remote"),
    # Fireworks' 90b (:213-231): json_object with the schema, no replacements.
    ("accounts/fireworks/models/llama-v3p2-90b-vision-instruct", "openai", True, False, "embodiedbench"),
    # InternVL2.5: response_format commented out (:307-313), template, replacements.
    ("OpenGVLab/InternVL2_5-38B", "openai", False, True, "embodiedbench_remote"),
    # claude: no schema (:123-135), template.
    ("claude-3-5-sonnet-20241022", "openai", False, True, "embodiedbench"),
    # A name EmbodiedBench does not know (it raises, :92-93): the schema, as most families get.
    ("favor-sft", "openai", True, False, "embodiedbench"),
])
def test_family_defaults_follow_embodiedbench(model: str, backend: str, schema: bool, template: bool,
                                              parser: str) -> None:
    """EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04 planner/remote_model.py (line numbers
    per case) and planner/vlm_planner.py:185-187."""
    d = family_defaults(model, backend)
    assert (d.json_schema, d.output_template, d.parser) == (schema, template, parser)


def test_auto_true_false() -> None:
    assert resolve("auto", True, "k") is True and resolve(None, False, "k") is False
    assert resolve(False, True, "k") is False and resolve("true", False, "k") is True
    with pytest.raises(ValueError, match="auto, true or false"):
        resolve("yes", True, "k")


def test_schemas_carry_the_original_layout_with_descriptions() -> None:
    """Layouts of generation_guide.py ``vlm_generation_guide`` and generation_guide_manip.py
    ``vlm_generation_guide_manip`` (EmbodiedBench b247936, planner/planner_config/)."""
    for schema, item in ((OUTPUT_SCHEMA, {"action_id": "integer", "action_name": "string"}),
                         (manip.OUTPUT_SCHEMA, {"action": "string"})):
        assert schema["required"] == list(OUTPUT_KEYS)
        props = schema["properties"]
        assert [props[k]["type"] for k in OUTPUT_KEYS] == ["string", "string", "string", "array"]
        items = props["executable_plan"]["items"]
        assert {k: v["type"] for k, v in items["properties"].items()} == item
        assert items["required"] == list(item)
        assert all(props[k]["description"] for k in OUTPUT_KEYS)


def test_first_call_states_the_id_range_and_later_calls_ask_why_the_plan_failed() -> None:
    """EmbodiedBench b247936 planner/vlm_planner.py:57-59 (first call: "output the action id
    (0 ~ N-1)") and :88-90 (later calls: the instruction again, why the last action or plan failed,
    the id range again)."""
    builder = PromptBuilder(options=PromptOptions(num_examples=0, output_template=False))
    first = builder.text("Chill an apple.", ACTIONS, (), long_horizon=False)
    tail = first[first.index("## Now the human instruction is: Chill an apple."):]
    assert "(0 ~ 3)" in tail
    later = builder.text("Chill an apple.", ACTIONS, [(0, "Last action executed successfully.")], False)
    tail = later[later.index("The action history:"):]
    assert "'Chill an apple'" in tail and "why the last action or plan failed" in tail and "(0 ~ 3)" in tail


# --- openai: the schema on the wire -----------------------------------------------------
class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Recorder.bodies.append(body)
        send_json(self, chat_completion(body["model"], '{"executable_plan": []}'))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def recorder():
    pytest.importorskip("openai", reason="the openai client: the `models` extra")
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.bodies = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("model,suite,sent", [
    ("favor-sft", "eb_alfred", OUTPUT_SCHEMA), ("gpt-4o", "eb_manipulation", manip.OUTPUT_SCHEMA),
    ("claude-3-5-sonnet", "eb_alfred", None), ("OpenGVLab/InternVL2_5-78B", "eb_manipulation", None),
])
def test_openai_sends_the_suites_schema_where_embodiedbench_does(recorder: str, model: str, suite: str,
                                                                 sent: Any) -> None:
    """remote_model.py:165-168: ``response_format=dict(type='json_schema', json_schema=dict(
    name='embodied_planning', schema=...))``, the manipulation schema on EB-Manipulation."""
    from tests.helpers import eb_alfred_requests
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite=suite, backend="openai", model=model, base_url=recorder, max_new_tokens=8,
                         num_examples=0, image_size=32, max_retries=0)
    if suite == "eb_alfred":
        planner.act(eb_alfred_requests(1))
    else:
        planner._generate([[{"role": "user", "content": "x"}]], manip.OUTPUT_SCHEMA)
    (body,) = _Recorder.bodies
    if sent is None:
        assert "response_format" not in body
    else:
        assert body["response_format"] == {"type": "json_schema",
                                           "json_schema": {"name": "embodied_planning", "schema": sent}}
    assert planner.identity()["backend"]["json_schema"] is (sent is not None)


# --- prompt_source=embodiedbench -----------------------------------------------------------
FIXTURE_PLANNER = '''
class VLMPlanner():
    def get_availabel_action_prompt(self, available_actions):
        return "|".join(f"<{i}:{a}>" for i, a in enumerate(available_actions))

    def process_prompt(self, user_instruction, prev_act_feedback=[]):
        text = self.system_prompt.format(len(self.actions) - 1, self.available_action_str,
                                         "/".join(self.examples[:self.n_shot]))
        text += f" TASK[{user_instruction}]"
        for i, (a, f) in enumerate(prev_act_feedback):
            text += f" S{i}:{a}:{self.actions[a]}" + (f":{f}" if self.use_feedback else "")
        return text
'''


def write_checkout(root: Path, system: str = "SYS(0 ~ {}) {} EX[{}]") -> Path:
    """A checkout in EmbodiedBench's layout (b247936), with texts and a prompt function of our own."""
    config = root / "embodiedbench/evaluator/config"
    planner = root / "embodiedbench/planner"
    config.mkdir(parents=True, exist_ok=True)
    planner.mkdir(parents=True, exist_ok=True)
    (config / "system_prompts.py").write_text(f"other = 'x'\nalfred_system_prompt = {system!r}\n")
    (config / "alfred_examples.json").write_text(json.dumps(["e0", "e1", "e2"]))
    (config / "alfred_long_horizon_examples.json").write_text(json.dumps(["L0", "L1"]))
    (planner / "planner_utils.py").write_text("template_lang = 'no'\ntemplate = '\\nTEMPLATE'\n")
    (planner / "vlm_planner.py").write_text("import torch\nimport cv2\n" + FIXTURE_PLANNER)
    return root


def test_prompt_source_embodiedbench_reads_the_checkout(tmp_path: Path) -> None:
    root = write_checkout(tmp_path / "eb")
    options = PromptOptions(num_examples=2, output_template=False, source="embodiedbench")
    builder = PromptBuilder(options=options, embodiedbench_dir=root)
    assert builder.text("Chill it", ACTIONS, (), False) == (
        "SYS(0 ~ 3) <0:find a Apple>|<1:pick up the Apple>|<2:find a Fridge>|<3:open the Fridge> EX[e0/e1] "
        "TASK[Chill it]")
    text = builder.text("Chill it", ACTIONS, [(2, "ok"), ("open the Fridge", "bad")], True)
    assert text.endswith("EX[L0/L1] TASK[Chill it] S0:2:find a Fridge:ok S1:3:open the Fridge:bad")
    with_template = PromptBuilder(options=PromptOptions(num_examples=2, output_template=True, source="embodiedbench"),
                                  embodiedbench_dir=root)
    assert with_template.text("Chill it", ACTIONS, (), False).endswith("TASK[Chill it]\nTEMPLATE")
    # What was read enters the identity.
    other = PromptBuilder(options=options, embodiedbench_dir=write_checkout(tmp_path / "eb2", "S2 {} {} {}"))
    assert other.identity()["examples_sha256"] != builder.identity()["examples_sha256"]
    assert builder.identity()["source"] == "embodiedbench"


def test_prompt_source_embodiedbench_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs embodiedbench_dir"):
        PromptBuilder(options=PromptOptions(source="embodiedbench"))
    with pytest.raises(FileNotFoundError, match="not an EmbodiedBench checkout: missing"):
        PromptBuilder(options=PromptOptions(source="embodiedbench"), embodiedbench_dir=tmp_path)
    with pytest.raises(ValueError, match="single-turn"):
        PromptOptions(source="embodiedbench", mode="chat")
    with pytest.raises(ValueError, match="prompt_source must be"):
        PromptOptions(source="paper")


def test_prompt_source_embodiedbench_on_a_real_checkout() -> None:
    """With ``EMBODIEDBENCH_DIR`` (b247936): the paper's system prompt, examples and request texts."""
    import os

    root = os.environ.get("EMBODIEDBENCH_DIR")
    if not root or not (Path(root) / "embodiedbench/planner/vlm_planner.py").is_file():
        pytest.skip("set EMBODIEDBENCH_DIR to an EmbodiedBench checkout")
    builder = PromptBuilder(options=PromptOptions(source="embodiedbench", output_template=True),
                            embodiedbench_dir=root)
    first = builder.text("Chill an apple.", ACTIONS, (), False)
    assert first.startswith("## You are a robot operating in a home.")
    assert "## The available action id (0 ~ 3) and action names are: \naction id 0: find a Apple, " in first
    assert "## Task Execution Example 9: \n " in first and "## Task Execution Example 10" not in first
    assert "## Now the human instruction is: Chill an apple. You are supposed to output in json." in first
    assert "output the action id (0 ~ 3) from the available actions" in first
    assert first.endswith("do not include ```json and ```!!!.\n")
    later = builder.text("Chill an apple.", ACTIONS, [(1, "Last action is invalid.")], False)
    assert "## Task Execution Example  0: \n " in later  # the original's later-call spacing
    assert "\nStep 0, action id 1, pick up the Apple, env feedback: Last action is invalid." in later
    assert "reason why the last action or plan failed" in later
