"""The output parser: EmbodiedBench semantics, the lenient extensions, and a fuzz test."""

from __future__ import annotations

import json
import random
import string

import pytest

from planners.vlm.parse import ParseResult, parse_plan

ACTIONS = ["find a Apple", "pick up the Apple", "find a Fridge", "open the Fridge", "put down the object in hand"]


def out(*ids, **extra) -> str:
    plan = [{"action_id": i, "action_name": ACTIONS[i] if isinstance(i, int) and 0 <= i < len(ACTIONS) else "?"}
            for i in ids]
    return json.dumps({"visual_state_description": "", "reasoning_and_reflection": "", "language_plan": "",
                       "executable_plan": plan, **extra})


def test_embodiedbench_mode() -> None:
    assert parse_plan(out(0, 1, 2), ACTIONS) == ParseResult([0, 1, 2])
    # Only action_id is used: a wrong name does not matter.
    text = json.dumps({"executable_plan": [{"action_id": 3, "action_name": "fly"}]})
    assert parse_plan(text, ACTIONS).actions == [3]
    # First id bad -> no action; later bad id -> truncation.
    assert parse_plan(out(9, 1), ACTIONS).error and parse_plan(out(9, 1), ACTIONS).actions == []
    assert parse_plan(out(-1), ACTIONS).error
    r = parse_plan(out(0, 1, 99, 2), ACTIONS)
    assert r.actions == [0, 1] and r.error is None and r.truncated == 2
    # Empty plan: no error, no action (the episode ends).
    assert parse_plan(out(), ACTIONS) == ParseResult([])
    # Plain json.loads: fences, surrounding text, single quotes and truncation are errors.
    for bad in ("```json\n" + out(0) + "\n```", "Sure! " + out(0), out(0).replace('"', "'"), out(0, 1)[:-30],
                "", "null", "[1, 2]", '{"executable_plan": 3}', '{"plan": []}',
                json.dumps({"executable_plan": [{"action_id": "1"}]}),
                json.dumps({"executable_plan": [{"action_id": True}]}),
                json.dumps({"executable_plan": [{"action_name": "find a Apple"}]})):
        r = parse_plan(bad, ACTIONS)
        assert r.error and r.actions == [], bad
    assert parse_plan(None, ACTIONS).error
    assert parse_plan(out(0), ACTIONS, mode="nope").error


def test_lenient_mode() -> None:
    def lenient(text: str) -> ParseResult:
        return parse_plan(text, ACTIONS, mode="lenient")

    assert lenient(out(0, 1)).actions == [0, 1]
    assert lenient("```json\n" + out(2, 3) + "\n```").actions == [2, 3]
    assert lenient("Here is my plan:\n" + out(1) + "\nGood luck.").actions == [1]
    # Single-quoted object in the style of the examples (no commas between entries is
    # not a Python literal: recovered entry by entry).
    eb_style = ("{\n'language_plan': 'go',\n'executable_plan': [\n{\"action_id\": 0, \"action_name\": "
                "\"find a Apple\"}\n{\"action_id\": 1, \"action_name\": \"pick up the Apple\"}\n]}")
    assert lenient(eb_style).actions == [0, 1]
    assert lenient("{'executable_plan': [{'action_id': 2, 'action_name': 'find a Fridge'}], 'x': true}").actions == [2]
    # Truncated output: the complete entries are recovered.
    truncated = out(0, 1, 2, 3)
    truncated = truncated[: truncated.index('"action_id": 3') + 6]
    assert lenient(truncated).actions == [0, 1, 2]
    # Names matched when ids are missing or bad; ids as strings.
    named = json.dumps({"executable_plan": [{"action_name": "Open the fridge."}, {"action_id": "4"}]})
    assert lenient(named).actions == [3, 4]
    assert lenient(out(9, 1)).error  # a bad id with an unknown name is still unusable
    assert lenient(out(0, 9)).actions == [0]
    # Still no action from nothing.
    for bad in ("", "I cannot help with that.", '{"executable_plan": [', "[1,2,3]"):
        r = lenient(bad)
        assert r.error and r.actions == [], bad


def _mutations(rng: random.Random, text: str) -> str:
    ops = rng.randint(1, 4)
    chars = list(text)
    for _ in range(ops):
        kind = rng.randrange(6)
        if not chars:
            chars = list(rng.choice(['{', '[', '"', "'"]))
        i = rng.randrange(len(chars))
        if kind == 0:
            del chars[i:i + rng.randint(1, 20)]
        elif kind == 1:
            chars.insert(i, rng.choice(string.printable + "\u00e9\u4e2d\x00{}[]:,\"'"))
        elif kind == 2:
            chars = chars[: rng.randint(0, len(chars))]
        elif kind == 3:
            chars[i] = rng.choice('{}[]",:\'0123456789-')
        elif kind == 4:
            j = rng.randrange(len(chars))
            chars[i], chars[j] = chars[j], chars[i]
        else:
            chars[i:i] = list(rng.choice(['"action_id": ', "```json\n", "\n```", "executable_plan", "1e999",
                                          "-0", "99999999999999999999", "NaN", "[" * 50, "{" * 50]))
    return "".join(chars)


@pytest.mark.parametrize("mode", ["embodiedbench", "lenient"])
def test_fuzz_never_raises_and_ids_are_valid(mode: str) -> None:
    """10,000 random and mutated outputs per mode: a verdict each, never an exception."""
    rng = random.Random(f"fuzz-{mode}")
    seeds = [out(0, 1, 2), out(4), out(), "```json\n" + out(1, 3) + "\n```",
             "{'executable_plan': [{'action_id': 2}]}", '{"executable_plan": [{"action_name": "find a Fridge"}]}']
    for k in range(10_000):
        if k % 5 == 0:
            n = rng.randint(0, 300)
            text = "".join(rng.choice(string.printable + "{}[]\"'") for _ in range(n))
        elif k == 1:
            text = "[" * 100_000  # deep nesting
        else:
            text = _mutations(rng, rng.choice(seeds))
        r = parse_plan(text, ACTIONS, mode=mode)
        assert isinstance(r, ParseResult)
        assert (r.error is None) or (r.actions == [])
        assert all(isinstance(a, int) and 0 <= a < len(ACTIONS) for a in r.actions)
