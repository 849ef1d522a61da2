"""The 213 json_2.1.0 trajectories as restored household worlds (shared by the differential tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from envs.alfred.suite import AlfredSuite
from envs.eb_alfred.episodes import scene_from_metadata, task_from_metadata
from envs.household import TaskSpec, World, build_world
from harness.types import EpisodeSpec


def restored_trajectories(data_dir: Path) -> Iterator[tuple[EpisodeSpec, dict[str, Any], TaskSpec, World]]:
    """(episode, trajectory JSON, task, restored start world) for each of the 213 episodes."""
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    episodes = suite.episodes("eb_valid_seen")
    assert len(episodes) == 213
    for spec in episodes:
        traj = json.loads((data_dir / spec.metadata["trajectory"]).read_text())
        task = task_from_metadata(spec.metadata)
        world = build_world(int(spec.metadata["floor_plan"]), 0, task, scene=scene_from_metadata(spec.metadata))
        yield spec, traj, task, world
