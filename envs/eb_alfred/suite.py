"""The EB-ALFRED suite: six official subsets (EmbodiedBench data) and generated splits."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Mapping, Sequence

from envs.eb_alfred.env import IMAGE_SIZE, EBAlfredEnv
from envs.eb_alfred.episodes import (
    SUITE_NAME, EpisodeDataError, episodes_sha256, file_sha256, load_official, resolve_data_dir, scene_from_metadata, splits_file,
    task_from_metadata,
)
from envs.eb_alfred.generator import floor_plans, generated_episodes
from envs.household import SceneError, build_world, goal_condition_total
from envs.eb_alfred.protocol import (
    GENERATED_SPLITS, MAX_INVALID_ACTIONS, MAX_STEPS, OFFICIAL_SPLITS,
)
from envs.eb_alfred.skills import NUM_GLOBAL_ACTIONS
from envs.eb_alfred.plugin import EBAlfredParams
from harness.params import parse
from harness.types import EpisodeSpec

#: Bumped whenever rules, episodes or scoring change. 1.1.0: a Microwave turns on only
#: when closed; slicing keeps the whole (isSliced) with its marks; one faucet fills
#: every basin of a double sink; trajectories read from json_2.1.0/. 1.2.0: official
#: episodes start from the scene facts of their trajectory (envs/household/restore.py).
#: 1.3.0: restore never starts an unrecorded object in a basin or closed openable (no free
#: episodes); puts follow AI2-THOR, openables start as the scene had them, one basin per
#: faucet, put retries the next-closest instance.
#: 1.4.0: the default image (image=frame) shows only what a camera frame would: the
#: receptacles in view from the trajectory's start pose, then what the agent faces, with no
#: text (image=annotated keeps the labelled schematic); open/close failures name the type.
#: 1.5.0: ``slice the X`` needs no knife in hand (EmbodiedBench's bare SliceObject).
#: The thor backend's skill rules are versioned apart, in its protocol (``skills``:
#: envs/eb_alfred/thor_skills.py ``SKILLS_PROTOCOL``), so household run ids do not move with them.
SUITE_VERSION = "1.5.0"


class BadEpisodesError(EpisodeDataError):
    """Official episodes that cannot be built; the message lists each one on its own line."""


class EBAlfredSuite:
    """EB-ALFRED on the household backend.

    Splits: the official ``base, common_sense, complex_instruction, spatial,
    visual_appearance, long_horizon`` (need ``data_dir`` or ``$EB_ALFRED_DATA_DIR``)
    and the generated ``seen`` / ``unseen`` (``generated_per_split`` each, no data).
    Episode ids: ``"<split>/<index>"`` (``"base/00"``, ``"seen/000"``).
    """

    name = SUITE_NAME
    version = SUITE_VERSION
    #: its env's gymnasium action space (harness.interfaces.ACTION_KINDS)
    action_kind = "text"

    #: The parameter declaration (envs/eb_alfred/plugin.py): defaults and checks live there.
    Params = EBAlfredParams

    def __init__(self, **values: Any) -> None:
        self.params = p = parse(self.Params, values)
        #: AI2-THOR only: tests put a fake controller factory here; None starts ai2thor's real Controller.
        self.controller_factory: Any = None
        self.on_bad_episode = p.on_bad_episode
        #: Official episodes left out under on_bad_episode=skip_and_report: (episode id, reason).
        self.skipped_episodes: list[tuple[str, str]] = []
        self.data_dir = resolve_data_dir(p.data_dir)
        self.backend = p.backend
        self.render = p.render
        self.generated_per_split = p.generated_per_split
        self.generator_seed = p.generator_seed
        #: official episodes with a trajectory file start from its restored scene facts.
        self.restore_scenes = p.restore_scenes
        self._official: dict[str, list[EpisodeSpec]] | None = None

    def protocol(self, split: str) -> Mapping[str, Any]:
        """The derived facts that change the results of ``split`` (the declared parameters
        enter the run identity from :attr:`params`, so none is repeated here).

        Official subsets add the sha256 of ``splits.json`` and of the episodes as loaded
        (:func:`episodes_sha256`: task, scene facts restored from the trajectory files,
        instruction); generated splits add their floor plans.
        """
        proto: dict[str, Any] = {
            "max_steps": MAX_STEPS,
            "max_invalid_actions": MAX_INVALID_ACTIONS,
            "num_global_actions": NUM_GLOBAL_ACTIONS,
            # What a planner sees: an image (size) or none; changes a VLM planner's results.
            "image_size": IMAGE_SIZE if self.render else None,
        }
        if self.backend == "thor":
            from envs.eb_alfred.thor_skills import SKILLS_PROTOCOL
            from envs.thor.session import THOR_VERSION

            proto["thor_version"] = THOR_VERSION
            # The thor backend's own rules: a change there changes thor run ids, not household ones.
            proto["skills"] = SKILLS_PROTOCOL
        if split in OFFICIAL_SPLITS:
            proto["splits_sha256"] = file_sha256(splits_file(self.data_dir))
            # What the suite actually loads: a folder without trajectory files restores nothing
            # and must not share the run identity of the full folder.
            proto["episodes_sha256"] = episodes_sha256(self._official_split(split))
            if self.on_bad_episode != "error":
                proto["skipped_episodes"] = [eid for eid, _ in self.skipped_episodes]
        else:
            proto["floor_plans"] = list(floor_plans(split)) if split in GENERATED_SPLITS else None
        return proto

    def splits(self) -> Sequence[str]:
        # Generated episodes have no trajectory to restore on AI2-THOR.
        return OFFICIAL_SPLITS if self.backend == "thor" else (*OFFICIAL_SPLITS, *GENERATED_SPLITS)

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        """The split's episodes. Generated splits are lazy: only the episodes read are built."""
        if self.backend == "thor":
            from envs.thor.session import require_ai2thor

            require_ai2thor(self.controller_factory)
        if split in OFFICIAL_SPLITS:
            return self._official_split(split)
        if split in GENERATED_SPLITS and self.backend != "thor":
            return generated_episodes(split, self.generated_per_split, self.generator_seed)
        raise KeyError(f"unknown eb_alfred split {split!r}; splits are {', '.join(self.splits())}")

    def _official_split(self, split: str) -> list[EpisodeSpec]:
        if self._official is None:
            self._official = self._checked(load_official(self.data_dir, self.restore_scenes))
        return list(self._official[split])

    def _checked(self, subsets: dict[str, list[EpisodeSpec]]) -> dict[str, list[EpisodeSpec]]:
        """Build every official episode's world once (~0.5 ms each) so an episode naming an
        unknown object, receptacle or floor plan is reported when the split is loaded, not
        as a traceback at reset; add each task's goal-condition total to its metadata."""
        bad: list[tuple[str, str]] = []
        out: dict[str, list[EpisodeSpec]] = {}
        for split, specs in subsets.items():
            kept = []
            for spec in specs:
                try:
                    task = task_from_metadata(spec.metadata)
                    build_world(int(spec.metadata["floor_plan"]), spec.seed, task,
                                scene=scene_from_metadata(spec.metadata))
                except (SceneError, ValueError, KeyError) as exc:
                    bad.append((spec.episode_id, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                    continue
                kept.append(replace(spec, metadata={**spec.metadata, "gc_total": goal_condition_total(task)}))
            out[split] = kept
        if bad and self.on_bad_episode == "error":
            lines = "\n".join(f"  {eid}: {why}" for eid, why in bad)
            raise BadEpisodesError(
                f"{len(bad)} official episode(s) cannot be built on the {self.backend} backend "
                f"(suite.params.on_bad_episode=skip_and_report leaves them out):\n{lines}")
        for eid, why in bad:
            print(f"eb_alfred: skipped episode {eid}: {why}", file=sys.stderr)
        if bad:
            print(f"eb_alfred: skipped {len(bad)} official episode(s) that cannot be built", file=sys.stderr)
        self.skipped_episodes = bad
        return out

    def make_env(self) -> EBAlfredEnv:
        if self.backend == "thor":
            from envs.eb_alfred.thor import EBAlfredThorEnv

            return EBAlfredThorEnv(self.data_dir, self.controller_factory, render_images=self.render)
        return EBAlfredEnv(backend=self.backend, render_images=self.render, image=self.params.image)
