"""ALFRED episodes: from an ALFRED data folder, from EmbodiedBench's 130 valid_seen
trials, and from the household generator.

An episode is one (trajectory, annotation) pair, as in ALFRED's evaluation.

- ALFRED data folder (``$ALFRED_DATA_DIR``; ALFRED's ``data/json_2.1.0`` or its
  parent): ``<split>/<task>/<trial>/traj_data.json``, one episode per entry of
  ``turk_annotations.anns``. ``valid_seen`` / ``valid_unseen`` carry goals;
  ``tests_seen`` / ``tests_unseen`` carry none (ALFRED strips ``task_type`` and
  ``pddl_params``): their episodes run for action-sequence dumps only.
- ``eb_valid_seen``: the trajectory files EB-ALFRED's 300 episodes name
  (``splits/splits.json``'s ``task`` / ``repeat_idx``: 213 files of 130 valid_seen
  trials, ``json_2.1.0/<task>/pp/ann_<k>.json``), one episode per file. EmbodiedBench's
  full ``json_2.1.0`` holds more trials (1,267 files); without a ``splits.json`` every
  file of the folder is an episode.
- ``seen`` / ``unseen``: the household generator's episodes
  (:mod:`envs.eb_alfred.generator`: ALFRED training floor plans / ALFRED's
  valid_unseen floor plans) with an ALFRED-style (base) instruction.

The expert length L* of a trajectory episode comes from its low-level plan
(``plan.low_actions``). On the household backend navigation is one
``GotoLocation`` step per ``GotoLocation`` subgoal, so L* is counted in the
same unit: the interaction actions of ``low_actions`` plus the ``GotoLocation``
subgoals of ``high_pddl``; ALFRED's raw ``len(low_actions)`` is kept as
``expert_low_actions`` (the AI2-THOR backend's L*).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from envs.alfred.protocol import DATA_ENV_VAR, EB_SPLIT, NAVIGATION_ACTIONS, TEST_SPLITS
from envs.eb_alfred.episodes import EpisodeDataError, read_trajectory, task_spec_from_params, trajectory_file
from envs.eb_alfred.generator import generate_one
from envs.eb_alfred.language import make_instruction
from envs.household import build_world
from envs.household.restore import scene_facts
from harness.types import EpisodeSpec, LazyEpisodes

SUITE_NAME = "alfred"


def resolve_alfred_dir(path: str | os.PathLike[str] | None) -> Path | None:
    chosen = path if path not in (None, "") else os.environ.get(DATA_ENV_VAR) or None
    if not chosen:
        return None
    root = Path(chosen).expanduser()
    return root / "json_2.1.0" if (root / "json_2.1.0").is_dir() else root


def expert_lengths(traj: Mapping[str, Any]) -> tuple[int, int]:
    """(L* in this suite's household unit, ALFRED's raw ``len(low_actions)``)."""
    low = traj["plan"]["low_actions"]
    interactions = sum(1 for a in low if a["api_action"]["action"] not in NAVIGATION_ACTIONS)
    gotos = sum(1 for h in traj["plan"]["high_pddl"] if h["discrete_action"]["action"] == "GotoLocation")
    return interactions + gotos, len(low)


def _instruction(traj: Mapping[str, Any], r: int) -> tuple[str, list[str]]:
    anns = traj.get("turk_annotations", {}).get("anns", [])
    if not anns:
        raise EpisodeDataError("trajectory has no turk_annotations.anns")
    ann = anns[r]
    return str(ann["task_desc"]).strip(), [str(d).strip() for d in ann.get("high_descs", [])]


def trajectory_episode(traj: Mapping[str, Any], split: str, episode_id: str, r: int, rel_path: str,
                       restore_scenes: bool = True) -> EpisodeSpec:
    """The EpisodeSpec of annotation ``r`` of one trajectory."""
    try:
        instruction, high_descs = _instruction(traj, r)
        has_goal = bool(traj.get("task_type")) and bool(traj.get("pddl_params"))
        metadata: dict[str, Any] = {
            "floor_plan": int(traj["scene"]["scene_num"]),
            "trajectory": rel_path,
            "repeat_idx": r,
            "task_id": traj.get("task_id"),
            "high_descs": high_descs,
        }
        if has_goal:
            spec = task_spec_from_params(traj["pddl_params"], str(traj["task_type"]))
            metadata["task_type"] = spec.task_type
            metadata["pddl_params"] = {
                "object_target": spec.object_target, "parent_target": spec.parent_target,
                "mrecep_target": spec.mrecep_target, "toggle_target": spec.toggle_target,
                "object_sliced": spec.object_sliced,
            }
            metadata["expert_length"], metadata["expert_low_actions"] = expert_lengths(traj)
        else:
            metadata["task_type"] = None
        if restore_scenes:
            metadata["scene"] = scene_facts(traj).to_dict()
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise EpisodeDataError(f"trajectory {rel_path} is malformed: {exc}") from exc
    return EpisodeSpec(SUITE_NAME, split, episode_id, 0, instruction, metadata)


def load_alfred_split(root: Path, split: str, restore_scenes: bool = True) -> list[EpisodeSpec]:
    """Every (trial, annotation) of ``<root>/<split>/[<task>/]<trial>/traj_data.json``, sorted."""
    folder = root / split
    if not folder.is_dir():
        raise FileNotFoundError(
            f"'{folder}' does not exist: the ALFRED suite's split {split!r} needs ALFRED's data folder "
            f"(data/json_2.1.0 with {split}/<task>/<trial>/traj_data.json); set suite.params.alfred_data_dir "
            f"or {DATA_ENV_VAR}")
    out = []
    # <task>/<trial>/traj_data.json; test splits may hold <trial>/traj_data.json (no task name).
    for path in sorted({*folder.glob("*/*/traj_data.json"), *folder.glob("*/traj_data.json")}):
        traj = read_trajectory(path)
        n = len(traj.get("turk_annotations", {}).get("anns", []))
        rel = path.relative_to(root).as_posix()
        trial = path.parent.relative_to(folder).as_posix()
        for r in range(n):
            out.append(trajectory_episode(traj, split, f"{trial}/{r}", r, rel, restore_scenes))
    if split not in TEST_SPLITS and any(e.metadata["task_type"] is None for e in out):
        raise EpisodeDataError(f"{folder}: trajectories without task_type / pddl_params in a split with goals")
    return out


def eb_trajectory_files(eb_data_dir: Path) -> list[Path]:
    """The trajectory files of split ``eb_valid_seen``: those ``splits/splits.json`` names
    (each (task, repeat_idx) once), else every ``json_2.1.0/<task>/<trial>/pp/ann_<k>.json``."""
    folder = eb_data_dir / "json_2.1.0"
    splits = eb_data_dir / "splits" / "splits.json"
    if not splits.is_file():
        return sorted(folder.glob("*/*/pp/ann_*.json"))
    try:
        subsets = json.loads(splits.read_text(encoding="utf-8"))
        named = {(str(e["task"]), int(e["repeat_idx"])) for entries in subsets.values() for e in entries}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise EpisodeDataError(f"{splits}: not EmbodiedBench's splits file ({type(exc).__name__}: {exc})") from None
    paths = []
    for task, r in sorted(named):
        path = trajectory_file(eb_data_dir, task, r)
        if path is None or not path.is_relative_to(folder):
            raise EpisodeDataError(f"{splits} names {task} annotation {r}, which {folder} does not hold")
        paths.append(path)
    return sorted(paths)


def load_eb_split(eb_data_dir: Path, restore_scenes: bool = True) -> list[EpisodeSpec]:
    """EmbodiedBench's json_2.1.0 trajectory files (``<task>/<trial>/pp/ann_<k>.json``)."""
    folder = eb_data_dir / "json_2.1.0"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"'{folder}' does not exist: split {EB_SPLIT!r} reads EmbodiedBench's EB-ALFRED data folder "
            "(json_2.1.0/<task>/<trial>/pp/ann_<k>.json); set suite.params.eb_data_dir or EB_ALFRED_DATA_DIR")
    out = []
    for path in eb_trajectory_files(eb_data_dir):
        traj = read_trajectory(path)
        r = int(path.stem.split("_")[1])
        trial = path.parent.parent.relative_to(folder).as_posix()
        out.append(trajectory_episode(traj, EB_SPLIT, f"{trial}/{r}", r, path.relative_to(eb_data_dir).as_posix(),
                                      restore_scenes))
    return out


@lru_cache(maxsize=8192)
def generated_one(split: str, index: int, seed: int) -> EpisodeSpec:
    """Generated episode ``index`` with an ALFRED-style (base) instruction (memoised)."""
    e = generate_one(split, index, seed)
    meta = {k: v for k, v in e.metadata.items() if k not in ("expert_length", "expert_length_seed", "style")}
    task = task_spec_from_params(meta["pddl_params"], meta["task_type"])
    world = build_world(int(meta["floor_plan"]), e.seed, task)
    rng = random.Random(f"alfred-instruction|{split}|{seed}|{e.episode_id}")
    instruction = make_instruction(task, "base", world, rng)
    return EpisodeSpec(SUITE_NAME, split, e.episode_id, e.seed, instruction, meta)


def generated_split(split: str, count: int, seed: int) -> LazyEpisodes:
    """The household generator's episodes with ALFRED-style (base) instructions, built when read."""
    return LazyEpisodes(functools.partial(generated_one, split, seed=seed), count)


def files_digest(paths: Iterable[Path], root: Path) -> str:
    """sha256 over (relative path, size) of data files: cheap, and changes when the set or a file does."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\n".encode())
    return h.hexdigest()
