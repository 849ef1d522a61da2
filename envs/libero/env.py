"""One LIBERO episode at a time behind Gymnasium's API (:class:`harness.interfaces.EpisodeEnv`).

Per episode (the standard loop of openpi / OpenVLA, see ``protocol.py``):
take the task's ``OffScreenRenderEnv`` (kept while consecutive episodes share
the task; otherwise from the process's :data:`POOL` of built envs, built only
when none waits), put numpy's global generator in trial i's state (below), ``reset()``
(a hard reset, or on a fresh build :meth:`LiberoEnv._fresh_reset`, which reuses the
construction's compile),
``set_init_state(init_states[i])``, then ``num_steps_wait`` dummy actions (not
counted). Each ``step`` validates the action, steps the simulator once, and
reports ``success = env.check_success()`` plus the number of BDDL goal
predicates satisfied (``gc_satisfied`` / ``gc_total``, evaluated through the
env's own predicate functions).

Reproducibility of fixture placement (``fixture_rng``)
------------------------------------------------------
``reset()`` re-places the fixtures (cabinet, stove, wine rack, microwave,
caddy) with numpy's *global* generator, and that placement is not part of the
saved init state. In the standard loop the generator is seeded once per task
(``env.seed(7)``) and trial i is the (i+1)-th reset after it, so trial i's
fixtures depend on the trials before it. ``sequence`` (default) reproduces that
for any order, parallelism or resume: the env keeps, per (task, seed), the
generator state before each reset (shared by the envs of a process); trial i
restores state i before its reset.
A missing state i is computed by replaying the earlier resets' *draws* only
(placement samplers on the already loaded model, the fixture bodies put back
at their compiled positions first: 4-80 ms per replayed reset instead of the
1.5-2.6 s of a hard reset); trials run in order need no replay at all. After
every real reset the generator state is compared with the table's state i+1
and a mismatch is an env error, so the placement can never differ silently.
``seed_plus_trial`` (LeRobot 0.6.1) and ``same_each_trial`` (``lifelong``)
seed the generator with the episode's seed right before its reset, as those
loops do; ``per_trial`` seeds it from (seed, task, trial) before each reset:
no replay, but a different placement from any published loop (recorded).

Observations
------------
With images on, every observation equals the stock loop's bit for bit: the
cameras stay off through ``reset`` and the wait steps, and come on for the last
two wait steps with their sampling timers copied from the other observables
(``_set_cameras``), so they sample at the same physics substep as in a loop
that never switched them off. ``tests/envs/libero/test_stock_loop.py`` runs
openpi's loop beside this env for every suite's first task.

``reset`` options: ``render=False`` disables the camera observables (physics is
identical, images are absent); ``artifacts_dir`` is where videos go.
"""

from __future__ import annotations

import atexit
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from gymnasium import spaces

from envs.gym_registration import AnyValue, FreeText, Record, SuiteEnv, image_space
from envs.libero import protocol as P
from harness.interfaces import AgentContractError
from harness.types import (
    INFO_ACTION_OK,
    INFO_ARTIFACTS,
    INFO_EXPERT_LENGTH,
    INFO_FEEDBACK,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_SUCCESS,
    INFO_TASK_TYPE,
    INFO_TERMINATION,
    TERMINATION_EPISODE_TIMEOUT,
    EpisodeSpec,
)

#: Frames per second of episode videos (LIBERO's control frequency, 20 Hz).
VIDEO_FPS = 20


def fast_render_xml(xml: str) -> str:
    """MuJoCo XML with shadows and multi-sample anti-aliasing off (visual only)."""
    quality = '<quality shadowsize="0" offsamples="0"/>'
    if re.search(r"<visual>", xml):
        xml = re.sub(r"<quality[^>]*/>", "", xml)
        return xml.replace("<visual>", "<visual>" + quality, 1)
    return re.sub(r"(<mujoco[^>]*>)", r"\1<visual>" + quality + "</visual>", xml, count=1)


def validate_action(action: Any) -> np.ndarray:
    """A 7-D finite float action, or :class:`AgentContractError` naming the problem."""
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise AgentContractError(f"LIBERO action must be 7 numbers, got {type(action).__name__}: {exc}") from None
    if a.shape != (P.ACTION_DIM,):
        raise AgentContractError(f"LIBERO action must have shape (7,), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise AgentContractError(f"LIBERO action has non-finite values: {a.tolist()}")
    return a


#: numpy's global-generator state before each reset, per (provider, split, task, seed):
#: shared by every env of this process (the draws depend only on the task's model).
_RNG_TABLES: dict[tuple[str, str, int, int], list[tuple]] = {}
#: Beside each table entry i: the ``RandomizationError`` retries of the loop's resets before trial i
#: (each one left a sampler copy more in the stock loop's env for every later trial).
_RETRY_TABLES: dict[tuple[str, str, int, int], list[int]] = {}


def _same_rng_state(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[2:] == b[2:] and np.array_equal(a[1], b[1])


@dataclass(eq=False)
class BuiltEnv:
    """One constructed ``OffScreenRenderEnv`` and what the env keeps about it."""

    env: Any
    key: tuple
    #: The fixture bodies' compiled ``body_pos`` / ``body_quat`` of its current model.
    pristine: tuple[np.ndarray, np.ndarray] | None = None
    #: Constructed and not reset since: its model was compiled and placed by the construction.
    fresh: bool = True
    #: One load's open/close and turn-on/off samplers (``protocol.property_rounds``).
    props: tuple = ()
    #: Copies of ``props`` the next reset runs (set before every reset, applied after each model load).
    rounds: int = 2
    #: Model loads since the current reset began (a second one is a ``RandomizationError`` retry).
    loads: int = 0


def set_property_rounds(built: BuiltEnv) -> None:
    """Give the env's ``_reset_internal`` ``built.rounds`` copies of its property samplers
    (see :func:`envs.libero.protocol.property_rounds`). The samplers hold only a name and a
    joint range and draw one uniform each, so one load's copies serve every round."""
    built.env.env.object_property_initializers = list(built.props) * built.rounds


def make_current(built: BuiltEnv | None) -> None:
    """Make a built env's GL context current (see :meth:`LiberoEnv._make_current`)."""
    sim = getattr(built.env.env, "sim", None) if built is not None else None
    ctx = getattr(sim, "_render_context_offscreen", None)
    if ctx is not None:
        ctx.gl_ctx.make_current()


def close_built(built: BuiltEnv) -> None:
    try:
        make_current(built)  # its render context frees its GL objects in the current context
    except Exception:
        pass
    try:
        built.env.close()
    except Exception:
        pass


class EnvPool:
    """Built envs not held by any :class:`LiberoEnv` of this process, by build key.

    A build key holds everything the construction depends on (provider, BDDL
    file, camera size and names, ``fast_render``); two envs with one key differ
    only in their simulator state, which the next trial's reset replaces (as in
    the stock loop, which runs every trial of a task on one env). A
    :class:`LiberoEnv` moving to another task, or closed, gives its env back
    here and takes one of the new key if there is one; at most ``max_idle`` wait
    (the least recently given back is closed first). An env that raised is never
    given back (see :meth:`LiberoEnv.close`)."""

    def __init__(self, max_idle: int = 4):
        self.max_idle = max_idle
        self._idle: OrderedDict[int, BuiltEnv] = OrderedDict()
        self._lock = threading.Lock()
        self._at_exit = False

    def take(self, key: tuple) -> BuiltEnv | None:
        with self._lock:
            for ident, built in self._idle.items():
                if built.key == key:
                    del self._idle[ident]
                    return built
        return None

    def give(self, built: BuiltEnv) -> None:
        with self._lock:
            if not self._at_exit:
                # Registered now, after robosuite's EGL module registered eglTerminate (at its
                # first context): exit handlers run last-in first-out, so the idle envs close
                # while their display still exists.
                atexit.register(self.clear)
                self._at_exit = True
            self._idle[id(built)] = built
            evicted = []
            while len(self._idle) > self.max_idle:
                evicted.append(self._idle.popitem(last=False)[1])
        for old in evicted:
            close_built(old)

    def idle(self) -> int:
        return len(self._idle)

    def clear(self) -> None:
        """Close every idle env (at exit; tests)."""
        with self._lock:
            idle, self._idle = list(self._idle.values()), OrderedDict()
        for built in idle:
            close_built(built)


_BUILD_LOCK = threading.Lock()


def _construct(make: Any) -> tuple[Any, tuple[np.ndarray, np.ndarray]]:
    """``make()`` (an ``OffScreenRenderEnv`` construction) and its model's compiled fixture poses.

    The construction compiles the model and then draws a placement into it, so
    the compiled ``body_pos`` / ``body_quat`` exist only between the two: they
    are copied there by wrapping robosuite's ``MujocoEnv._initialize_sim`` for
    the construction's duration (builds are serialised; the copy is kept only
    for the env being built)."""
    from robosuite.environments.base import MujocoEnv

    original = MujocoEnv.__dict__["_initialize_sim"]
    seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def initialize_sim(inner, xml_string=None):
        original(inner, xml_string)
        seen[id(inner)] = (inner.sim.model.body_pos.copy(), inner.sim.model.body_quat.copy())

    with _BUILD_LOCK:
        MujocoEnv._initialize_sim = initialize_sim
        try:
            env = make()
        finally:
            MujocoEnv._initialize_sim = original
    return env, seen[id(env.env)]


#: This process's pool (each worker process of the ``process`` executor has its own).
POOL = EnvPool()


class LiberoEnv(SuiteEnv):
    """An :class:`~harness.interfaces.EpisodeEnv` for every episode of a :class:`LiberoSuite`
    (a ``gymnasium.Env``: see :mod:`envs.gym_registration`)."""

    def __init__(self, suite: Any):
        self.suite = suite
        # LIBERO's normalised 7-D action (delta end-effector pose + gripper; robosuite clips to [-1, 1]).
        self.action_space = spaces.Box(-1.0, 1.0, (P.ACTION_DIM,), np.float32)
        size = int(suite.preset["camera_size"])
        # state: eef position (m), axis-angle (rad), 2 gripper joints; +-10 bounds the arena.
        self.observation_space = Record(
            {"state": spaces.Box(-10.0, 10.0, (8,), np.float64), "instruction": FreeText(),
             "robosuite": AnyValue(dict)},
            optional={"agentview_image": image_space(size), "wrist_image": image_space(size)})
        self.provider = suite.provider
        self._built: BuiltEnv | None = None
        self._env: Any = None  # self._built.env
        self._init_cache: dict[tuple[str, int], np.ndarray] = {}
        self._spec: EpisodeSpec | None = None
        self._done = True
        #: Set when a reset or step raised: that built env is closed, not pooled.
        self._faulted = False
        self._keys: dict[tuple[str, int], tuple] = {}
        #: The flattened MuJoCo state right after ``set_init_state`` (tests compare it with the init file).
        self.initial_sim_state: np.ndarray | None = None
        #: Resets replayed (draws only) to fill fixture-RNG tables; for the speed benchmark.
        self.replayed_resets = 0
        #: Trial resets done as robosuite hard resets / as the first reset of a fresh build (no second compile).
        self.hard_resets = 0
        self.fresh_resets = 0

    # -- building -------------------------------------------------------
    def _build_key(self, split: str, task_index: int) -> tuple:
        if (split, task_index) not in self._keys:
            task = self.provider.suite(split).get_task(task_index)
            preset = self.suite.preset
            self._keys[split, task_index] = (self.provider.name, self.provider.bddl_path(task),
                                             int(preset["camera_size"]), tuple(preset["cameras"]),
                                             self.suite.fast_render)
        return self._keys[split, task_index]

    def _ensure_env(self, split: str, task_index: int) -> Any:
        key = self._build_key(split, task_index)
        if self._built is not None and self._built.key == key:
            return self._env
        self._release_env()
        built = POOL.take(key) or self._build(key)
        self._built, self._env = built, built.env
        return built.env

    def _build(self, key: tuple) -> BuiltEnv:
        _provider, bddl, size, cameras, fast = key
        env, pristine = _construct(lambda: self.provider.env_class()(
            bddl_file_name=bddl, camera_heights=size, camera_widths=size, camera_names=list(cameras)))
        built = BuiltEnv(env=env, key=key, pristine=pristine, props=tuple(env.env.object_property_initializers))
        self._hook_pristine(built)
        self._hook_load_model(built)
        if fast:
            env.env.set_xml_processor(fast_render_xml)  # applies from the next (hard) reset on
            built.fresh = False  # its construction compiled the model without it: hard-reset first
        return built

    @staticmethod
    def _hook_pristine(built: BuiltEnv) -> None:
        """Keep the fixture bodies' compiled positions from every hard reset's own compile.

        A hard reset compiles the model XML into a fresh sim; its ``body_pos`` /
        ``body_quat`` right then are what the replayed draws and a fresh build's
        first reset start from. Taking them there costs nothing, where compiling
        the XML a second time cost ~0.45 s per env build."""
        inner = built.env.env
        original = inner._initialize_sim

        def initialize_sim(xml_string=None):
            original(xml_string)
            built.pristine = (inner.sim.model.body_pos.copy(), inner.sim.model.body_quat.copy())

        inner._initialize_sim = initialize_sim

    @staticmethod
    def _hook_load_model(built: BuiltEnv) -> None:
        """After every model load (a hard reset's), the property samplers of ``built.rounds`` loads.

        LIBERO's ``ControlEnv.reset`` retries robosuite's hard reset on
        ``RandomizationError`` (libero envs/env_wrapper.py:90-101), and each retry
        loads the model again (robosuite 1.4.0 environments/base.py:247-258,
        ``_load_model`` before ``_initialize_sim`` and ``_reset_internal``), which
        appends one more copy of the samplers: so a second load within one reset
        draws from one copy more, as in the stock loop."""
        inner = built.env.env
        original = inner._load_model

        def load_model():
            original()
            if built.loads:
                built.rounds += 1
            built.loads += 1
            set_property_rounds(built)

        inner._load_model = load_model

    def _init_states(self, split: str, task_index: int) -> np.ndarray:
        key = (split, task_index)
        if key not in self._init_cache:
            task = self.provider.suite(split).get_task(task_index)
            self._init_cache[key] = self.provider.init_states(task)
        return self._init_cache[key]

    def _make_current(self) -> None:
        """Make this env's GL context current before it renders.

        robosuite's offscreen renderer never does so itself, so with several
        envs in one process (local executor, ``envs_per_worker`` > 1) an env
        would render with another env's context current: wrong images
        (measured: pixel differences up to 202/255). Likewise its render
        context frees its GL objects (on a hard reset, on close) in whatever
        context is current, which would delete another env's textures: so
        this is also called before ``reset`` and ``close``."""
        make_current(self._built)

    def _set_cameras(self, on: bool) -> None:
        """Switch the camera observables on or off; on, in phase with the others.

        robosuite samples each observable on its own timer, advanced only while
        it is enabled (by one physics substep per ``update``, forced or not).
        The stock loop keeps the cameras on throughout, so their timers always
        equal the proprioceptive observables'. A camera switched back on here
        takes the timer of ``robot0_eef_pos`` (same sampling rate, no delay), so
        it samples at the very substep the stock loop's would; a forced update
        instead would move every timer one substep (2 ms) off the stock loop's."""
        inner = self._env.env
        ref = inner._observables["robot0_eef_pos"]
        for cam in self.suite.preset["cameras"]:
            inner.modify_observable(observable_name=f"{cam}_image", attribute="enabled", modifier=on)
            if on:
                obs = inner._observables[f"{cam}_image"]
                if obs._sampling_timestep != ref._sampling_timestep:
                    raise RuntimeError(f"{cam}_image samples at another rate than robot0_eef_pos: cannot align")
                obs._time_since_last_sample = ref._time_since_last_sample
                obs._sampled = ref._sampled
                obs._current_delay = ref._current_delay

    def _fresh_reset(self) -> None:
        """A just-built env's first reset, equal to robosuite's hard reset without its second compile.

        The construction compiled the model and drew a placement into it; the
        hard reset (``MujocoEnv.reset``, robosuite 1.4.0 environments/base.py:
        247-283, inside ``ControlEnv.reset``'s ``RandomizationError`` retry,
        libero envs/env_wrapper.py:90-101) would rebuild the same model from the
        same BDDL file and compile the same XML. Here the compiled fixture poses
        are put back, the data reset and forwarded (``_initialize_sim``'s
        ``sim.forward``), and the rest of the reset runs as robosuite's:
        ``_reset_internal`` (the placement draws, retried the same way),
        ``sim.forward``, observables reset, sites hidden, one forced
        observation. The model XML is compiled once per trial, as in the stock
        loop's steady state; the side-by-side tests (``test_stock_loop.py``)
        compare trial 0 on a fresh build with the stock loop bit for bit."""
        inner = self._env.env
        inner.initialize_time(inner.control_freq)  # as _initialize_sim does
        self._redraw()
        inner.sim.forward()
        inner._obs_cache = {}
        inner.visualize(vis_settings={vis: False for vis in inner._visualizations})
        inner._get_observations(force_update=True)

    # -- fixture RNG ----------------------------------------------------
    def _redraw(self) -> None:
        """The loaded model as compiled, fresh data, then ``_reset_internal``'s draws and placement."""
        from robosuite.utils.errors import RandomizationError

        inner = self._env.env
        pos, quat = self._built.pristine
        while True:  # ControlEnv.reset retries on RandomizationError, drawing again
            inner.sim.model.body_pos[:] = pos
            inner.sim.model.body_quat[:] = quat
            inner.sim.reset()
            inner.sim.forward()  # as _initialize_sim does after its compile
            try:
                inner._reset_internal()
                break
            except RandomizationError:
                # LIBERO's retry reloads the model, which appends one more sampler copy
                # (see _hook_load_model): the next attempt draws from one copy more
                self._built.rounds += 1
                self._built.loads += 1
                set_property_rounds(self._built)
                continue

    def _rounds(self, trial: int, carried: int = 0) -> int:
        """Sampler copies of trial ``trial``'s reset in its loop (``carried``: earlier resets' retries)."""
        return P.property_rounds(self.suite.fixture_rng, trial, self.suite.lerobot_batch) + carried

    def _begin_reset(self, rounds: int) -> None:
        self._built.rounds, self._built.loads = rounds, 0
        set_property_rounds(self._built)

    def _retries(self) -> int:
        """``RandomizationError`` retries of the reset just done (each one reloaded the model)."""
        return max(self._built.loads - 1, 0)

    def _replay_reset_draws(self, trial: int, carried: int = 0) -> int:
        """Consume exactly the global-generator draws of trial ``trial``'s ``reset()`` without rebuilding
        the model; returns its retries."""
        self._begin_reset(self._rounds(trial, carried))
        self._built.loads = 1  # the reset's own load
        self._redraw()
        self.replayed_resets += 1
        return self._retries()

    def _seed_fixture_rng(self, split: str, task: int, trial: int, seed: int) -> tuple[list, list] | None:
        """Put numpy's generator in trial ``trial``'s state; under ``sequence`` also return the
        (generator states, carried retries) tables of the loop's resets.

        Under the other modes a retry is carried within the trial only: a retry in an earlier trial
        of the same loop env (LeRobot's sub-env) would add a copy there that is not reproduced."""
        mode = self.suite.fixture_rng
        if mode == "per_trial":
            np.random.seed(int(np.random.SeedSequence([seed, task, trial]).generate_state(1)[0]))
            return None
        if mode in ("seed_plus_trial", "same_each_trial"):
            np.random.seed(seed)  # the episode's seed is already seed + i under seed_plus_trial
            return None
        key = (self.provider.name, split, task, seed)
        table = _RNG_TABLES.setdefault(key, [])
        carried = _RETRY_TABLES.setdefault(key, [])
        if not table:
            np.random.seed(seed)  # the standard loop's env.seed(seed), once per task
            table.append(np.random.get_state())
            carried.append(0)
        while len(table) <= trial:
            np.random.set_state(table[-1])
            retries = self._replay_reset_draws(len(table) - 1, carried[-1])
            table.append(np.random.get_state())
            carried.append(carried[-1] + retries)
        np.random.set_state(table[trial])
        return table, carried

    # -- Gymnasium API --------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        try:
            return self._reset(seed, options)
        except BaseException:
            self._faulted = True
            raise

    def _reset(self, seed: int | None, options: Mapping[str, Any] | None):
        options = self._episode_options(seed, options)
        spec: EpisodeSpec = options["episode"]
        meta = spec.metadata
        task, trial = int(meta["task_index"]), int(meta["init_index"])
        seed = int(spec.seed if seed is None else seed)
        self._render = bool(options.get("render", True))
        self._artifacts_dir = options.get("artifacts_dir")
        video = self.suite.video != "none" and self._artifacts_dir is not None
        self._images = self._render or video
        inits = self._init_states(spec.split, task)
        if trial >= len(inits):
            raise IndexError(f"{spec.episode_id}: init state {trial} does not exist ({len(inits)} in the file)")

        env = self._ensure_env(spec.split, task)
        tables = self._seed_fixture_rng(spec.split, task, trial, seed)
        self._set_cameras(False)  # the reset's own observation and the wait steps need no images
        self._make_current()  # the hard reset frees the old render context's GL objects
        self._begin_reset(self._rounds(trial, tables[1][trial] if tables else 0))
        if self._built.fresh:
            self._built.loads = 1  # the construction's load stands for the reset's own
            self._fresh_reset()
            self.fresh_resets += 1
        else:
            env.reset()
            self.hard_resets += 1
        self._built.fresh = False
        #: RandomizationError retries of this trial's reset (one more sampler copy each).
        self.last_reset_retries = self._retries()
        if tables is not None:
            table, carried = tables
            after = np.random.get_state()
            if len(table) > trial + 1:
                if not _same_rng_state(after, table[trial + 1]):
                    raise RuntimeError(f"{spec.episode_id}: fixture placement diverged from the standard loop's sequence")
            else:
                table.append(after)
                carried.append(carried[trial] + self.last_reset_retries)
        if self.suite.fast_render:
            import mujoco

            ctx = env.env.sim._render_context_offscreen
            if ctx is not None:
                ctx.scn.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        # The cameras come on, timers aligned, only for the calls whose observation
        # the policy gets: the last two wait steps (a physics-substep rounding can
        # leave one step without a sample; two always hold one), or everything
        # from set_init_state on when the preset hands the policy that observation.
        waits = int(self.suite.preset["num_steps_wait"])
        from_init = self.suite.preset["first_observation"] == "set_init_state"
        cameras_from = -1 if (from_init or waits < 2) else waits - 2
        if self._images and cameras_from < 0:
            self._set_cameras(True)
            self._make_current()
        raw = env.set_init_state(inits[trial])
        self.initial_sim_state = np.asarray(env.get_sim_state()).copy()
        first = raw
        dummy = list(self.suite.preset["dummy_action"])
        for k in range(waits):
            if self._images and k == cameras_from:
                self._set_cameras(True)
                self._make_current()
            raw, _r, _d, _i = env.step(dummy)
        if from_init:
            raw = first

        self._spec = spec
        self._max_steps = self.suite.max_steps(spec.split)
        # LIBERO-PRO's clock starts after the warm-up steps (its runner.py:166 at 8af465d0)
        limit = self.suite.episode_timeout_s
        self._deadline = None if limit is None else time.monotonic() + limit
        self._t = 0
        self._done = False
        self._frames: list[np.ndarray] = []
        self._video_path: str | None = None
        goal = env.env.parsed_problem["goal_state"]
        self._goal = goal
        obs = self._observation(raw)
        self._record_frame(obs)
        info = self._info(success=bool(env.check_success()), termination=None)
        info["task_index"], info["init_index"] = task, trial
        return obs, info

    def step(self, action: Any):
        if self._done or self._env is None:
            raise RuntimeError("LIBERO episode is over or not started: call reset() first")
        a = validate_action(action)
        try:
            return self._step(a)
        except BaseException:
            self._faulted = True
            raise

    def _step(self, a: np.ndarray):
        if self._images:
            self._make_current()
        raw, reward, _done, _ = self._env.step(a)
        self._t += 1
        success = bool(self._env.check_success())
        terminated = success
        truncated = not success and self._t >= self._max_steps
        # LIBERO-PRO reads its clock before each policy query (runner.py:169 at 8af465d0), after
        # this step: a success on this step stands, and the step budget's end is named first
        # (its loop ends before the clock is read).
        timed_out = (not success and not truncated and self._deadline is not None
                     and time.monotonic() >= self._deadline)
        obs = self._observation(raw)
        self._record_frame(obs)
        termination = "success" if success else ("max_steps" if truncated else
                                                 (TERMINATION_EPISODE_TIMEOUT if timed_out else None))
        truncated = truncated or timed_out
        info = self._info(success=success, termination=termination)
        if terminated or truncated:
            self._done = True
            path = self._write_video(success)
            if path:
                info[INFO_ARTIFACTS] = {"video": path}
        return obs, float(reward), terminated, truncated, info

    def close(self) -> None:
        """Give the env back to the process's :data:`POOL`, or close it if a reset or step raised
        (the executors close a slot's env after a fault: that one must not be reused)."""
        self._release_env()

    def render(self) -> Any:
        """``rgb_array``: the agent-view camera as the policy sees it (gymnasium's ``render``)."""
        if self._env is None:
            return None
        self._set_cameras(True)
        self._make_current()
        return self._observation(self._env.env._get_observations(force_update=True)).get("agentview_image")

    # -- helpers --------------------------------------------------------
    def _release_env(self) -> None:
        built, self._built, self._env = self._built, None, None
        if built is None:
            return
        if self._faulted:
            close_built(built)
        else:
            POOL.give(built)
        self._faulted = False

    def _observation(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        from robosuite.utils.transform_utils import quat2axisangle

        state = np.concatenate([
            np.asarray(raw["robot0_eef_pos"], dtype=np.float64),
            quat2axisangle(np.asarray(raw["robot0_eef_quat"], dtype=np.float64)),
            np.asarray(raw["robot0_gripper_qpos"], dtype=np.float64),
        ])
        obs: dict[str, Any] = {
            "state": state,
            "instruction": self._spec.instruction if self._spec is not None else "",
            "robosuite": {k: v for k, v in raw.items() if not k.endswith("_image")},
        }
        if self._images:
            rot = self.suite.preset["rotate_180"]
            for key, cam in (("agentview_image", "agentview"), ("wrist_image", "robot0_eye_in_hand")):
                img = raw.get(f"{cam}_image")
                if img is not None:
                    obs[key] = np.ascontiguousarray(img[::-1, ::-1] if rot else img)
        return obs

    def gc(self) -> tuple[int, int]:
        """(BDDL goal predicates satisfied now, total) through the env's predicate functions."""
        inner = self._env.env
        goal = inner.parsed_problem["goal_state"]
        return sum(bool(inner._eval_predicate(g)) for g in goal), len(goal)

    def _info(self, *, success: bool, termination: str | None) -> dict[str, Any]:
        sat, total = self.gc()
        return {
            INFO_SUCCESS: success,
            INFO_GC_SATISFIED: int(sat),
            INFO_GC_TOTAL: int(total),
            INFO_INVALID_ACTIONS: 0,
            INFO_EXPERT_LENGTH: None,
            INFO_TASK_TYPE: self._spec.metadata.get("task_type") if self._spec else None,
            INFO_ACTION_OK: True,
            INFO_FEEDBACK: "",
            INFO_TERMINATION: termination,
        }

    def _record_frame(self, obs: Mapping[str, Any]) -> None:
        if self.suite.video == "none" or self._artifacts_dir is None:
            return
        if "agentview_image" in obs:
            self._frames.append(np.concatenate([obs["agentview_image"], obs["wrist_image"]], axis=1))

    def _write_video(self, success: bool) -> str | None:
        mode = self.suite.video
        if mode == "none" or self._artifacts_dir is None or not self._frames:
            return None
        if mode == "failures" and success:
            self._frames = []
            return None
        from harness.run.video import write_mp4

        spec = self._spec
        name = f"{spec.suite}_{spec.episode_id.replace('/', '_')}_seed{spec.seed}.mp4"
        path = write_mp4(Path(self._artifacts_dir) / "videos" / name, self._frames, VIDEO_FPS)
        self._frames = []
        return str(path)
