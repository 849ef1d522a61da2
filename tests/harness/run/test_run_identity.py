"""The run identity: every ingredient that changes results changes the run id, and
nothing else does. A suite or agent that changes results without changing the run
id would resume (and mix) records of a different experiment.

Small suite and agent objects satisfying the protocols stand in where only
their identity matters (``run_identity`` never steps an env).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import pytest

import harness.run.identity as identity_module
from harness.interfaces import Agent, Suite
from harness.run.identity import run_id_of, run_identity
from harness.types import SCHEMA_VERSION, EpisodeSpec, RunSpec


@dataclass
class IdSuite:
    """A suite whose identity ingredients are set by the test (it has no episodes)."""

    name: str = "idsuite"
    version: str = "1.0"
    proto: dict[str, Mapping[str, Any]] = field(default_factory=lambda: {
        "a": {"max_steps": 30, "backend": "x"}, "b": {"max_steps": 30, "backend": "x"}})

    def protocol(self, split: str) -> Mapping[str, Any]:
        return self.proto[split]

    def splits(self):
        return tuple(self.proto)

    def episodes(self, split: str):
        return []

    def make_env(self):
        raise NotImplementedError("identity tests never make an env")


@dataclass
class IdAgent:
    """A scripted agent whose ``identity()`` is set by the test."""

    ident: dict[str, Any] = field(default_factory=lambda: {"checkpoint_sha256": "aa", "prompt_version": 1})
    name: str = "scripted"
    privileged: bool = False

    def identity(self) -> Mapping[str, Any]:
        return dict(self.ident)

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests):
        return [["noop"] for _ in requests]


BASE = RunSpec(suite="idsuite", split="a", agent="scripted", variant="base")


def rid(spec: RunSpec = BASE, suite: IdSuite | None = None, agent: IdAgent | None = None) -> str:
    return run_id_of(run_identity(spec, suite or IdSuite(), agent or IdAgent()))


def test_fakes_satisfy_the_protocols() -> None:
    assert isinstance(IdSuite(), Suite) and isinstance(IdAgent(), Agent)


def test_run_id_is_stable() -> None:
    assert rid() == rid()
    assert len(rid()) == 16 and int(rid(), 16) >= 0


# Each case changes one ingredient; the run id must change. Mutation caught by
# each: leaving that ingredient out of ``run_identity``.
@pytest.mark.parametrize("case", [
    "agent_identity_checkpoint", "agent_identity_prompt", "suite_version", "suite_protocol_constant",
    "suite_protocol_of_this_split_only", "suite_name", "split", "variant", "agent_name", "seed_offset",
    "repeat_index",
])
def test_each_ingredient_changes_the_run_id(case: str) -> None:
    changed = {
        "agent_identity_checkpoint": lambda: rid(agent=IdAgent({"checkpoint_sha256": "bb", "prompt_version": 1})),
        "agent_identity_prompt": lambda: rid(agent=IdAgent({"checkpoint_sha256": "aa", "prompt_version": 2})),
        "suite_version": lambda: rid(suite=IdSuite(version="1.1")),
        "suite_protocol_constant": lambda: rid(suite=IdSuite(proto={
            "a": {"max_steps": 31, "backend": "x"}, "b": {"max_steps": 30, "backend": "x"}})),
        "suite_protocol_of_this_split_only": lambda: rid(suite=IdSuite(proto={
            "a": {"max_steps": 30, "backend": "y"}, "b": {"max_steps": 30, "backend": "x"}})),
        "suite_name": lambda: rid(replace(BASE, suite="other"), suite=IdSuite(name="other")),
        "split": lambda: rid(replace(BASE, split="b")),
        "variant": lambda: rid(replace(BASE, variant="favor_sft")),
        "agent_name": lambda: rid(replace(BASE, agent="other"), agent=IdAgent(name="other")),
        "seed_offset": lambda: rid(replace(BASE, seed=1)),
        "repeat_index": lambda: rid(replace(BASE, repeat=1)),
    }[case]
    assert changed() != rid(), case


def test_split_with_identical_protocol_still_differs() -> None:
    """Both splits have the same protocol here: the split name itself must be in the id.
    Mutation caught: identity built from the protocol alone."""
    suite = IdSuite()
    assert suite.protocol("a") == suite.protocol("b")
    assert rid(replace(BASE, split="b"), suite=suite) != rid(suite=suite)


def test_protocol_of_another_split_does_not_matter() -> None:
    """Only the run's own split's protocol counts (a new data file for split b does
    not restart runs of split a)."""
    other = IdSuite(proto={"a": {"max_steps": 30, "backend": "x"}, "b": {"max_steps": 99, "backend": "z"}})
    assert rid(suite=other) == rid()


def test_schema_version_changes_the_run_id(monkeypatch) -> None:
    """Mutation caught: leaving the record schema version out of the identity (a new
    record layout would resume rows written under the old one)."""
    before = rid()
    monkeypatch.setattr(identity_module, "IDENTITY_SCHEMA_VERSION", identity_module.IDENTITY_SCHEMA_VERSION + 1)
    assert rid() != before


@pytest.mark.parametrize("knob", [
    {"num_workers": 8}, {"batch_size": 1}, {"batch_size": 64}, {"executor": "process"}, {"limit": 3},
    {"limit": None},
])
def test_execution_knobs_do_not_change_the_run_id(knob: dict) -> None:
    """Worker count, batch size, executor and limit change how much of a run is executed
    and how, not its results: a rerun with other settings resumes the same run.
    Mutation caught: hashing the whole RunSpec (or any of these fields) into the id."""
    base = replace(BASE, limit=10, num_workers=2, batch_size=8)
    assert rid(replace(base, **knob)) == rid(base)


def test_seed_zero_keeps_the_run_ids_of_existing_stores() -> None:
    """The seed offset enters the identity only when set: a run without one keeps the id it
    had before the offset was an ingredient. Mutation caught: always adding the key."""
    assert "seed_offset" not in run_identity(BASE, IdSuite(), IdAgent())
    assert rid(replace(BASE, seed=0)) == rid()
    assert "repeat" not in run_identity(BASE, IdSuite(), IdAgent())  # nor the repeat index


def test_identity_is_json_order_independent() -> None:
    """The same identity written in another key order is the same run."""
    a = IdAgent({"checkpoint_sha256": "aa", "prompt_version": 1})
    b = IdAgent({"prompt_version": 1, "checkpoint_sha256": "aa"})
    assert rid(agent=a) == rid(agent=b)


def test_eb_alfred_render_switch_enters_the_protocol():
    """Whether a planner gets an image changes a VLM planner's results: a run without images
    must not resume one with them (mutation guarded: leaving render out of the protocol)."""
    from envs.eb_alfred.suite import EBAlfredSuite

    on = EBAlfredSuite(render=True, generated_per_split=2).protocol("seen")
    off = EBAlfredSuite(render=False, generated_per_split=2).protocol("seen")
    assert on != off and on["image_size"] and off["image_size"] is None
