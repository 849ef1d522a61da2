"""The ``replay`` baseline: a LIBERO demonstration's actions, open-loop.

``path`` is a demonstration file or a folder of them:

* HDF5 in LIBERO's / robomimic's layout (``data/<demo>/actions``, (T, 7));
  needs ``h5py``.
* NPZ with one ``(T, 7)`` array per demo (``demo_0``, ``demo_1``, ...) or a
  single ``actions`` array.

A folder is searched per episode by the task's name, as LIBERO's datasets name
their files: ``<task_name>_demo.hdf5``, ``<task_name>_demo.npz`` or
``<task_name>.npz``. ``demo`` picks the demonstration: an index / key, or
``"init_index"`` for ``demo_<i>`` on trial i. Open-loop replay from another
start state usually fails: it measures how much the fixed init states differ
from the demos' starts, and it exercises the whole action path of the suite.
When the demo runs out the policy holds the dummy action (``after=hold``) or
ends the episode with an empty plan (``after=stop``).

``identity()`` carries the SHA-256 of every demo file, so another file is another run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import EpisodeSpec
from policies.plugin import ReplayParams

_DUMMY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)  # source: envs/libero/protocol.py DUMMY_ACTION
_SUFFIXES = ("_demo.hdf5", "_demo.npz", ".npz", ".hdf5")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_demo(path: str | Path, demo: int | str = 0) -> np.ndarray:
    """The (T, 7) action array of one demonstration in ``path``."""
    path = Path(path)
    if path.suffix in (".hdf5", ".h5"):
        try:
            import h5py
        except ImportError:
            raise ImportError("reading HDF5 demos needs h5py (pip install h5py), or convert the demo to NPZ") from None
        with h5py.File(path, "r") as f:
            key = f"demo_{demo}" if isinstance(demo, int) else str(demo)
            if "data" not in f or key not in f["data"]:
                raise KeyError(f"{path}: no data/{key}/actions")
            actions = np.asarray(f["data"][key]["actions"])
    else:
        with np.load(path, allow_pickle=False) as data:
            key = f"demo_{demo}" if isinstance(demo, int) else str(demo)
            if key in data.files:
                actions = np.asarray(data[key])
            elif "actions" in data.files and demo in (0, "actions"):
                actions = np.asarray(data["actions"])
            else:
                raise KeyError(f"{path}: no array {key!r} (has {', '.join(data.files)})")
    if actions.ndim != 2 or actions.shape[1] != 7 or not np.all(np.isfinite(actions)):
        raise ValueError(f"{path}:{demo}: expected a finite (T, 7) action array, got shape {actions.shape}")
    return actions.astype(np.float64)


class ReplayPolicy:
    name = "replay"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = False

    Params = ReplayParams

    def __init__(self, **values: Any) -> None:
        self.params = params = parse(self.Params, values)
        self.path = Path(params.path).expanduser()
        if not self.path.exists():
            raise FileNotFoundError(f"replay: no demonstration file or folder at {self.path}")
        self.demo: int | str = int(params.demo) if params.demo.isdigit() else params.demo
        self.after = params.after
        #: Actions returned per call (None: the whole remaining demo); executed open-loop.
        self.chunk = params.chunk
        self.replan_steps = params.replan_steps
        files = [self.path] if self.path.is_file() else sorted(
            p for p in self.path.iterdir() if p.is_file() and p.name.endswith(_SUFFIXES))
        if not files:
            raise FileNotFoundError(f"replay: no *.hdf5 / *.npz demonstrations in {self.path}")
        self._hashes = {p.name: _sha256(p) for p in files}
        self._cursor: dict[tuple, int] = {}
        self._cache: dict[tuple[str, Any], np.ndarray] = {}

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "files": self._hashes}

    def _file_for(self, episode: EpisodeSpec) -> Path:
        if self.path.is_file():
            return self.path
        task = episode.metadata.get("task_name")
        for suffix in _SUFFIXES:
            p = self.path / f"{task}{suffix}"
            if p.is_file():
                return p
        raise FileNotFoundError(f"replay: no demonstration for task {task!r} in {self.path}")

    def _actions(self, episode: EpisodeSpec) -> np.ndarray:
        demo = int(episode.metadata["init_index"]) if self.demo == "init_index" else self.demo
        f = self._file_for(episode)
        key = (str(f), demo)
        if key not in self._cache:
            self._cache[key] = load_demo(f, demo)
        return self._cache[key]

    def reset(self, episode: EpisodeSpec) -> None:
        self._cursor[episode.key] = 0

    def act(self, requests: Sequence[AgentRequest]) -> list[list[list[float]]]:
        out = []
        for r in requests:
            actions = self._actions(r.episode)
            start = self._cursor.get(r.episode.key, 0)
            if start >= len(actions):
                out.append([] if self.after == "stop" else [list(_DUMMY)] * (self.chunk or 10))
                continue
            end = len(actions) if self.chunk is None else min(len(actions), start + self.chunk)
            # the runner may execute only replan_steps of the chunk
            taken = end - start if self.replan_steps is None else min(end - start, self.replan_steps)
            self._cursor[r.episode.key] = start + taken
            out.append(actions[start:end].tolist())
        return out
