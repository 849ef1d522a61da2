"""The EB-ALFRED suite: six official subsets (EmbodiedBench data) and generated splits."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.episodes import SUITE_NAME, file_sha256, load_official, resolve_data_dir, splits_file
from envs.eb_alfred.generator import floor_plans, generate_cached
from envs.eb_alfred.protocol import (
    GENERATED_SPLITS, MAX_INVALID_ACTIONS, MAX_STEPS, OFFICIAL_SPLITS,
)
from envs.eb_alfred.skills import NUM_GLOBAL_ACTIONS
from harness.types import EpisodeSpec

#: Bumped whenever rules, episodes or scoring change. 1.1.0: a Microwave turns on only
#: when closed; slicing keeps the whole (isSliced) with its marks; one faucet fills
#: every basin of a double sink; trajectories read from json_2.1.0/. 1.2.0: official
#: episodes start from the scene facts of their trajectory (envs/household/restore.py).
SUITE_VERSION = "1.2.0"


class EBAlfredSuite:
    """EB-ALFRED on the household backend.

    Splits: the official ``base, common_sense, complex_instruction, spatial,
    visual_appearance, long_horizon`` (need ``data_dir`` or ``$EB_ALFRED_DATA_DIR``)
    and the generated ``seen`` / ``unseen`` (``generated_per_split`` each, no data).
    Episode ids: ``"<split>/<index>"`` (``"base/00"``, ``"seen/000"``).
    """

    name = SUITE_NAME
    version = SUITE_VERSION

    def __init__(self, data_dir: str | None = None, backend: str = "household", render: bool = True,
                 generated_per_split: int = 500, generator_seed: int = 0, restore_scenes: bool = True) -> None:
        if backend != "household":
            raise ValueError(f"EB-ALFRED backend {backend!r} is not available; use 'household'")
        if generated_per_split < 0:
            raise ValueError("generated_per_split must be >= 0")
        self.data_dir = resolve_data_dir(data_dir)
        self.backend = backend
        self.render = render
        self.generated_per_split = int(generated_per_split)
        self.generator_seed = int(generator_seed)
        #: official episodes with a trajectory file start from its restored scene facts.
        self.restore_scenes = bool(restore_scenes)
        self._official: dict[str, list[EpisodeSpec]] | None = None

    def protocol(self, split: str) -> Mapping[str, Any]:
        """Constants that change the results of ``split``.

        Official subsets add the sha256 of ``splits.json``; generated splits add
        the generator settings (episode i depends only on the generator seed and
        i, so ``generated_per_split`` is left out: a longer split extends a
        shorter one, and resuming with a larger one runs only the new episodes).
        """
        proto: dict[str, Any] = {
            "max_steps": MAX_STEPS,
            "max_invalid_actions": MAX_INVALID_ACTIONS,
            "num_global_actions": NUM_GLOBAL_ACTIONS,
            "backend": self.backend,
        }
        if split in OFFICIAL_SPLITS:
            proto["splits_sha256"] = file_sha256(splits_file(self.data_dir))
            proto["restore_scenes"] = self.restore_scenes
        else:
            proto["generator_seed"] = self.generator_seed
            proto["floor_plans"] = list(floor_plans(split)) if split in GENERATED_SPLITS else None
        return proto

    def splits(self) -> Sequence[str]:
        return (*OFFICIAL_SPLITS, *GENERATED_SPLITS)

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split in OFFICIAL_SPLITS:
            if self._official is None:
                self._official = load_official(self.data_dir, self.restore_scenes)
            return list(self._official[split])
        if split in GENERATED_SPLITS:
            return list(generate_cached(split, self.generated_per_split, self.generator_seed))
        raise KeyError(f"unknown eb_alfred split {split!r}; splits are {', '.join(self.splits())}")

    def make_env(self) -> EBAlfredEnv:
        return EBAlfredEnv(backend=self.backend, render_images=self.render)
