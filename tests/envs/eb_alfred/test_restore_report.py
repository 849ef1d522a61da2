"""Every official episode starts from its trajectory's scene; the restored-scene report."""

from __future__ import annotations

from pathlib import Path

from envs.eb_alfred.episodes import load_official, scene_from_metadata
from envs.eb_alfred.restore_report import official_changes, report
from envs.eb_alfred.suite import EBAlfredSuite
from harness.params import identity_of


def test_official_episodes_carry_scene_facts_unless_disabled(data_dir: Path) -> None:
    official = load_official(data_dir)
    with_traj = [e for eps in official.values() for e in eps if "trajectory" in e.metadata]
    assert with_traj and all(scene_from_metadata(e.metadata) is not None for e in with_traj)
    plain = load_official(data_dir, restore_scenes=False)
    assert not any("scene" in e.metadata for eps in plain.values() for e in eps)
    def identity(suite: EBAlfredSuite) -> tuple:  # what the run identity hashes of a suite
        return identity_of(suite.params), suite.protocol("base")

    a = identity(EBAlfredSuite(data_dir=str(data_dir)))
    b = identity(EBAlfredSuite(data_dir=str(data_dir), restore_scenes=False))
    assert a != b  # the choice enters the run identity


def test_restored_scene_report(data_dir: Path) -> None:
    changes = official_changes(data_dir)
    stats = report(changes)
    print(stats)
    assert stats["episodes"] == len(changes) > 0
    assert 0 < stats["starts_changed_type"] <= stats["starts_changed"] <= stats["episodes"]
    assert 0 < stats["counts_changed"] <= stats["episodes"]
    assert stats["expert_unsolved_after"] == 0
