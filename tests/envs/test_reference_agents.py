"""Every suite's own reference agents and the generic random planner parse their declarations
and identify by name and version only (their parameters enter the run identity from the
declaration: harness.params.identity_of)."""

from __future__ import annotations

import importlib.util

import pytest

from harness.registry.catalog import PLANNERS, POLICIES
from harness.params import ParamError

#: (registry, name, suite) of the reference agents; the extra's module to skip without it.
AGENTS = [(PLANNERS, "oracle", "eb_alfred", None), (PLANNERS, "random", "eb_alfred", None),
          (PLANNERS, "oracle", "alfred", None), (PLANNERS, "oracle", "eb_manipulation", "robosuite"),
          (PLANNERS, "random", "eb_manipulation", "robosuite")]


@pytest.mark.parametrize("registry,name,suite,needs", AGENTS, ids=[f"{s}.{n}" for _, n, s, _ in AGENTS])
def test_reference_agent_parses_and_identifies_by_name_and_version(registry, name, suite, needs):
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"needs {needs}")
    agent = registry.build(name, suite=suite)
    assert agent.params is not None
    assert set(agent.identity()) <= {"name", "version"}, agent.identity()
    with pytest.raises(ParamError):
        registry.build(name, suite=suite, no_such_param=1)


def test_declared_values_are_checked():
    with pytest.raises(ParamError, match="max_plan_length must be"):
        PLANNERS.build("oracle", suite="eb_alfred", max_plan_length=0)
    assert PLANNERS.build("oracle", suite="eb_alfred", max_plan_length="7").max_plan_length == 7
    with pytest.raises(ParamError, match="seed must be"):
        PLANNERS.build("random", suite="eb_alfred", seed=-1)
    assert POLICIES  # the policies' declarations are checked in tests/policies
