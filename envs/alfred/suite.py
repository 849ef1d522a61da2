"""The ALFRED suite (backend ``household``; AI2-THOR in :mod:`envs.alfred.thor`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from envs.alfred.env import AlfredEnv
from envs.alfred.episodes import (
    generated_split, files_digest, load_alfred_split, load_eb_split, resolve_alfred_dir,
)
from envs.alfred.protocol import DATA_SPLITS, EB_SPLIT, GENERATED_SPLITS, MAX_FAILS, MAX_STEPS, TEST_SPLITS
from envs.eb_alfred.episodes import resolve_data_dir
from envs.eb_alfred.generator import floor_plans
from harness.types import EpisodeSpec

#: Bumped whenever rules, episodes or scoring change.
SUITE_VERSION = "1.0.0"
#: How the household backend navigates (recorded in the protocol).
NAVIGATION = "teleport: GotoLocation faces the grounded instance (privileged)"


class AlfredSuite:
    """ALFRED (seen / unseen) with FLARE-style triplet planning on the household backend.

    Splits: ``seen`` / ``unseen`` (generated, no data), ``eb_valid_seen`` (EmbodiedBench's
    json_2.1.0 files: ``eb_data_dir`` or ``$EB_ALFRED_DATA_DIR``), and ALFRED's
    ``valid_seen`` / ``valid_unseen`` / ``tests_seen`` / ``tests_unseen`` from an ALFRED
    data folder (``alfred_data_dir`` or ``$ALFRED_DATA_DIR``).
    """

    name = "alfred"
    version = SUITE_VERSION

    def __init__(self, alfred_data_dir: str | None = None, eb_data_dir: str | None = None,
                 backend: str = "household", render: bool = True, generated_per_split: int = 500,
                 generator_seed: int = 0, restore_scenes: bool = True) -> None:
        if backend != "household":
            raise ValueError(f"ALFRED backend {backend!r} is not available in this suite object; "
                             "the AI2-THOR backend is envs.alfred.thor (needs the 'thor' extra and a display)")
        if generated_per_split < 0:
            raise ValueError("generated_per_split must be >= 0")
        self.alfred_dir = resolve_alfred_dir(alfred_data_dir)
        self.eb_dir = resolve_data_dir(eb_data_dir)
        self.backend = backend
        self.render = bool(render)
        self.generated_per_split = int(generated_per_split)
        self.generator_seed = int(generator_seed)
        self.restore_scenes = bool(restore_scenes)
        self._cache: dict[str, list[EpisodeSpec]] = {}

    def splits(self) -> Sequence[str]:
        return (*GENERATED_SPLITS, EB_SPLIT, *DATA_SPLITS, *TEST_SPLITS)

    def protocol(self, split: str) -> Mapping[str, Any]:
        proto: dict[str, Any] = {
            "max_steps": MAX_STEPS,
            "max_fails": MAX_FAILS,
            "backend": self.backend,
            "navigation": NAVIGATION,
            "action_language": "FLARE triplets expanded to GotoLocation + ALFRED interactions",
            "expert_length_unit": "interactions + GotoLocation subgoals",
            "success": "goal conditions at stop (ALFRED eval_task)",
        }
        if split in GENERATED_SPLITS:
            proto["generator_seed"] = self.generator_seed
            proto["floor_plans"] = list(floor_plans(split))
        elif split == EB_SPLIT:
            folder = self._eb_folder()
            proto["data_digest"] = files_digest(folder.glob("*/*/pp/ann_*.json"), folder)
            proto["restore_scenes"] = self.restore_scenes
        elif split in (*DATA_SPLITS, *TEST_SPLITS):
            root = self._alfred_root(split)
            proto["data_digest"] = files_digest((root / split).glob("*/*/traj_data.json"), root)
            proto["restore_scenes"] = self.restore_scenes
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
        return AlfredEnv(render_images=self.render)
