"""The recording stand-in for AI2-THOR (tests/envs/thor/fake.py; it walks: MoveAhead one grid
cell along the heading, refused off the reachable cells, RotateLeft / RotateRight 90 degrees)
set up for the ``alfred`` suite's thor tests. It is not AI2-THOR and simulates no physics.

What this module adds to it:

- the reachable grid from given cells, by default the cells the trajectory's expert
  stands on (:func:`expert_cells`, from ``init_action`` and the MoveAheads of
  ``plan.low_actions``: all reachable in the restored scene, since the expert walked them);
  with an ALFRED checkout ($ALFRED_DIR), :func:`layout_grid` adds ALFRED's reachable grid
  of the floor plan (``gen/layouts/FloorPlan<N>-layout.npy``, the scene before objects are
  placed: a cell an object blocks in the restored scene can be free there);
- every type ALFRED calls Cleanable starts dirty (made up), so the ``CleanObject`` calls of
  ALFRED's ``check_clean`` are exercised.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from envs.household import alfred_constants
from envs.thor.navigation import STEP, Cell, cell_of
from tests.envs.thor.fake import FakeController

#: (dx, dz) cells of one MoveAhead per heading (0: rotation 0 = +z, 1: 90 = +x, ...).
AHEAD = ((0, 1), (1, 0), (0, -1), (-1, 0))


def alfred_dir() -> Path | None:
    """ALFRED's checkout ($ALFRED_DIR), or None."""
    path = os.environ.get("ALFRED_DIR")
    return Path(path) if path and (Path(path) / "models" / "eval" / "eval_task.py").is_file() else None


def expert_cells(traj: Mapping[str, Any]) -> set[Cell]:
    """The cells the expert stands on: its start, and where each MoveAhead takes it."""
    init = traj["scene"]["init_action"]
    x, z = cell_of(init["x"], init["z"])
    heading = round(init["rotation"] / 90) % 4
    cells = {(x, z)}
    for a in traj["plan"]["low_actions"]:
        name = a["api_action"]["action"]
        if name == "MoveAhead":
            x, z = x + AHEAD[heading][0], z + AHEAD[heading][1]
            cells.add((x, z))
        elif name in ("RotateLeft", "RotateRight"):
            heading = (heading + (1 if name == "RotateRight" else -1)) % 4
    return cells


def layout_cells(floor_plan: int) -> set[Cell] | None:
    """ALFRED's reachable grid of a floor plan (its layout file), when ALFRED is checked out."""
    root = alfred_dir()
    if root is None:
        return None
    import numpy as np

    points = np.load(root / "gen" / "layouts" / f"FloorPlan{floor_plan}-layout.npy")
    return {cell_of(float(x), float(z)) for x, z in points}


def layout_grid(traj: Mapping[str, Any]) -> set[Cell] | None:
    """ALFRED's reachable grid of the trajectory's floor plan with the expert's cells (None
    without a checkout); only the cells connected to the start, as ``GetReachablePositions``
    floods out from the agent (a layout file may hold a separate patch: FloorPlan408's, by
    the bathtub)."""
    layout = layout_cells(int(traj["scene"]["scene_num"]))
    if layout is None:
        return None
    cells = expert_cells(traj) | layout
    init = traj["scene"]["init_action"]
    start = cell_of(init["x"], init["z"])
    connected, todo = {start}, [start]
    while todo:
        x, z = todo.pop()
        for dx, dz in AHEAD:
            nxt = (x + dx, z + dz)
            if nxt in cells and nxt not in connected:
                connected.add(nxt)
                todo.append(nxt)
    return connected


class WalkingFake(FakeController):
    """:class:`FakeController` whose reachable grid is ``cells`` (default: :func:`expert_cells`)
    and whose Cleanable objects start dirty, so ALFRED's ``check_clean`` has something to clean."""

    def __init__(self, traj: Mapping[str, Any], cells: Iterable[Cell] | None = None, **kw: Any) -> None:
        super().__init__(traj, **kw)
        self.cells = set(cells) if cells is not None else expert_cells(traj)

    def _load_scene(self, scene_name: str) -> None:
        super()._load_scene(scene_name)
        self._grid = tuple((x * STEP, z * STEP) for x, z in sorted(self.cells))

    def _set_poses(self, poses: list[Mapping[str, Any]]) -> None:
        super()._set_poses(poses)
        cleanable = alfred_constants().val_action_objects["Cleanable"]
        for o in self._objects:
            if o["objectType"] in cleanable:
                o.update(dirtyable=True, isDirty=True)
