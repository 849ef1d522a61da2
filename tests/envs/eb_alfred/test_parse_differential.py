"""The ``embodiedbench`` parser mode side by side with EmbodiedBench's own ``json_to_action``.

The original function is read from a user's EmbodiedBench checkout
(``EMBODIEDBENCH_DIR``, at commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04:
embodiedbench/planner/vlm_planner.py:149-175), compiled on its own (the
module's imports need torch, cv2 and the model clients; the function needs only
``json``) and run on the same texts as ours. Without a checkout the tests skip;
the rule cases of test_vlm_parse.py run everywhere.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from envs.eb_alfred.parse import parse_plan  # noqa: E402
from tests.envs.eb_alfred.test_parse import ACTIONS, RULE_CASES, verdict  # noqa: E402

N = len(ACTIONS)


def _original() -> Callable[[str], tuple]:
    root = os.environ.get("EMBODIEDBENCH_DIR")
    path = Path(root or "/nonexistent") / "embodiedbench" / "planner" / "vlm_planner.py"
    if not path.is_file():
        pytest.skip("set EMBODIEDBENCH_DIR to an EmbodiedBench checkout to run the original side by side")
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "VLMPlanner")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "json_to_action")
    namespace: dict[str, Any] = {"json": json}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)

    class Planner:  # the attributes json_to_action reads
        actions = ACTIONS
        action_key = "action_id"
        output_json_error = 0

    def run(text: str) -> tuple:
        planner = Planner()
        with contextlib.redirect_stdout(io.StringIO()):
            action = namespace["json_to_action"](planner, text)
        if isinstance(action, list):
            return ("plan", [repr(a) for a in action])
        if action == -2:
            return ("empty",)
        assert action == -1
        return ("invalid", planner.output_json_error == 1)

    return run


@pytest.fixture(scope="module")
def original() -> Callable[[str], tuple]:
    return _original()


@pytest.mark.parametrize("text,expected", RULE_CASES)
def test_rule_cases_agree_with_the_original(original: Callable[[str], tuple], text: str, expected: tuple) -> None:
    assert original(text) == expected == verdict(parse_plan(text, ACTIONS))


_ids = st.one_of(st.integers(-3, N + 2), st.integers(), st.floats(), st.booleans(), st.none(),
                 st.text(max_size=3), st.lists(st.integers(0, 3), max_size=2), st.just({}))
_entries = st.one_of(
    st.fixed_dictionaries({"action_id": _ids}, optional={"action_name": st.text(max_size=5)}),
    st.fixed_dictionaries({"action_name": st.sampled_from(ACTIONS)}),
    st.integers(0, N), st.text(max_size=4), st.none(), st.lists(st.integers(0, N), max_size=2),
)
_plans = st.one_of(st.lists(_entries, max_size=6), st.lists(_entries, max_size=6), st.dictionaries(
    st.text(max_size=3), st.integers(), max_size=2), st.text(max_size=3), st.integers(), st.none(), st.floats())
_objects = st.one_of(
    st.fixed_dictionaries({"executable_plan": _plans}, optional={"language_plan": st.text(max_size=8)}),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2), st.lists(st.integers(), max_size=3),
    st.none(), st.integers(),
)


@st.composite
def _texts(draw: Any) -> str:
    text = json.dumps(draw(_objects))
    cut = draw(st.one_of(st.none(), st.integers(0, len(text))))  # some outputs are cut short
    return text if cut is None else text[:cut]


@settings(max_examples=1500, deadline=200, database=None)
@given(_texts())
def test_generated_outputs_agree_with_the_original(original: Callable[[str], tuple], text: str) -> None:
    assert verdict(parse_plan(text, ACTIONS)) == original(text)
