"""The output parser: EmbodiedBench semantics, the lenient extensions, and a fuzz test."""

from __future__ import annotations

import json
import random
import string

import pytest

from envs.eb_alfred.parse import ParseResult, parse_plan

ACTIONS = ["find a Apple", "pick up the Apple", "find a Fridge", "open the Fridge", "put down the object in hand"]


def out(*ids, **extra) -> str:
    plan = [{"action_id": i, "action_name": ACTIONS[i] if isinstance(i, int) and 0 <= i < len(ACTIONS) else "?"}
            for i in ids]
    return json.dumps({"visual_state_description": "", "reasoning_and_reflection": "", "language_plan": "",
                       "executable_plan": plan, **extra})


EB = "EmbodiedBench b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04"
N = len(ACTIONS)


def plan(*ids) -> str:
    return json.dumps({"executable_plan": [{"action_id": i, "action_name": "x"} for i in ids]})


def verdict(r: ParseResult) -> tuple:
    """("plan", ids as repr) / ("empty",) / ("invalid", output_error)."""
    if r.error is not None:
        assert r.actions == []
        return ("invalid", r.output_error)
    if not r.actions:
        return ("empty",)
    return ("plan", [repr(a) for a in r.actions])


#: (model text, verdict) per rule of json_to_action (embodiedbench/planner/vlm_planner.py:149-175).
RULE_CASES = [
    # json.loads of the whole text (:151); any exception -> -1 and output_json_error += 1 (:166-174).
    (out(0, 1, 2), ("plan", ["0", "1", "2"])),
    ("```json\n" + out(0) + "\n```", ("invalid", True)),
    ("Sure! " + out(0), ("invalid", True)),
    (out(0).replace('"', "'"), ("invalid", True)),
    (out(0, 1)[:-30], ("invalid", True)),
    ("", ("invalid", True)),
    ("[" * 5000, ("invalid", True)),  # RecursionError is an exception like any other
    ('{"executable_plan": [{"action_id": ' + "9" * 5000 + "}]}", ("invalid", True)),  # int digit limit
    # obj[json_key] (:152): not an object, no key -> exception.
    ("null", ("invalid", True)), ("[1, 2]", ("invalid", True)), ('"executable_plan"', ("invalid", True)),
    ('{"plan": []}', ("invalid", True)),
    # Iterating the plan (:152): numbers / null do not iterate; str and object iterate as characters /
    # keys, and indexing a character or key with "action_id" raises -- unless there is none.
    ('{"executable_plan": 3}', ("invalid", True)), ('{"executable_plan": null}', ("invalid", True)),
    ('{"executable_plan": "0"}', ("invalid", True)), ('{"executable_plan": {"action_id": 1}}', ("invalid", True)),
    ('{"executable_plan": {}}', ("empty",)), ('{"executable_plan": ""}', ("empty",)),
    ('{"executable_plan": []}', ("empty",)),  # :153-155 empty plan -> -2, the episode stops
    # The id list is built before any range check: a later entry that is not an object or lacks
    # action_id makes the whole output invalid (an output error), not a truncated plan.
    ('{"executable_plan": [{"action_id": 0}, 5]}', ("invalid", True)),
    ('{"executable_plan": [{"action_id": 0}, [1]]}', ("invalid", True)),
    ('{"executable_plan": [{"action_id": 0}, {"action_name": "find a Apple"}]}', ("invalid", True)),
    ('{"executable_plan": [{"action_id": 0}, "find a Apple"]}', ("invalid", True)),
    ('{"executable_plan": [{"action_id": 99}, {"action_name": "x"}]}', ("invalid", True)),
    # Range scan (:158-165): first bad -> -1 without output_json_error; later bad -> cut there.
    (plan(9, 1), ("invalid", False)), (plan(-1), ("invalid", False)), (plan(N), ("invalid", False)),
    (plan(0, 1, 99, 2), ("plan", ["0", "1"])), (plan(3, -4, "x"), ("plan", ["3"])),
    ('{"executable_plan": [{"action_id": Infinity}]}', ("invalid", False)),
    ('{"executable_plan": [{"action_id": 1}, {"action_id": -Infinity}]}', ("plan", ["1"])),
    # An id that does not compare with a number raises when the scan reaches it (output error) ...
    (plan("1"), ("invalid", True)), (plan(None), ("invalid", True)), (plan(0, [1]), ("invalid", True)),
    (plan(0, 1, {"id": 2}), ("invalid", True)), (plan(2, "3"), ("invalid", True)),
    # ... but not when an out-of-range id stops the scan first.
    (plan(99, "x"), ("invalid", False)), (plan(1, 99, None), ("plan", ["1"])),
    # Float, bool and NaN ids that pass the check stay in the plan as they are.
    (plan(5.0), ("invalid", False)),  # 5.0 >= N
    (plan(2.0, 1), ("plan", ["2.0", "1"])), (plan(-0.0), ("plan", ["-0.0"])), (plan(2.5), ("plan", ["2.5"])),
    (plan(True, False), ("plan", ["True", "False"])), (plan(0, True), ("plan", ["0", "True"])),
    ('{"executable_plan": [{"action_id": NaN}, {"action_id": 1}]}', ("plan", ["nan", "1"])),
    # Only action_id is read; duplicate keys keep the last (json.loads).
    ('{"executable_plan": [{"action_id": 3, "action_name": "fly"}]}', ("plan", ["3"])),
    ('{"executable_plan": [{"action_id": 3, "action_id": 1}], "executable_plan": [{"action_id": 2}]}',
     ("plan", ["2"])),
]


@pytest.mark.parametrize("text,expected", RULE_CASES)
def test_embodiedbench_mode_follows_json_to_action(text: str, expected: tuple) -> None:
    """Each case is a rule of EmbodiedBench b247936 embodiedbench/planner/vlm_planner.py:149-175
    (``json_to_action``) read off the code; ``output_error`` is its ``output_json_error``
    (incremented only in the two ``except`` branches, :166-174)."""
    assert verdict(parse_plan(text, ACTIONS)) == expected


def test_remote_mode_applies_the_three_replacements_first() -> None:
    """EmbodiedBench b247936 planner/remote_model.py:285-287 (Qwen2-VL-72B, Llama-3.2-90B via
    _call_qwen72b) and :317-319 (InternVL2.5): ``'`` -> ``"``, ``"s `` -> ``'s ``, fences removed."""
    single = "{'executable_plan': [{'action_id': 2, 'action_name': 'find a Fridge'}]}"
    fenced = "```json\n" + out(1, 3) + "\n```"
    apostrophe = '{"language_plan": "the robot"s hand", "executable_plan": [{"action_id": 1}]}'
    word = "{'language_plan': 'it's here', 'executable_plan': [{'action_id': 0}]}"
    for text, expected in [(single, ("plan", ["2"])), (fenced, ("plan", ["1", "3"])),
                           (apostrophe, ("plan", ["1"])), (word, ("plan", ["0"]))]:
        assert verdict(parse_plan(text, ACTIONS, "embodiedbench")) == ("invalid", True)
        assert verdict(parse_plan(text, ACTIONS, "embodiedbench_remote")) == expected
    # 'it's' becomes "it"s then it's again; a quote inside a value still breaks the JSON.
    assert verdict(parse_plan("{'language_plan': 'say \"hi\"', 'executable_plan': []}", ACTIONS,
                              "embodiedbench_remote")) == ("invalid", True)
    # Same rules after the replacements (a float id stays, a bad first id is no output error).
    assert verdict(parse_plan("{'executable_plan': [{'action_id': 1.0}]}", ACTIONS,
                              "embodiedbench_remote")) == ("plan", ["1.0"])
    assert verdict(parse_plan(plan(99), ACTIONS, "embodiedbench_remote")) == ("invalid", False)


def test_output_longer_than_max_tokens_allow_is_one_output_error() -> None:
    text = out(0) + " " * 200
    assert parse_plan(text, ACTIONS, max_chars=len(text)).actions == [0]
    r = parse_plan(text, ACTIONS, max_chars=len(text) - 1)
    assert r.error and "longer than" in r.error and r.output_error
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
        if mode == "lenient":
            assert all(type(a) is int and 0 <= a < len(ACTIONS) for a in r.actions)
        else:  # EmbodiedBench keeps non-int numbers that pass its range check (rule 5)
            assert all(isinstance(a, (int, float)) and not (a >= len(ACTIONS) or a < 0) for a in r.actions)
