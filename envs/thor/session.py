"""An AI2-THOR controller that survives crashes and hangs.

Every controller call runs in a worker thread with a deadline. A call that
raises (the Unity process died, the socket closed) or passes its deadline (a
hung ``controller.step``, alfred#130) marks the session crashed: the Unity
process is killed and the next :meth:`ThorSession.ensure_started` starts a new
one. The env restores the episode's scene on the new process and retries the
episode up to ``max_restarts`` times; past that the failure propagates and the
runner records it as an ``env`` error (its own ``max_retries`` then applies).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from typing import Any, Callable

#: The ai2thor version ALFRED and EB-ALFRED use (ALFRED README; EmbodiedBench setup).
THOR_VERSION = "2.1.0"
#: ALFRED env/thor_env.py ``ThorEnv.__init__``: ``quality='MediumCloseFitShadows'``.
DEFAULT_QUALITY = "MediumCloseFitShadows"
#: ai2thor 2.1.0 ``Controller.start`` refuses screens below 300x300; ALFRED uses 300x300.
SCREEN_SIZE = 300


class SimulatorCrash(RuntimeError):
    """The simulator died, hung past its deadline, or could not be restarted."""


def default_controller_factory(quality: str = DEFAULT_QUALITY) -> Any:
    """A real ``ai2thor.controller.Controller`` (ImportError naming the extra when absent)."""
    try:
        import ai2thor
        from ai2thor.controller import Controller
    except ImportError as exc:
        raise ImportError("the AI2-THOR backend needs ai2thor==2.1.0: pip install -e '.[thor]'") from exc
    version = getattr(ai2thor, "__version__", None)
    if version is not None and version != THOR_VERSION:
        raise ImportError(f"the AI2-THOR backend is written for ai2thor=={THOR_VERSION}, found {version}")
    return Controller(quality=quality)


def require_ai2thor(controller_factory: Any) -> None:
    """ValueError (one line, with the fix) when the real simulator is asked for but ai2thor
    is not installed; suites call it before any episode starts."""
    import importlib.util

    if controller_factory is None and importlib.util.find_spec("ai2thor") is None:
        raise ValueError(f"backend 'thor' needs ai2thor=={THOR_VERSION}: pip install -e '.[thor]'")


def ensure_display(x_display: str | None) -> tuple[str | None, subprocess.Popen | None]:
    """The X display number to start Unity on, starting Xvfb when none is available.

    ai2thor 2.1.0 needs an X server (it has no CloudRendering). Returns
    (display number without ':', the Xvfb process we started or None).
    """
    if x_display:
        return x_display.lstrip(":"), None
    if os.environ.get("DISPLAY"):
        return os.environ["DISPLAY"].lstrip(":"), None
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise SimulatorCrash("no X display: set DISPLAY / suite.params.x_display, or install Xvfb "
                             "(apt-get install xvfb) so the backend can start one")
    for n in range(99, 140):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            proc = subprocess.Popen([xvfb, f":{n}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            if proc.poll() is None:
                return str(n), proc
    raise SimulatorCrash("could not start Xvfb on displays :99-:139")


class ThorSession:
    """One controller at a time, with deadlines and restarts."""

    def __init__(self, controller_factory: Callable[[], Any] | None = None, *, x_display: str | None = None,
                 step_timeout_s: float = 120.0, start_timeout_s: float = 900.0, max_restarts: int = 2,
                 screen_size: int | None = None) -> None:
        self.controller_factory = controller_factory or default_controller_factory
        #: frame side in pixels (ALFRED 300; EB-ALFRED 500, EBAlfEnv.py ``resolution``).
        self.screen_size = int(screen_size or SCREEN_SIZE)
        self.x_display = x_display
        self.step_timeout_s = float(step_timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.max_restarts = int(max_restarts)
        self.controller: Any = None
        self.crashes = 0
        self.starts = 0
        self._xvfb: subprocess.Popen | None = None

    # --- lifecycle ----------------------------------------------------------------
    def ensure_started(self) -> Any:
        if self.controller is not None:
            return self.controller
        controller = self.controller_factory()
        display = None
        if getattr(controller, "needs_display", True):
            display, proc = ensure_display(self.x_display)
            self._xvfb = self._xvfb or proc
        self._call(lambda: controller.start(player_screen_width=self.screen_size, player_screen_height=self.screen_size,
                                            x_display=display), self.start_timeout_s, "start", controller)
        self.controller = controller
        self.starts += 1
        return controller

    def kill(self) -> None:
        """Stop the controller and its Unity process (best effort)."""
        c, self.controller = self.controller, None
        if c is None:
            return
        pid = getattr(c, "unity_pid", None)
        try:
            threading.Thread(target=c.stop, daemon=True).start()
        except Exception:  # pragma: no cover - already dead
            pass
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        self.kill()
        if self._xvfb is not None:
            self._xvfb.terminate()
            self._xvfb = None

    # --- calls -------------------------------------------------------------------
    def _call(self, fn: Callable[[], Any], timeout: float, what: str, controller: Any = None) -> Any:
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - reported below
                box["error"] = exc

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            self.crashes += 1
            self.controller = self.controller or controller
            self.kill()
            raise SimulatorCrash(f"AI2-THOR {what} hung for more than {timeout:.0f}s; the process was killed")
        if "error" in box:
            self.crashes += 1
            self.controller = self.controller or controller
            self.kill()
            raise SimulatorCrash(f"AI2-THOR {what} failed: {type(box['error']).__name__}: {box['error']}")
        return box.get("value")

    def reset(self, scene_name: str) -> Any:
        c = self.ensure_started()
        return self._call(lambda: c.reset(scene_name), self.step_timeout_s, f"reset({scene_name})")

    def step(self, action: dict[str, Any]) -> Any:
        c = self.ensure_started()
        return self._call(lambda: c.step(dict(action)), self.step_timeout_s, f"step({action.get('action')})")

    def run_with_restarts(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (which restores its own scene); on a crash restart and rerun it, at
        most ``max_restarts`` times, then re-raise."""
        for attempt in range(self.max_restarts + 1):
            try:
                return fn()
            except SimulatorCrash:
                if attempt == self.max_restarts:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
