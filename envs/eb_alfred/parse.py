"""EB-ALFRED model text -> action ids, in three modes (recorded in the planner identity).

``embodiedbench`` (default) reproduces EmbodiedBench's ``json_to_action``
(embodiedbench/planner/vlm_planner.py:149-175 at b247936) on the raw model
text, verdict for verdict:

1. ``json.loads`` of the whole text (Python's: ``NaN``/``Infinity`` are
   numbers, duplicate keys keep the last value). Failure -> output error.
2. ``[x["action_id"] for x in obj["executable_plan"]]`` is built *before* any
   check: output that is not an object, has no ``executable_plan``, a plan
   that is a number or null, a non-empty string or object (iterated as
   characters / keys), or any entry that is not an object or lacks
   ``action_id`` -> output error (the whole output, not a truncated plan).
3. No ids (``[]``, ``{}``, ``""``) -> empty plan: the episode ends.
4. Left to right, the first id with ``id >= N or id < 0`` stops the scan: the
   first entry -> invalid output (one invalid action, *not* an output error);
   a later one -> the plan is cut there. An id that cannot be compared with a
   number (string, null, list, object) met before that -> output error.
5. Ids that pass the check but are not ints (``5.0``, ``-0.0``, ``true``,
   ``NaN``) stay in the plan as they are; EmbodiedBench's env raises on them
   after counting the step (envs/eb_alfred/EBAlfEnv.py:296-302), which costs
   one env step, no invalid action and no history line, and the evaluator
   plans again (evaluator/eb_alfred_evaluator.py:150-152).

``output_error`` of the result is the original's ``output_json_error``
(an exception inside ``json_to_action``); an out-of-range first id is an
invalid output without it.

``embodiedbench_remote``: the same after the three replacements EmbodiedBench
applies to the replies of its remote Qwen2-VL-72B, Llama-3.2-90B and
InternVL2.5 models (planner/remote_model.py:285-287 and 317-319): every ``'``
becomes ``"``, then ``"s `` becomes ``'s ``, then the json code-fence markers
are removed.

``lenient`` (ours) also accepts code fences, text around the JSON object,
single-quoted (Python-literal) objects, ids written as strings, entries
without an id whose ``action_name`` matches an action of the list, and
truncated output whose complete ``executable_plan`` entries can be recovered.

Every mode takes time linear in the text and memory bounded by it, never
raises (anything unexpected is an output error), and reads at most
``max_chars`` characters: longer text cannot come from a model limited to the
protocol's ``max_new_tokens`` (:func:`max_output_chars`), so it is an output error.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from envs.eb_alfred.plugin import PARSERS
from harness.promptkit.prompting import CHARS_PER_TOKEN_BOUND, max_output_chars  # noqa: F401 (part of this module's API)
from harness.promptkit.family import reply_cleanup

#: The modes (declared with the suite's prompt settings, envs/eb_alfred/plugin.py).
PARSER_MODES = PARSERS
#: Bump whenever a verdict of any mode changes (it enters the planner identities).
#: 2: json_to_action rule for rule (non-int ids kept, str/{} plans, output error vs invalid).
PARSER_VERSION = "2"
#: EmbodiedBench planner/remote_model.py:16 ``max_completion_tokens = 2048``.
DEFAULT_MAX_CHARS = 2048 * CHARS_PER_TOKEN_BOUND
#: Candidates longer than this skip the lenient parser's Python-literal attempt
#: (``ast`` builds a tree many times the text's size).
_LITERAL_MAX_CHARS = 16_000


@dataclass
class ParseResult:
    """Action ids to run, or an error saying why there are none."""

    #: ints into the action list; in the ``embodiedbench`` modes also the non-int
    #: numbers that pass EmbodiedBench's range check (rule 5), exactly as parsed.
    actions: list[Any] = field(default_factory=list)
    error: str | None = None
    #: Entries dropped after the first bad one (EmbodiedBench truncation).
    truncated: int = 0
    #: With ``error``: EmbodiedBench's ``output_json_error`` (the parser raised). False
    #: for a well-formed plan whose first id is out of range (invalid, no output error).
    output_error: bool = True

    def reply(self, text: Any, prompt: Any = None) -> Any:
        """The :class:`~harness.interfaces.AgentReply` of this verdict on ``text``.

        An output error is a reply with ``output_error`` (one invalid action,
        counted as a planner output error); an out-of-range first id is one
        :class:`~harness.interfaces.InvalidOutput` not counted as an output error;
        a non-int id becomes an ``InvalidOutput`` that costs one env step.
        """
        from harness.interfaces import AgentReply, InvalidOutput

        raw = text if isinstance(text, str) else repr(text)
        if self.error is not None:
            if self.output_error:
                return AgentReply(actions=[], raw_output=raw, output_error=self.error, prompt=prompt)
            return AgentReply(actions=[InvalidOutput(raw[:200], self.error, output_error=False)],
                              raw_output=raw, prompt=prompt)
        actions: list[Any] = [
            a if type(a) is int else InvalidOutput(
                repr(a), f"action id {a!r} is not an int: EmbodiedBench's env raises on it after counting "
                         "the step (one env step, no invalid action, plan again)", output_error=False,
                costs_step=True)
            for a in self.actions]
        return AgentReply(actions=actions, raw_output=raw, prompt=prompt)


def parse_plan(text: Any, actions: Sequence[str], mode: str = "embodiedbench",
               max_chars: int = DEFAULT_MAX_CHARS) -> ParseResult:
    """Parse one model output against the episode's action list."""
    try:
        if not isinstance(text, str):
            return ParseResult(error=f"output is {type(text).__name__}, not text")
        if len(text) > max_chars:
            return ParseResult(error=f"output of {len(text)} characters is longer than the {max_chars} "
                                     "that max_new_tokens allow")
        if mode == "embodiedbench":
            return _embodiedbench(text, len(actions))
        if mode == "embodiedbench_remote":
            return _embodiedbench(remote_replacements(text), len(actions))
        if mode == "lenient":
            return _lenient(text, actions)
        return ParseResult(error=f"unknown parser mode {mode!r}")
    except Exception as exc:  # the parser never raises
        return ParseResult(error=f"parser failure: {type(exc).__name__}: {str(exc)[:200]}")


#: EmbodiedBench's clean-up of some remote families' replies: one definition for every suite.
remote_replacements = reply_cleanup


# --- embodiedbench -----------------------------------------------------------
def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _embodiedbench(text: str, n: int) -> ParseResult:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digit limit, nesting depth
        return ParseResult(error=f"output is not JSON: {str(exc)[:120]}")
    if not isinstance(data, dict):
        return ParseResult(error=f"output JSON is a {_kind(data)}, not an object")
    if "executable_plan" not in data:
        return ParseResult(error="output JSON has no 'executable_plan'")
    plan = data["executable_plan"]
    if isinstance(plan, (dict, str)):
        # Iterated as keys / characters: an empty one is an empty plan, any item fails.
        if plan:
            return ParseResult(error=f"'executable_plan' is a non-empty {_kind(plan)}, not a list of entries")
        return ParseResult()
    if not isinstance(plan, list):
        return ParseResult(error=f"'executable_plan' is {_kind(plan)}, not a list")
    ids = []
    for k, entry in enumerate(plan):
        if not isinstance(entry, dict):
            return ParseResult(error=f"plan entry {k} is a {_kind(entry)}, not an object")
        if "action_id" not in entry:
            return ParseResult(error=f"plan entry {k} has no 'action_id'")
        ids.append(entry["action_id"])
    for i, value in enumerate(ids):
        if not isinstance(value, (int, float)):  # bool is an int; str/null/list/object do not compare
            return ParseResult(error=f"action id of entry {i} is a {_kind(value)}, not a number")
        if value >= n or value < 0:  # NaN passes, as in the original
            if i == 0:
                return ParseResult(error=f"first action id {_short(value)} out of range 0..{n - 1}",
                                   output_error=False)
            return ParseResult(actions=ids[:i], truncated=len(ids) - i)
    return ParseResult(actions=ids)


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 12:
        return f"{'-' if value < 0 else ''}<{len(str(abs(value)))}-digit number>"
    return repr(value)


# --- lenient -----------------------------------------------------------------
def _ids_from_entries(plan: Sequence[Any], actions: Sequence[str]) -> ParseResult:
    out: list[int] = []
    names = _name_index(actions)
    for k, entry in enumerate(plan):
        action_id, why = _entry_id(entry, len(actions), names)
        if action_id is None:
            if k == 0:
                return ParseResult(error=f"first action unusable: {why}")
            return ParseResult(actions=out, truncated=len(plan) - k)
        out.append(action_id)
    return ParseResult(actions=out)


def _entry_id(entry: Any, n: int, names: dict[str, int]) -> tuple[int | None, str]:
    if not isinstance(entry, dict):
        return None, f"plan entry is a {_kind(entry)}, not an object"
    raw = entry.get("action_id")
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and re.fullmatch(r"\s*-?\d{1,9}\s*", raw[:40]):
        value = int(raw)
    elif isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        value = int(raw)
    if value is not None and 0 <= value < n:
        return value, ""
    name = entry.get("action_name")
    if isinstance(name, str):
        hit = names.get(_norm(name))
        if hit is not None:
            return hit, ""
    if value is None:
        return None, f"no integer action_id in {str(entry)[:80]}"
    return None, f"action id {_short(value)} out of range 0..{n - 1}"


def _norm(name: str) -> str:
    return " ".join(name.strip().rstrip(".").split()).casefold()


def _name_index(actions: Sequence[str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, a in enumerate(actions):
        index.setdefault(_norm(a), i)
    return index


_FENCE_LANG = re.compile(r"(?:json|JSON|python)?")
_PLAN_KEY = re.compile(r"""["']?executable_plan["']?\s*:\s*\[""")
_ENTRY = re.compile(r"\{[^{}\[\]]*\}")
_ID_FIELD = re.compile(r"""["']action_id["']\s*:\s*["']?(-?\d{1,9})""")
_NAME_FIELD = re.compile(r"""["']action_name["']\s*:\s*(?:"([^"]*)"|'([^']*)')""")


def _lenient(text: str, actions: Sequence[str]) -> ParseResult:
    first_error: str | None = None
    for candidate in _candidates(text):
        data = _load_object(candidate)
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("executable_plan"), list):
            first_error = first_error or "no 'executable_plan' list in the output JSON"
            continue
        return _ids_from_entries(data["executable_plan"], actions)
    recovered = _recover_entries(text)
    if recovered is not None:
        if not recovered:
            return ParseResult(error="no complete executable_plan entry in the output")
        return _ids_from_entries(recovered, actions)
    return ParseResult(error=first_error or "no JSON object with an executable_plan in the output")


def _candidates(text: str) -> list[str]:
    """The whole text, the insides of code fences, and the outermost ``{...}`` span.

    Fences are found by splitting, not by a lazy regex (linear in the text however
    many fence markers it holds)."""
    out = [text.strip()]
    parts = text.split("```")
    for inside in parts[1:-1:2]:
        out.append(inside[_FENCE_LANG.match(inside).end():].strip())  # type: ignore[union-attr]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start:end + 1])
    return out


def _load_object(candidate: str) -> Any:
    if not candidate:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(candidate)
        return obj
    except (ValueError, RecursionError):
        pass
    if len(candidate) > _LITERAL_MAX_CHARS:
        return None
    # Single-quoted objects (Python literals); JSON's true/false/null spelled for Python.
    py = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", candidate)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in model text
            return ast.literal_eval(py)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _recover_entries(text: str) -> list[dict[str, Any]] | None:
    """Complete ``{... action_id ...}`` entries after ``executable_plan: [`` (truncated output).

    None when there is no plan key at all.
    """
    m = _PLAN_KEY.search(text)
    if m is None:
        return None
    entries: list[dict[str, Any]] = []
    for e in _ENTRY.finditer(text, m.end()):
        body = e.group(0)
        entry: dict[str, Any] = {}
        id_m = _ID_FIELD.search(body)
        name_m = _NAME_FIELD.search(body)
        if id_m:
            entry["action_id"] = int(id_m.group(1))
        if name_m:
            entry["action_name"] = name_m.group(1) if name_m.group(1) is not None else name_m.group(2)
        if not entry:
            break
        entries.append(entry)
        rest = text[e.end():e.end() + 200].lstrip(" \t\r\n,")
        if rest.startswith("]"):
            break
    return entries
