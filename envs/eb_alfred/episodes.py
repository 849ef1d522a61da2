"""The six official EB-ALFRED subsets, read in place from EmbodiedBench's data folder.

``<data_dir>/splits/splits.json`` maps each subset to 50 entries
``{"task": "<task_type>-<Object>-<MRecep>-<Parent>-<scene>/trial_...", "repeat_idx": k,
"instruction": "..."}``. ALFRED names task folders after ``pddl_params``: a sliced
target is written ``<Object>Sliced`` (``pick_heat_then_place_in_recep-AppleSliced-...``,
pddl_params ``object_target="Apple", object_sliced=True``); for
look_at_obj_in_light the parent slot holds the lamp (``toggle_target``; the
pddl ``parent_target`` is empty); unused slots are ``None``.

When a trajectory file ``<data_dir>/json_2.1.0/<task>/pp/ann_<k>.json`` exists
(EmbodiedBench's own folder name; ``trajectories/`` is accepted too, and the real
name wins when both hold the file) its ``pddl_params`` are used; otherwise they are
derived from the task path. Metadata records which, and the file's path relative
to the data folder (``trajectory``), so a backend can restore the scene from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from envs.household import TaskSpec
from envs.household.constants import TASK_TYPES
from envs.household.restore import SceneFacts, scene_facts
from envs.eb_alfred.protocol import DATA_ENV_VAR, OFFICIAL_SPLITS
from harness.types import EpisodeSpec

SUITE_NAME = "eb_alfred"


class EpisodeDataError(ValueError):
    """The EB-ALFRED data files are malformed."""


@dataclass(frozen=True)
class TaskPath:
    """A parsed ALFRED task path."""

    task_type: str
    object_target: str
    object_sliced: bool
    mrecep_target: str
    parent_slot: str
    floor_plan: int
    trial: str

    def task_spec(self) -> TaskSpec:
        if self.task_type == "look_at_obj_in_light":
            return TaskSpec(self.task_type, self.object_target, "", toggle_target=self.parent_slot,
                            object_sliced=self.object_sliced)
        return TaskSpec(self.task_type, self.object_target, self.parent_slot,
                        mrecep_target=self.mrecep_target, object_sliced=self.object_sliced)


#: One path component of a task path: no separators, no '..' (a splits.json entry must
#: never make the suite read outside the data folder).
_COMPONENT = re.compile(r"[A-Za-z0-9_.-]+")


def parse_task_path(task: str) -> TaskPath:
    """Parse ``<task_type>-<Object>-<MRecep>-<Parent>-<scene>/<trial>``; ValueError names the problem."""
    if not isinstance(task, str) or "/" not in task:
        raise EpisodeDataError(f"task path {task!r} is not '<task folder>/<trial>'")
    folder, _, trial = task.partition("/")
    for part in (folder, trial):
        if not _COMPONENT.fullmatch(part) or part in (".", ".."):
            raise EpisodeDataError(f"task path {task!r} is not '<task folder>/<trial>' "
                                   "(two plain names; no '..', no absolute path)")
    parts = folder.split("-")
    if len(parts) != 5:
        raise EpisodeDataError(
            f"task folder {folder!r} should have 5 '-'-separated fields "
            "(<task_type>-<Object>-<MRecep>-<Parent>-<scene_num>)")
    task_type, obj, mrecep, parent, scene = parts
    if task_type not in TASK_TYPES:
        raise EpisodeDataError(f"task folder {folder!r}: unknown ALFRED task type {task_type!r}")
    if not scene.isdigit():
        raise EpisodeDataError(f"task folder {folder!r}: scene number {scene!r} is not an integer")
    sliced = obj.endswith("Sliced")
    return TaskPath(
        task_type=task_type,
        object_target=obj[: -len("Sliced")] if sliced else obj,
        object_sliced=sliced,
        mrecep_target="" if mrecep == "None" else mrecep,
        parent_slot="" if parent == "None" else parent,
        floor_plan=int(scene),
        trial=trial,
    )


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The data folder: the argument, else ``$EB_ALFRED_DATA_DIR``, else the folder
    ``harness fetch eb_alfred`` filled (:func:`harness.registry.datasets.fetched_dir`), else None."""
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_ENV_VAR) or None
    if not chosen:
        from harness.registry.datasets import fetched_dir

        return fetched_dir("eb_alfred")
    return Path(chosen).expanduser()


def missing_data_message(path: Path | None) -> str:
    where = f"'{path}' has no splits/splits.json" if path else "no EB-ALFRED data folder is set"
    return (
        f"{where}. The official EB-ALFRED subsets need EmbodiedBench's data folder "
        "(splits/splits.json and the trajectory files json_2.1.0/<task>/pp/ann_<k>.json). "
        f"Run `harness fetch eb_alfred`, or set {DATA_ENV_VAR} to a copy of "
        "embodiedbench/envs/eb_alfred/data (or pass suite.params.data_dir=...). "
        "The generated splits 'seen'/'unseen' need no data."
    )


def splits_file(data_dir: Path | None) -> Path:
    """``<data_dir>/splits/splits.json``; FileNotFoundError with instructions when absent."""
    if data_dir is None or not (data_dir / "splits" / "splits.json").is_file():
        raise FileNotFoundError(missing_data_message(data_dir))
    return data_dir / "splits" / "splits.json"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def episodes_sha256(episodes: Sequence[EpisodeSpec]) -> str:
    """sha256 of what a split's episodes carry into a run (id, seed, instruction, metadata:
    task, restored scene facts, trajectory path), as canonical JSON."""
    rows = [[e.episode_id, e.seed, e.instruction, e.metadata] for e in episodes]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


#: Folders of trajectory files under the data folder, preferred first: EmbodiedBench's
#: real name (``embodiedbench/envs/eb_alfred/data/json_2.1.0``), then the older
#: ``trajectories`` name this harness used first.
TRAJECTORY_DIRS: tuple[str, ...] = ("json_2.1.0", "trajectories")


def trajectory_file(data_dir: Path, task: str, repeat_idx: int) -> Path | None:
    """The trajectory file of ``(task, repeat_idx)`` in the first folder of
    :data:`TRAJECTORY_DIRS` that has it, else None."""
    root = Path(os.path.normpath(data_dir))
    for folder in TRAJECTORY_DIRS:
        path = data_dir / folder / task / "pp" / f"ann_{repeat_idx}.json"
        # Lexical check (a data folder may hold symlinks to the real files; '..' may not).
        if not Path(os.path.normpath(path)).is_relative_to(root):
            raise EpisodeDataError(f"trajectory path {path} lies outside the data folder {data_dir}")
        if path.is_file():
            return path
    return None


def read_trajectory(path: Path) -> dict[str, Any]:
    """A trajectory JSON; :class:`EpisodeDataError` when unreadable or not an object."""
    try:
        with open(path, encoding="utf-8") as fh:
            traj = json.load(fh)
    except (OSError, ValueError) as exc:
        raise EpisodeDataError(f"trajectory file {path} is malformed: {exc}") from exc
    if not isinstance(traj, dict):
        raise EpisodeDataError(f"trajectory file {path} is not a JSON object")
    return traj


def _trajectory_params(data_dir: Path, task: str, repeat_idx: int
                       ) -> tuple[dict[str, Any] | None, str | None, Path | None, SceneFacts | None]:
    """``pddl_params``, ``task_type``, the path and the scene facts of the trajectory file, if present."""
    path = trajectory_file(data_dir, task, repeat_idx)
    if path is None:
        return None, None, None, None
    traj = read_trajectory(path)
    try:
        params = dict(traj["pddl_params"])
        facts = scene_facts(traj) if "scene" in traj else None  # pddl-only files restore nothing
        return params, str(traj.get("task_type", "")), path, facts
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise EpisodeDataError(f"trajectory file {path} is malformed: {exc}") from exc


def task_spec_from_params(params: Mapping[str, Any], task_type: str) -> TaskSpec:
    """A TaskSpec from ALFRED ``pddl_params``."""
    return TaskSpec(
        task_type=task_type,
        object_target=str(params.get("object_target") or ""),
        parent_target=str(params.get("parent_target") or ""),
        mrecep_target=str(params.get("mrecep_target") or ""),
        toggle_target=str(params.get("toggle_target") or ""),
        object_sliced=bool(params.get("object_sliced", False)),
    )


def _entry_spec(data_dir: Path, split: str, index: int, entry: Any, restore_scenes: bool = True) -> EpisodeSpec:
    where = f"{split}[{index}]"
    if not isinstance(entry, Mapping):
        raise EpisodeDataError(f"splits.json {where} is not an object")
    missing = [k for k in ("task", "repeat_idx", "instruction") if k not in entry]
    if missing:
        raise EpisodeDataError(f"splits.json {where} lacks {', '.join(missing)}")
    task = entry["task"]
    try:
        repeat_idx = int(entry["repeat_idx"])
    except (TypeError, ValueError) as exc:
        raise EpisodeDataError(f"splits.json {where}: repeat_idx {entry['repeat_idx']!r} is not an int") from exc
    parsed = parse_task_path(task)
    params, traj_type, traj_path, facts = _trajectory_params(data_dir, task, repeat_idx)
    if params is not None:
        spec = task_spec_from_params(params, traj_type or parsed.task_type)
        source = "trajectory"
    else:
        spec = parsed.task_spec()
        source = "task_path"
    metadata = {
        "subset": split,
        "style": split,
        "task": task,
        "repeat_idx": repeat_idx,
        "floor_plan": parsed.floor_plan,
        "task_type": spec.task_type,
        "pddl_params": {
            "object_target": spec.object_target, "parent_target": spec.parent_target,
            "mrecep_target": spec.mrecep_target, "toggle_target": spec.toggle_target,
            "object_sliced": spec.object_sliced,
        },
        "pddl_source": source,
    }
    if traj_path is not None:
        metadata["trajectory"] = traj_path.relative_to(data_dir).as_posix()
    if facts is not None and restore_scenes:
        # What the household backend restores from the trajectory (envs/household/restore.py).
        metadata["scene"] = facts.to_dict()
    return EpisodeSpec(SUITE_NAME, split, f"{split}/{index:02d}", 0, str(entry["instruction"]), metadata)


def load_official(data_dir: Path | None, restore_scenes: bool = True) -> dict[str, list[EpisodeSpec]]:
    """All six subsets from ``<data_dir>/splits/splits.json``, in file order.

    With ``restore_scenes`` (default) an episode whose trajectory file exists
    carries its :class:`~envs.household.restore.SceneFacts` as ``metadata["scene"]``.

    Raises FileNotFoundError (with instructions) without data and
    :class:`EpisodeDataError` for malformed files.
    """
    path = splits_file(data_dir)
    assert data_dir is not None
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except ValueError as exc:
        raise EpisodeDataError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, Mapping):
        raise EpisodeDataError(f"{path} should map subset names to episode lists")
    out: dict[str, list[EpisodeSpec]] = {}
    for split in OFFICIAL_SPLITS:
        entries = raw.get(split)
        if not isinstance(entries, list):
            raise EpisodeDataError(f"{path} has no episode list for subset {split!r}")
        out[split] = [_entry_spec(data_dir, split, i, e, restore_scenes) for i, e in enumerate(entries)]
    return out


def task_from_metadata(metadata: Mapping[str, Any]) -> TaskSpec:
    """Rebuild the TaskSpec an EpisodeSpec describes (ValueError if malformed)."""
    try:
        return task_spec_from_params(metadata["pddl_params"], metadata["task_type"])
    except KeyError as exc:
        raise EpisodeDataError(f"episode metadata lacks {exc}") from exc


def scene_from_metadata(metadata: Mapping[str, Any]) -> SceneFacts | None:
    """The restored scene facts an EpisodeSpec carries, or None."""
    raw = metadata.get("scene")
    if raw is None:
        return None
    try:
        return SceneFacts.from_dict(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise EpisodeDataError(f"episode metadata 'scene' is malformed: {exc}") from exc
