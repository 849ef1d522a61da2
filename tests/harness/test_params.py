"""harness.params: one declaration gives validation, defaults, identity, docs and the schema node."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

import pytest

from harness.param_schema import describe, schema_node
from harness.params import Composite, Group, NoParams, ParamError, Parsed, identity_of, param, parse, values_of


@dataclass
class Demo:
    flag: bool = param(False, help="a switch")
    count: int = param(3, ge=1, le=10, help="how many")
    rate: float = param(0.5, gt=0, le=1, help="a fraction", results=False)
    mode: str = param("a", choices=("a", "b"), help="a choice")
    url: Optional[str] = param(None, kind="url", help="a server", results=False)
    ids: Optional[List[int]] = param(None, ge=0, help="indices")


@pytest.mark.parametrize("values, expected", [
    ({"flag": "false"}, False), ({"flag": "TRUE"}, True), ({"flag": True}, True),
])
def test_a_boolean_is_true_or_false_and_its_words(values, expected):
    assert parse(Demo, values).flag is expected


@pytest.mark.parametrize("key, value, needle", [
    ("flag", 2, "flag must be true or false, got 2"),
    ("flag", "maybe", "flag must be true or false, got 'maybe'"),
    ("flag", "yes", "flag must be true or false"),
    ("count", 0, "count must be between 1 and 10 (a whole number), got 0"),
    ("count", 2.5, "count must be between 1 and 10"),
    ("count", True, "count must be between 1 and 10"),
    ("rate", math.nan, "rate must be a finite number > 0 and <= 1, got nan"),
    ("rate", math.inf, "rate must be a finite number"),
    ("rate", 0, "rate must be a finite number > 0"),
    ("mode", "c", "mode must be one of 'a', 'b', got 'c'"),
    ("url", "notaurl", "url must be an http(s) URL"),
    ("url", "http://host:99999/v1", "url must be an http(s) URL"),
    ("ids", [1, -1], "ids must be a list whose items are each a whole number >= 0, or null"),
    ("ids", 3, "ids must be a list"),
])
def test_a_bad_value_is_one_line_naming_the_key_and_what_it_accepts(key, value, needle):
    with pytest.raises(ParamError) as err:
        parse(Demo, {key: value})
    text = str(err.value)
    assert needle in text and "\n" not in text and err.value.key == key


def test_defaults_fill_what_is_not_given_and_values_convert():
    p = parse(Demo, {"count": "4", "rate": 1, "url": "http://127.0.0.1:8000/v1", "ids": [0, 2]})
    assert (p.flag, p.count, p.rate, p.mode, p.ids) == (False, 4, 1.0, "a", [0, 2])
    assert values_of(p) == {"flag": False, "count": 4, "rate": 1.0, "mode": "a",
                            "url": "http://127.0.0.1:8000/v1", "ids": [0, 2]}


def test_an_unknown_key_is_refused_with_a_hint():
    with pytest.raises(ParamError) as err:
        parse(Demo, {"cout": 3})
    assert err.value.unknown and "did you mean 'count'?" in str(err.value)
    assert err.value.of("planner demo").startswith("unknown parameter 'cout' for planner demo; did you mean")


def test_a_required_field_is_named():
    @dataclass
    class Needs:
        path: str = param(help="the demo file")

    with pytest.raises(ParamError, match="path is required: the demo file"):
        parse(Needs)
    assert parse(Needs, {"path": "x"}).path == "x"


def test_the_identity_holds_exactly_the_result_changing_fields():
    p = parse(Demo, {"rate": 0.25, "url": "http://h/v1"})
    ident = identity_of(p)
    assert set(ident) == {"flag", "count", "mode", "ids"}
    assert identity_of(parse(Demo, {"rate": 0.9})) == ident  # speed/transport only
    assert identity_of(parse(Demo, {"count": 4})) != ident
    assert identity_of(parse(NoParams)) == {} and identity_of(None) == {}


def test_describe_gives_type_default_accepts_and_meaning():
    rows = {r.name: r for r in describe(Demo)}
    assert (rows["count"].type, rows["count"].default, rows["count"].accepts) == (
        "int", "3", "between 1 and 10 (a whole number)")
    assert rows["url"].type == "str | null" and not rows["url"].results and rows["flag"].accepts == "true or false"


def test_the_schema_node_keeps_defaults_and_types_booleans_loosely():
    node = schema_node(Demo)()
    assert (node.count, node.mode, node.ids) == (3, "a", None)
    # OmegaConf would read 2 as true for a bool field: the node leaves booleans untyped and
    # parse() (run right after composition) refuses 2.
    from omegaconf import OmegaConf

    cfg = OmegaConf.structured(schema_node(Demo))
    cfg.flag = 2
    assert cfg.flag == 2
    with pytest.raises(Exception):
        cfg.count = "abc"  # typed: refused at composition


@dataclass
class Own:
    backend: str = param("x", choices=("x", "y"), help="which backend")


@dataclass
class X:
    depth: int = param(1, ge=1, help="x's setting")


@dataclass
class Y:
    width: int = param(2, ge=1, help="y's setting")


class Pick(Composite):
    def groups(self, values, suite):
        return [Group("own", Own), Group(f"backend {values.get('backend', 'x')}", X if values.get("backend", "x") == "x"
                                         else Y)]

    def all_groups(self):
        return [Group("own", Own), Group("backend x", X), Group("backend y", Y)]


def test_a_composite_takes_each_key_in_the_group_that_applies():
    p = parse(Pick(), {"backend": "y", "width": 5})
    assert isinstance(p, Parsed) and p.width == 5 and set(p) == {"own", "backend y"}
    assert identity_of(p) == {"own": {"backend": "y"}, "backend y": {"width": 5}}
    with pytest.raises(ParamError, match="depth is a parameter of backend x, which this run does not use"):
        parse(Pick(), {"backend": "y", "depth": 3})
    node = schema_node(Pick())()
    assert (node.backend, node.depth, node.width) == (None, None, None)  # None: not given


def test_false_for_an_auto_true_false_choice_reaches_the_plugin_as_false():
    """``planner.params.json_schema=false``: Hydra reads ``false`` as a boolean; a str-typed
    schema node would turn it into the string 'False', which no choice matches."""
    from harness.run.config import compose
    from harness.run.spec import to_run_spec

    spec = to_run_spec(compose(["planner=vlm", "planner.params.model=x", "planner.params.backend=openai",
                                "planner.params.base_url=http://127.0.0.1:9/v1", "planner.params.json_schema=false"]))
    assert spec.agent_params["json_schema"] == "false"
