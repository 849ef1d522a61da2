"""The ALFRED suite (backend ``household``; AI2-THOR in :mod:`envs.alfred.thor`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from envs.alfred.env import AlfredEnv
from envs.alfred.episodes import (
    eb_trajectory_files, generated_split, files_digest, load_alfred_split, load_eb_split, resolve_alfred_dir,
)
from envs.alfred.protocol import DATA_SPLITS, EB_SPLIT, GENERATED_SPLITS, MAX_FAILS, MAX_STEPS, TEST_SPLITS
from envs.eb_alfred.episodes import resolve_data_dir
from envs.eb_alfred.generator import floor_plans
from envs.thor.session import THOR_VERSION, require_ai2thor
from envs.alfred.plugin import AlfredParams
from harness.params import parse
from harness.types import PROTOCOL_EXPERT_LENGTH_UNIT, EpisodeSpec

#: Bumped whenever rules, episodes or scoring change. 1.1.0: the household engine's
#: restore, put, openable and faucet rules of eb_alfred 1.3.0.
#: 1.2.0: the default image (image=frame) shows only what a camera frame would (receptacles
#: in view from the trajectory's start pose, then what the agent faces, no text);
#: image=annotated keeps the labelled schematic.
#: 1.3.0: T of the path-length weight is ALFRED's t (``path_length``: the stop, and the action that
#: reaches the failure limit, do not count); on AI2-THOR, GotoLocation walks ALFRED's primitives
#: and T, L* and the step limit count ALFRED's low-level actions.
SUITE_VERSION = "1.3.0"
#: How the household backend navigates (recorded in the protocol).
NAVIGATION = "teleport: GotoLocation faces the grounded instance (privileged)"
#: How the AI2-THOR backend navigates (recorded in the protocol).
THOR_NAVIGATION = ("walk: GotoLocation walks ALFRED's expert path in MoveAhead/RotateLeft/RotateRight/LookUp/"
                   "LookDown to ALFRED's pose for the grounded object (privileged)")
#: The unit of L*, T and the step limit (``expert_length_unit``), per backend.
LENGTH_UNITS = {"household": "interactions + GotoLocation subgoals",
                "thor": "ALFRED low-level actions"}


class AlfredSuite:
    """ALFRED (seen / unseen) with FLARE-style triplet planning on the household backend.

    Splits: ``seen`` / ``unseen`` (generated, no data), ``eb_valid_seen`` (EmbodiedBench's
    json_2.1.0 files: ``eb_data_dir`` or ``$EB_ALFRED_DATA_DIR``), and ALFRED's
    ``valid_seen`` / ``valid_unseen`` / ``tests_seen`` / ``tests_unseen`` from an ALFRED
    data folder (``alfred_data_dir`` or ``$ALFRED_DATA_DIR``).
    """

    name = "alfred"
    version = SUITE_VERSION
    #: its env's gymnasium action space (harness.interfaces.ACTION_KINDS)
    action_kind = "text"
    #: Reaching the goal does not end an episode: success is read when the agent stops (envs/alfred/env.py).
    success_at_stop = True
    #: The parameter declaration (envs/alfred/plugin.py): defaults and checks live there.
    Params = AlfredParams

    def __init__(self, **values: Any) -> None:
        self.params = p = parse(self.Params, values)
        self.alfred_dir = resolve_alfred_dir(p.alfred_data_dir)
        self.eb_dir = resolve_data_dir(p.eb_data_dir)
        self.backend = p.backend
        self.render = p.render
        self.generated_per_split = p.generated_per_split
        self.generator_seed = p.generator_seed
        self.restore_scenes = p.restore_scenes
        self._cache: dict[str, list[EpisodeSpec]] = {}
        # AI2-THOR only (not results-changing: where and how patiently the simulator runs).
        self.x_display, self.step_timeout_s, self.max_restarts = p.x_display, p.step_timeout_s, p.max_restarts
        #: tests put a fake controller factory here; None starts ai2thor's real Controller.
        self.controller_factory: Any = None

    def splits(self) -> Sequence[str]:
        data = (EB_SPLIT, *DATA_SPLITS, *TEST_SPLITS)
        # Generated episodes have no trajectory to restore on AI2-THOR.
        return data if self.backend == "thor" else (*GENERATED_SPLITS, *data)

    def protocol(self, split: str) -> Mapping[str, Any]:
        """The derived facts that change the results of ``split``: constants, the simulator's
        version, the generated floor plans, the data files' digest (the declared parameters
        enter the run identity from :attr:`params`)."""
        proto: dict[str, Any] = {
            "max_steps": MAX_STEPS,
            "max_fails": MAX_FAILS,
            "navigation": NAVIGATION if self.backend == "household" else THOR_NAVIGATION,
            "action_language": "FLARE triplets expanded to GotoLocation + ALFRED interactions",
            PROTOCOL_EXPERT_LENGTH_UNIT: LENGTH_UNITS[self.backend],
            "success": "goal conditions at stop (ALFRED eval_task)",
        }
        if self.backend == "thor":
            proto["thor_version"] = THOR_VERSION
        if split in GENERATED_SPLITS:
            proto["floor_plans"] = list(floor_plans(split))
        elif split == EB_SPLIT:
            folder = self._eb_folder()
            proto["data_digest"] = files_digest(eb_trajectory_files(folder.parent), folder)
        elif split in (*DATA_SPLITS, *TEST_SPLITS):
            root = self._alfred_root(split)
            files = {*(root / split).glob("*/*/traj_data.json"), *(root / split).glob("*/traj_data.json")}
            proto["data_digest"] = files_digest(files, root)
        return proto

    def _eb_folder(self) -> Path:
        if self.eb_dir is None or not (self.eb_dir / "json_2.1.0").is_dir():
            raise FileNotFoundError(
                f"split {EB_SPLIT!r} needs EmbodiedBench's EB-ALFRED data folder with json_2.1.0/; "
                "set suite.params.eb_data_dir or EB_ALFRED_DATA_DIR")
        return self.eb_dir / "json_2.1.0"

    def _alfred_root(self, split: str) -> Path:
        if self.alfred_dir is None:
            raise FileNotFoundError(
                f"split {split!r} needs ALFRED's data folder (data/json_2.1.0); set "
                "suite.params.alfred_data_dir or ALFRED_DATA_DIR")
        return self.alfred_dir

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split not in self.splits():
            raise KeyError(f"unknown alfred split {split!r}; splits are {', '.join(self.splits())}")
        if self.backend == "thor":
            require_ai2thor(self.controller_factory)
        if split in GENERATED_SPLITS:  # lazy: only the episodes read are built
            return generated_split(split, self.generated_per_split, self.generator_seed)
        if split not in self._cache:
            if split == EB_SPLIT:
                self._eb_folder()
                assert self.eb_dir is not None
                eps = load_eb_split(self.eb_dir, self.restore_scenes)
            else:
                eps = load_alfred_split(self._alfred_root(split), split, self.restore_scenes)
            self._cache[split] = eps
        return list(self._cache[split])

    def make_env(self) -> AlfredEnv:
        if self.backend == "thor":
            from envs.alfred.thor import AlfredThorEnv

            return AlfredThorEnv([self.eb_dir, self.alfred_dir], self.controller_factory, render_images=self.render,
                                 x_display=self.x_display, step_timeout_s=self.step_timeout_s,
                                 max_restarts=self.max_restarts)
        return AlfredEnv(render_images=self.render, image=self.params.image)
