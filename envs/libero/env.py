"""One LIBERO episode at a time behind Gymnasium's API (:class:`harness.interfaces.EpisodeEnv`).

Per episode (the standard loop of openpi / OpenVLA, see ``protocol.py``):
build the task's ``OffScreenRenderEnv`` (kept while consecutive episodes share
the task), put numpy's global generator in trial i's state (below), ``reset()``,
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

Observations (issue 20 item 1)
------------------------------
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

import re
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


def _same_rng_state(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[2:] == b[2:] and np.array_equal(a[1], b[1])


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
        self._env: Any = None
        self._env_key: tuple[str, int] | None = None
        self._pristine: tuple[np.ndarray, np.ndarray] | None = None
        self._init_cache: dict[tuple[str, int], np.ndarray] = {}
        self._spec: EpisodeSpec | None = None
        self._done = True
        #: The flattened MuJoCo state right after ``set_init_state`` (tests compare it with the init file).
        self.initial_sim_state: np.ndarray | None = None
        #: Resets replayed (draws only) to fill fixture-RNG tables; for the speed benchmark.
        self.replayed_resets = 0

    # -- building -------------------------------------------------------
    def _ensure_env(self, split: str, task_index: int) -> Any:
        key = (split, task_index)
        if self._env_key == key and self._env is not None:
            return self._env
        self._close_env()
        task = self.provider.suite(split).get_task(task_index)
        size = int(self.suite.preset["camera_size"])
        env_cls = self.provider.env_class()
        env = env_cls(
            bddl_file_name=self.provider.bddl_path(task),
            camera_heights=size,
            camera_widths=size,
            camera_names=list(self.suite.preset["cameras"]),
        )
        inner = env.env
        if self.suite.fast_render:
            inner.set_xml_processor(fast_render_xml)  # applies from the next (hard) reset on
        self._pristine = None
        self._hook_pristine(inner)
        self._env, self._env_key = env, key
        return env

    def _hook_pristine(self, inner: Any) -> None:
        """Keep the fixture bodies' compiled positions from every hard reset's own compile.

        A hard reset compiles the model XML into a fresh sim; its ``body_pos`` /
        ``body_quat`` right then are what the replayed draws start from. Taking
        them there costs nothing, where compiling the XML a second time cost
        ~0.45 s per env build (issue 20 item 6)."""
        original = inner._initialize_sim

        def initialize_sim(xml_string=None):
            original(xml_string)
            self._pristine = (inner.sim.model.body_pos.copy(), inner.sim.model.body_quat.copy())

        inner._initialize_sim = initialize_sim

    def _pristine_bodies(self) -> tuple[np.ndarray, np.ndarray]:
        """The compiled positions; compiled here only when draws are replayed before any hard reset."""
        if self._pristine is None:
            import mujoco

            inner = self._env.env
            xml = inner.model.get_xml()
            if self.suite.fast_render:
                xml = fast_render_xml(xml)
            compiled = mujoco.MjModel.from_xml_string(xml)
            self._pristine = (compiled.body_pos.copy(), compiled.body_quat.copy())
        return self._pristine

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
        sim = getattr(self._env.env, "sim", None) if self._env is not None else None
        ctx = getattr(sim, "_render_context_offscreen", None)
        if ctx is not None:
            ctx.gl_ctx.make_current()

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

    # -- fixture RNG ----------------------------------------------------
    def _replay_reset_draws(self) -> None:
        """Consume exactly the global-generator draws of one ``reset()`` without rebuilding the model."""
        from robosuite.utils.errors import RandomizationError

        inner = self._env.env
        pos, quat = self._pristine_bodies()
        while True:  # ControlEnv.reset retries on RandomizationError, drawing again
            inner.sim.model.body_pos[:] = pos
            inner.sim.model.body_quat[:] = quat
            inner.sim.reset()
            inner.sim.forward()
            try:
                inner._reset_internal()
                break
            except RandomizationError:
                continue
        self.replayed_resets += 1

    def _seed_fixture_rng(self, split: str, task: int, trial: int, seed: int) -> list[tuple] | None:
        mode = self.suite.fixture_rng
        if mode == "per_trial":
            np.random.seed(int(np.random.SeedSequence([seed, task, trial]).generate_state(1)[0]))
            return None
        if mode in ("seed_plus_trial", "same_each_trial"):
            np.random.seed(seed)  # the episode's seed is already seed + i under seed_plus_trial
            return None
        table = _RNG_TABLES.setdefault((self.provider.name, split, task, seed), [])
        if not table:
            np.random.seed(seed)  # the standard loop's env.seed(seed), once per task
            table.append(np.random.get_state())
        while len(table) <= trial:
            np.random.set_state(table[-1])
            self._replay_reset_draws()
            table.append(np.random.get_state())
        np.random.set_state(table[trial])
        return table

    # -- Gymnasium API --------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
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
        table = self._seed_fixture_rng(spec.split, task, trial, seed)
        self._set_cameras(False)  # the reset's own observation and the wait steps need no images
        self._make_current()  # the hard reset frees the old render context's GL objects
        env.reset()
        if table is not None:
            after = np.random.get_state()
            if len(table) > trial + 1:
                if not _same_rng_state(after, table[trial + 1]):
                    raise RuntimeError(f"{spec.episode_id}: fixture placement diverged from the standard loop's sequence")
            else:
                table.append(after)
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
        if self._images:
            self._make_current()
        raw, reward, _done, _ = self._env.step(a)
        self._t += 1
        success = bool(self._env.check_success())
        terminated = success
        truncated = not success and self._t >= self._max_steps
        obs = self._observation(raw)
        self._record_frame(obs)
        termination = "success" if success else ("max_steps" if truncated else None)
        info = self._info(success=success, termination=termination)
        if terminated or truncated:
            self._done = True
            path = self._write_video(success)
            if path:
                info[INFO_ARTIFACTS] = {"video": path}
        return obs, float(reward), terminated, truncated, info

    def close(self) -> None:
        self._close_env()

    def render(self) -> Any:
        """``rgb_array``: the agent-view camera as the policy sees it (gymnasium's ``render``)."""
        if self._env is None:
            return None
        self._set_cameras(True)
        self._make_current()
        return self._observation(self._env.env._get_observations(force_update=True)).get("agentview_image")

    # -- helpers --------------------------------------------------------
    def _close_env(self) -> None:
        try:
            self._make_current()
        except Exception:
            pass
        env, self._env, self._env_key = self._env, None, None
        if env is not None:
            try:
                env.close()
            except Exception:
                pass

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
        from harness.video import write_mp4

        spec = self._spec
        name = f"{spec.suite}_{spec.episode_id.replace('/', '_')}_seed{spec.seed}.mp4"
        path = write_mp4(Path(self._artifacts_dir) / "videos" / name, self._frames, VIDEO_FPS)
        self._frames = []
        return str(path)
