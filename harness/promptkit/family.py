"""Per-model-family protocol defaults, as EmbodiedBench decides them from the model name.

EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04 picks three things by
substring of the model name:

- **JSON schema as ``response_format``** (guided decoding): every local model
  (``model_type: local``, lmdeploy with the schema, planner/remote_model.py:95-121)
  and, remotely, gpt (:162-184), gemini (a pydantic schema, :137-160), Qwen2-VL-7B
  (:186-211), Qwen2-VL-72B and meta-llama/Llama-3.2-90B (both through ``_call_qwen72b``,
  :260-288), Llama-3.2-11B (:233-257) and Fireworks' 90b-vision-instruct (:213-231).
  Not claude (:123-135) nor InternVL2.5 (the line is commented out, :307-313).
- **Its output template appended to the prompt**: names containing ``claude``,
  ``InternVL`` or ``Qwen2-VL-72B-Instruct`` (case-sensitive substrings of the configured
  model name), local or not, in both of its planners: planner/vlm_planner.py:185-187 and
  planner/manip_planner.py:360-362 (visual ICL), :372-374.
- **Three text replacements on the reply** (:func:`reply_cleanup`; a suite's
  ``embodiedbench_remote`` parser mode or ``reply_cleanup`` setting): remote
  Qwen2-VL-72B-Instruct, meta-llama/Llama-3.2-90B-Vision-Instruct and InternVL2_5-8B/38B/78B
  (remote_model.py:76-91 dispatch, :285-287, :317-319), whatever the suite (the model call
  applies them before any suite's parser sees the text).

Every suite's prompt adapter takes these rules from here (``ModelFacts.auto``, filled by
planners/vlm/planner.py from :func:`family_defaults`) and :func:`reply_cleanup` from here.

Here the ``hf`` backend plays EmbodiedBench's local models and the ``openai``
backend its remote ones. A remote name EmbodiedBench does not know
(remote_model.py:92-93 raises) gets the schema, as the local models and most
remote families do: fine-tuned checkpoints served by vLLM under their own name
are the common case here.
"""

from __future__ import annotations

from dataclasses import dataclass

#: vlm_planner.py:186 and manip_planner.py:360, :372 ``if 'claude' in self.model_name or 'InternVL' in
#: self.model_name or 'Qwen2-VL-72B-Instruct' in self.model_name`` (Python ``in``: case-sensitive substring).
TEMPLATE_FAMILIES = ("claude", "InternVL", "Qwen2-VL-72B-Instruct")
#: Remote families served without a response_format (remote_model.py:123-135, :307-313).
NO_SCHEMA_REMOTE = ("claude", "InternVL")
#: remote_model.py:79, :83 (-> _call_qwen72b) and :86-91 (-> _call_intern38b), in dispatch order
#: after the earlier branches (claude, gemini, gpt, Qwen2-VL-7B-Instruct) did not match.
_EARLIER = ("claude", "gemini", "gpt", "Qwen2-VL-7B-Instruct")
REPLACEMENT_FAMILIES = ("Qwen2-VL-72B-Instruct", "Llama-3.2-11B-Vision-Instruct",
                        "meta-llama/Llama-3.2-90B-Vision-Instruct", "90b-vision-instruct",
                        "OpenGVLab/InternVL2_5-8B", "OpenGVLab/InternVL2_5-38B", "OpenGVLab/InternVL2_5-78B")
#: Of REPLACEMENT_FAMILIES, the dispatch targets that apply the replacements.
_REPLACING = {"Qwen2-VL-72B-Instruct", "meta-llama/Llama-3.2-90B-Vision-Instruct", "OpenGVLab/InternVL2_5-8B",
              "OpenGVLab/InternVL2_5-38B", "OpenGVLab/InternVL2_5-78B"}


@dataclass(frozen=True)
class FamilyDefaults:
    json_schema: bool
    output_template: bool
    #: The parser mode of the suites that name one: ``embodiedbench_remote`` where :attr:`reply_cleanup` holds.
    parser: str

    @property
    def reply_cleanup(self) -> bool:
        """The model call applies :func:`reply_cleanup` to the reply (remote_model.py:285-287, :317-319)."""
        return self.parser == "embodiedbench_remote"

    def auto(self) -> dict[str, object]:
        """The values a prompt adapter's ``auto`` settings take (``ModelFacts.auto``)."""
        return {"parser": self.parser, "output_template": self.output_template, "reply_cleanup": self.reply_cleanup}


def reply_cleanup(text: str) -> str:
    """EmbodiedBench's clean-up of some remote families' replies (remote_model.py:285-287 in
    ``_call_qwen72b``, the same three lines at :317-319 in ``_call_intern38b``), in its order:
    every ``'`` becomes ``"``, then ``"s `` becomes ``'s ``, then the ````json`` and ````` fence
    markers are removed."""
    return text.replace("'", '"').replace('"s ', "'s ").replace("```json", "").replace("```", "")


def family_defaults(model: str, backend: str) -> FamilyDefaults:
    """EmbodiedBench's choices for ``model`` served by ``backend`` (``hf`` = local, ``openai`` = remote)."""
    name = str(model or "")
    template = any(k in name for k in TEMPLATE_FAMILIES)
    if backend == "hf":
        return FamilyDefaults(json_schema=True, output_template=template, parser="embodiedbench")
    schema = not any(k in name for k in NO_SCHEMA_REMOTE)
    replacing = False
    if not any(k in name for k in _EARLIER):
        branch = next((k for k in REPLACEMENT_FAMILIES if k in name), None)
        replacing = branch in _REPLACING
    return FamilyDefaults(json_schema=schema, output_template=template,
                          parser="embodiedbench_remote" if replacing else "embodiedbench")


def resolve(value: object, default: bool, key: str) -> bool:
    """A config value ``auto`` / None -> the family default; true/false as given."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{key} must be auto, true or false, got {value!r}")
