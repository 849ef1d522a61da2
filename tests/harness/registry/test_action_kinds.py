"""Agents and suites declare the kind of action they speak; a mismatch is refused before the run.

``policy=zero`` on eb_alfred and ``planner=random`` on libero used to run and write meaningless
rows; now both exit 2 with one line and write nothing. Each suite's declared ``action_kind`` is
the kind of its gymnasium env's action space (envs/gym_registration.py).
"""

from __future__ import annotations

import importlib.util

import pytest

from harness.registry.catalog import PLANNERS, POLICIES, SUITES
from harness.cli.entry import main
from harness.interfaces import ACTION_KINDS, action_mismatch
from tests.harness.test_bad_input import _cli


def _usage_error(capsys, *argv):
    code = main(list(argv))
    _out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_policy_zero_on_eb_alfred_is_refused_before_the_run(capsys, tmp_path):
    line = _usage_error(capsys, "run", "policy=zero", "split=seen", "limit=1", f"out={tmp_path / 'o'}")
    assert "policy zero cannot act on suite eb_alfred" in line and "planner=" in line
    assert not (tmp_path / "o").exists()


def test_planner_random_on_libero_is_refused_before_the_run(tmp_path):
    """Through the ``harness`` process itself: the check imports robosuite, whose import-time
    warnings the CLI routes to the log; in-process, whether they print depends on whether an
    earlier test imported robosuite already."""
    if importlib.util.find_spec("libero") is None:
        pytest.skip("libero (the libero extra) is not installed")
    proc = _cli("run", ["suite=libero", "split=libero_spatial", "planner=random", "limit=1",
                        f"out={tmp_path / 'o'}"], cwd=tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "planner random cannot act on suite libero" in lines[0] and "policy=" in lines[0]
    assert not (tmp_path / "o").exists()


def test_every_builtin_agent_declares_what_it_produces(branches):
    """Each agent declares the action kinds it produces. An agent whose extra is missing cannot be
    loaded: that is asserted to be the reason (an installed extra must load) and recorded as a
    skipped branch (tests/conftest.py), so CI reruns this test with every extra."""
    from harness.registry.loader import MissingDependencyError
    from tests.conftest import extra_installed

    checked = []
    for registry in (PLANNERS, POLICIES):
        for entry in registry.entries():
            suite = getattr(entry, "suite", None)
            name = f"{registry.kind} {entry.name}" + (f" ({suite})" if suite else "")
            try:
                agent, missing = registry.load(entry.name, suite), None
            except MissingDependencyError as exc:
                agent, missing = None, str(exc)
            if missing is not None:
                assert entry.extra and not extra_installed(entry.extra), f"{name}: {missing}"
                branches.skip(name, f"the {entry.extra} extra is not installed")
                continue
            kinds = getattr(agent, "action_kinds", None)
            assert kinds and set(kinds) <= set(ACTION_KINDS), name
            checked.append(name)
    assert "planner random" in checked and "policy zero" in checked


def _suite_or_skip(name):
    needs = {"libero": "libero", "eb_manipulation": "robosuite"}.get(name)
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"suite {name} needs {needs} (its extra)")
    return SUITES.build(name)


@pytest.mark.parametrize("name", ["eb_alfred", "alfred", "eb_manipulation", "libero"])
def test_declared_action_kind_is_the_gym_action_space(name):
    from envs.gym_registration import action_kind

    suite = _suite_or_skip(name)
    env = suite.make_env()
    try:
        assert suite.action_kind == action_kind(env.action_space)
    finally:
        env.close()


def test_matching_agents_pass():
    eb_alfred, alfred = SUITES.build("eb_alfred"), SUITES.build("alfred")
    for agent in ("random", "oracle", "oracle_json"):
        assert action_mismatch(eb_alfred, "eb_alfred", PLANNERS.load(agent, suite="eb_alfred"), agent) is None
    assert action_mismatch(alfred, "alfred", PLANNERS.load("oracle", suite="alfred"), "alfred_oracle") is None
    # A third-party agent that declares nothing is not refused.
    assert action_mismatch(eb_alfred, "eb_alfred", object(), "x") is None
