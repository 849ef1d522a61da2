"""Model text -> action ids, in two modes (recorded in the planner identity).

``embodiedbench`` (default; EmbodiedBench planner/vlm_planner.py
``json_to_action`` and its evaluator): plain ``json.loads`` of the whole
output; only ``executable_plan[*].action_id`` is used (``action_name`` is
ignored). Output that does not parse, has no ``executable_plan`` list, or whose
*first* id is missing or out of range yields no action (one invalid action, no
env step, not in the history); a later bad id truncates the plan there. An
empty ``executable_plan`` is an empty plan (the episode ends).

``lenient`` (ours) also accepts code fences, text around the JSON object,
single-quoted (Python-literal) objects, ids written as strings, entries
without an id whose ``action_name`` matches an action of the list, and
truncated output whose complete ``executable_plan`` entries can be recovered.

Never raises: anything unexpected becomes an error verdict.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

PARSER_MODES = ("embodiedbench", "lenient")
#: Outputs longer than this are cut before the lenient parser's heavier attempts.
_LENIENT_MAX_CHARS = 200_000


@dataclass
class ParseResult:
    """Action ids to run, or an error saying why there are none."""

    actions: list[int] = field(default_factory=list)
    error: str | None = None
    #: Entries dropped after the first bad one (EmbodiedBench truncation).
    truncated: int = 0


def parse_plan(text: Any, actions: Sequence[str], mode: str = "embodiedbench") -> ParseResult:
    """Parse one model output against the episode's action list."""
    try:
        if not isinstance(text, str):
            return ParseResult(error=f"output is {type(text).__name__}, not text")
        if mode == "embodiedbench":
            return _embodiedbench(text, actions)
        if mode == "lenient":
            return _lenient(text, actions)
        return ParseResult(error=f"unknown parser mode {mode!r}")
    except Exception as exc:  # the parser never raises
        return ParseResult(error=f"parser failure: {type(exc).__name__}: {str(exc)[:200]}")


# --- embodiedbench -----------------------------------------------------------
def _embodiedbench(text: str, actions: Sequence[str]) -> ParseResult:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return ParseResult(error=f"output is not JSON: {str(exc)[:120]}")
    plan = _plan_list(data)
    if isinstance(plan, str):
        return ParseResult(error=plan)
    return _ids_from_entries(plan, actions, by_name=False, coerce=False)


def _plan_list(data: Any) -> list | str:
    if not isinstance(data, dict):
        return f"output JSON is a {type(data).__name__}, not an object"
    if "executable_plan" not in data:
        return "output JSON has no 'executable_plan'"
    plan = data["executable_plan"]
    if not isinstance(plan, list):
        return f"'executable_plan' is a {type(plan).__name__}, not a list"
    return plan


def _ids_from_entries(plan: Sequence[Any], actions: Sequence[str], *, by_name: bool, coerce: bool) -> ParseResult:
    out: list[int] = []
    names = _name_index(actions) if by_name else {}
    for k, entry in enumerate(plan):
        action_id, why = _entry_id(entry, len(actions), names, coerce)
        if action_id is None:
            if k == 0:
                return ParseResult(error=f"first action unusable: {why}")
            return ParseResult(actions=out, truncated=len(plan) - k)
        out.append(action_id)
    return ParseResult(actions=out)


def _entry_id(entry: Any, n: int, names: dict[str, int], coerce: bool) -> tuple[int | None, str]:
    if not isinstance(entry, dict):
        return None, f"plan entry is a {type(entry).__name__}, not an object"
    raw = entry.get("action_id")
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif coerce and isinstance(raw, str) and re.fullmatch(r"\s*-?\d{1,9}\s*", raw):
        value = int(raw)
    elif coerce and isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    if value is not None and 0 <= value < n:
        return value, ""
    if names:
        name = entry.get("action_name")
        if isinstance(name, str):
            hit = names.get(_norm(name))
            if hit is not None:
                return hit, ""
    if value is None:
        return None, f"no integer action_id in {str(entry)[:80]}"
    return None, f"action id {value} out of range 0..{n - 1}"


def _norm(name: str) -> str:
    return " ".join(name.strip().rstrip(".").split()).casefold()


def _name_index(actions: Sequence[str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, a in enumerate(actions):
        index.setdefault(_norm(a), i)
    return index


# --- lenient -----------------------------------------------------------------
_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.S)
_PLAN_KEY = re.compile(r"""["']?executable_plan["']?\s*:\s*\[""")
_ENTRY = re.compile(r"\{[^{}\[\]]*\}")
_ID_FIELD = re.compile(r"""["']action_id["']\s*:\s*["']?(-?\d{1,9})""")
_NAME_FIELD = re.compile(r"""["']action_name["']\s*:\s*(?:"([^"]*)"|'([^']*)')""")


def _lenient(text: str, actions: Sequence[str]) -> ParseResult:
    text = text[:_LENIENT_MAX_CHARS]
    first_error: str | None = None
    for candidate in _candidates(text):
        data = _load_object(candidate)
        if data is None:
            continue
        plan = _plan_list(data)
        if isinstance(plan, str):
            first_error = first_error or plan
            continue
        return _ids_from_entries(plan, actions, by_name=True, coerce=True)
    recovered = _recover_entries(text)
    if recovered is not None:
        if not recovered:
            return ParseResult(error="no complete executable_plan entry in the output")
        return _ids_from_entries(recovered, actions, by_name=True, coerce=True)
    return ParseResult(error=first_error or "no JSON object with an executable_plan in the output")


def _candidates(text: str) -> list[str]:
    out = [text.strip()]
    out += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start:end + 1])
    return out


def _load_object(candidate: str) -> Any:
    if not candidate:
        return None
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    try:
        obj, _ = json.JSONDecoder().raw_decode(candidate)
        return obj
    except (ValueError, RecursionError):
        pass
    if len(candidate) > 50_000:
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
