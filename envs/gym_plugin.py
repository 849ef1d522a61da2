"""Registers this project's Gymnasium ids whenever ``gymnasium`` is imported: no project import.

Gymnasium 1.x has no plugin hook of its own: its 0.x entry-point group ``gymnasium.envs`` was
removed in 1.0 (``gymnasium/envs/__init__.py`` registers only the built-in ids, and
``gymnasium.make`` imports nothing but the ``module:`` prefix of an id). So an installed wheel
ships a one-line ``embodied_transfer_gym.pth`` at the top of site-packages (setup.py's build
step) that imports this module at interpreter start-up. It imports nothing else (no Gymnasium,
no numpy: start-up stays instant); it puts a finder on ``sys.meta_path`` that, the first time
``gymnasium`` is imported, lets the import run and then registers the ids below with *string*
entry points, so ``gymnasium.make("embodied_transfer/EBAlfred-v0")`` imports the suite's code
only then. A failure here never breaks Gymnasium's import (the ids are then just absent).

An editable install (``pip install -e .``) gets no such file (setuptools' editable wheels hold
only the path hook): there, ``import envs.gym_registration`` or the id form
``"envs.gym_registration:embodied_transfer/EBAlfred-v0"`` registers them.
"""

from __future__ import annotations

import sys
from typing import Any

#: The id prefix of every env registered here.
NAMESPACE = "embodied_transfer"

#: The factory every id names (imported by ``gymnasium.make``, not before).
ENTRY_POINT = "envs.gym_registration:make_suite_env"

#: gymnasium id -> (suite registry key, default split, default suite parameters). Default splits
#: need no downloaded data (EB-ALFRED's and ALFRED's generated splits) or ship with the suite's
#: extra. LIBERO: a gymnasium user resets episodes in any order, so fixtures are placed per
#: (seed, task, init) (``fixture_rng=per_trial``) instead of reproducing the standard loop's
#: sequence, which only holds when a task's inits run in order (pass ``fixture_rng="sequence"``
#: to ``gymnasium.make`` to get it).
GYM_IDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    f"{NAMESPACE}/EBAlfred-v0": ("eb_alfred", "seen", {}),
    f"{NAMESPACE}/Alfred-v0": ("alfred", "seen", {}),
    f"{NAMESPACE}/Libero-v0": ("libero", "libero_spatial", {"fixture_rng": "per_trial"}),
    f"{NAMESPACE}/EBManipulation-v0": ("eb_manipulation", "base", {}),
}


def register(registry: Any, register_fn: Any) -> None:
    """Register every id not yet in ``registry`` (idempotent)."""
    for env_id, (suite, _split, params) in GYM_IDS.items():
        if env_id not in registry:
            register_fn(env_id, entry_point=ENTRY_POINT, kwargs={"suite": suite, **params})


class _AfterGymnasiumImport:
    """A one-shot ``sys.meta_path`` finder: wraps the loader of ``gymnasium`` so that the ids
    are registered right after Gymnasium's own package has run."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gymnasium":
            return None
        import importlib.util

        _remove_finder()  # one shot; and the lookup below goes to the other finders
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            try:
                register(module.registry, module.register)
            except Exception:  # never break Gymnasium's import
                pass

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's loader only
        return spec


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterGymnasiumImport)]


def install() -> None:
    """Register now if Gymnasium is already imported, else once it is (the ``.pth`` calls this)."""
    gym = sys.modules.get("gymnasium")
    if gym is not None and hasattr(gym, "registry"):
        register(gym.registry, gym.register)
        return
    if not any(isinstance(f, _AfterGymnasiumImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasiumImport())
