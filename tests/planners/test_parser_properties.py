"""Property-based tests of the model-output parsers (VLM JSON, ALFRED triplets, grounding).

Arbitrary text (lone surrogates included), huge numbers, deep nesting and very long
outputs: every parser returns a verdict (never raises), an unusable output is one
error verdict with no action, and each example finishes within the deadline, which
holds only for parsers linear in the length of what they read (before, the
adversarial cases took seconds to minutes).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from harness.interfaces import AgentReply  # noqa: E402
from envs.alfred.prompt import MAX_NAME_CHARS, most_similar, parse_triplets  # noqa: E402
from envs.eb_alfred.parse import DEFAULT_MAX_CHARS, PARSER_MODES, ParseResult, parse_plan  # noqa: E402

#: Per example; generous for a loaded 2-core machine, far below what a quadratic parser needs.
DEADLINE_MS = 1500
SETTINGS = settings(max_examples=150, deadline=DEADLINE_MS, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example,
                                           HealthCheck.data_too_large])

ACTIONS = ["find a Apple", "pick up the Apple", "find a Fridge", "open the Fridge", "put down the object in hand"]

_surrogates = st.lists(st.integers(0xD800, 0xDFFF), min_size=1, max_size=4).map(lambda c: "".join(map(chr, c)))
_fragments = st.sampled_from([
    '{"executable_plan": [', '{"action_id": ', '"action_name": "find a Apple"}', "]}", "```json\n", "\n```",
    "'executable_plan': [", "NaN", "Infinity", "-0.0", "1e999", "true", "null", ", ", "{", "}", "[", "]", '"',
])
_huge = st.integers(1, 6000).map(lambda n: "9" * n)
_piece = st.one_of(st.text(st.characters(exclude_categories=()), max_size=20), _surrogates, _fragments, _huge)
_texts = st.lists(_piece, max_size=40).map("".join)


@st.composite
def _long(draw) -> str:
    """Repetitions that make quadratic parsers crawl: whitespace runs, fences, openers, nesting."""
    unit = draw(st.sampled_from([" ", "```", "{", "[", "(a, ", '{"executable_plan": ', "\\u", '"', "'",
                                 '"action_id": 1, ', "executable_plan", "9"]))
    n = draw(st.sampled_from([10_000, 100_000, DEFAULT_MAX_CHARS // max(1, len(unit)),
                              2 * DEFAULT_MAX_CHARS // max(1, len(unit))]))
    head = draw(st.sampled_from(["", '{"executable_plan": [{"action_id": 0}, ', "(PickupObject, "]))
    return head + unit * n


def _check_plan(text: str, mode: str, n: int) -> None:
    actions = (ACTIONS * (n // len(ACTIONS) + 1))[:n]
    r = parse_plan(text, actions, mode)
    assert isinstance(r, ParseResult)
    if r.error is not None:
        assert r.actions == [] and isinstance(r.error, str) and len(r.error) < 1000
    for a in r.actions:
        if mode == "lenient":
            assert type(a) is int and 0 <= a < n
        else:  # EmbodiedBench keeps numbers that pass its range check (parse.py rule 5)
            assert isinstance(a, (int, float)) and not (a >= n or a < 0)
    reply = r.reply(text)
    assert isinstance(reply, AgentReply) and (reply.output_error is None or not reply.actions)


@pytest.mark.parametrize("mode", PARSER_MODES)
@SETTINGS
@given(text=_texts, n=st.integers(1, 300))
def test_vlm_parser_on_arbitrary_text(mode: str, text: str, n: int) -> None:
    _check_plan(text, mode, n)


@pytest.mark.parametrize("mode", PARSER_MODES)
@SETTINGS
@given(text=_long())
def test_vlm_parser_on_long_repetitive_text(mode: str, text: str) -> None:
    _check_plan(text, mode, len(ACTIONS))


@pytest.mark.parametrize("mode", PARSER_MODES)
@SETTINGS
@given(value=st.one_of(st.integers().map(str), _huge, _huge.map(lambda d: "-" + d + ".5e-3"),
                       st.floats(allow_nan=True, allow_infinity=True).map(json.dumps)),
       depth=st.integers(0, 100_000))
def test_vlm_parser_on_huge_numbers_and_deep_nesting(mode: str, value: str, depth: int) -> None:
    plan = '{"executable_plan": [{"action_id": 0}, {"action_id": ' + value + "}]}" if depth % 2 else \
        '{"executable_plan": ' + "[" * depth + "0" + "]" * depth + "}"
    _check_plan(plan, mode, len(ACTIONS))


@SETTINGS
@given(text=st.one_of(_texts, _long()))
def test_triplet_parser_on_arbitrary_text(text: str) -> None:
    parsed = parse_triplets(text)
    assert parsed.error is None or parsed.triplets == ()
    assert parsed.error is not None or parsed.triplets
    assert all(len(t.obj) <= MAX_NAME_CHARS and len(t.receptacle) <= MAX_NAME_CHARS for t in parsed.triplets)


@SETTINGS
@given(name=st.one_of(st.text(max_size=40), st.integers(0, 2_000_000).map(lambda n: "Ab" * (n // 2))),
       candidates=st.lists(st.one_of(st.text(max_size=30), st.just("x" * 100_000)), max_size=30))
def test_grounding_on_arbitrary_names(name: str, candidates: list[str]) -> None:
    best = most_similar(name, candidates)
    assert best is None or (best in candidates and best != name and len(best) <= MAX_NAME_CHARS)
    if len(name) > MAX_NAME_CHARS:
        assert best is None
