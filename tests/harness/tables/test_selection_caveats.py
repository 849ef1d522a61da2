"""Caveats for every selection: a protocol's wall-clock limit is a failure class of its own and
counted as a timeout; a suite's own selection parameters (``split_total``) mark a cell partial
like ``limit``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.scoring.failures import classify
from harness.run.runner import Runner, split_size
from harness.store import ResultStore
from harness.types import (
    INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS, INFO_SUCCESS, INFO_TERMINATION,
    TERMINATION_EPISODE_TIMEOUT, EpisodeSpec, RunSpec,
)


class ClockSuite:
    """Four one-step episodes of a ten-episode split (``split_total``); episode 1 ends on the
    protocol's wall-clock limit."""

    name = "clock_test"
    version = "1"
    action_kind = "text"

    def splits(self) -> Sequence[str]:
        return ("test",)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1}

    def split_total(self, split: str) -> int:
        return 10

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        return [EpisodeSpec(self.name, split, f"e{i}", i, "go") for i in range(4)]

    def make_env(self) -> "ClockEnv":
        return ClockEnv()


class ClockEnv:
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        self.seed = seed
        return {"text": ""}, {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0}

    def step(self, action: Any):
        timed_out = self.seed == 1
        info = {INFO_SUCCESS: not timed_out, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0,
                INFO_TERMINATION: TERMINATION_EPISODE_TIMEOUT if timed_out else "success"}
        return {"text": ""}, 0.0, not timed_out, timed_out, info

    def close(self) -> None:
        pass


class Go:
    name = "go"
    privileged = False
    reads_images = False
    action_kinds = frozenset({"text"})

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[Any]) -> list[Any]:
        return [["go"] for _ in requests]


def test_a_wall_clock_limit_is_its_own_failure_class_and_a_timeout(tmp_path):
    suite = ClockSuite()
    assert split_size(suite, "test") == 10  # the whole split, not the four selected
    with ResultStore(tmp_path / "results.sqlite") as store:
        spec = RunSpec(suite=suite.name, split="test", agent="go", variant="v")
        runner = Runner(spec, suite, Go(), store)
        runner.run()
        (record,) = [r for r in store.records() if r.seed == 1]
        assert record.termination == TERMINATION_EPISODE_TIMEOUT and record.error_kind is None
        assert classify(record.to_dict()) == "time_limit"
        assert store.run_failures(runner.run_id)["timeouts"] == 1
        (provenance,) = store.provenance(runner.run_id)
        assert provenance["split_episodes"] == 10  # so the table's cell reads 4/10, partial
