"""The FAKE AI2-THOR controller (tests/envs/thor/fake.py) with an agent that walks, for the
``alfred`` suite's thor tests. It is not AI2-THOR and simulates no physics.

Added to the shared stand-in (to be folded into it at the merge):

- ``MoveAhead`` (one 0.25 m cell along the agent's heading, refused off the reachable
  cells), ``RotateLeft`` / ``RotateRight`` (90 degrees), on the agent pose the base
  fake keeps for ``TeleportFull``;
- ``reachablePositions`` from given cells, by default the cells the trajectory's expert
  stands on (:func:`expert_cells`, from ``init_action`` and the MoveAheads of
  ``plan.low_actions``: all reachable in the restored scene, since the expert walked them);
  with an ALFRED checkout ($ALFRED_DIR), :func:`layout_grid` adds ALFRED's reachable grid
  of the floor plan (``gen/layouts/FloorPlan<N>-layout.npy``, the scene before objects are
  placed: a cell an object blocks in the restored scene can be free there);
- ``dirtyable`` / ``isDirty`` on objects (every type ALFRED calls Cleanable starts dirty)
  and ``CleanObject``, which ALFRED's ``check_clean`` reads and sends;
- events copied with pickle rather than ``copy.deepcopy`` (the same copy, several times
  faster: these tests send tens of thousands of calls).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any, Iterable, Mapping

from envs.household import alfred_constants
from envs.thor.navigation import STEP, Cell, cell_of
from tests.envs.thor.fake import FakeController, FakeEvent

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
    """:class:`FakeController` with a walking agent on ``cells`` (default: :func:`expert_cells`)."""

    def __init__(self, traj: Mapping[str, Any], cells: Iterable[Cell] | None = None, **kw: Any) -> None:
        super().__init__(traj, **kw)
        self.cells = set(cells) if cells is not None else expert_cells(traj)
        self.agent_y = float(traj["scene"]["init_action"]["y"])

    def step(self, action: dict[str, Any], raise_for_failure: bool = False) -> FakeEvent:
        self._tick("step", action)
        ok, err = self._apply(action)
        self.metadata.update(lastActionSuccess=ok, errorMessage=err, lastAction=action.get("action"))
        return FakeEvent(pickle.loads(pickle.dumps(self.metadata)))

    def _scene(self, scene_name: str) -> dict[str, Any]:
        md = super()._scene(scene_name)
        md["reachablePositions"] = [{"x": x * STEP, "y": self.agent_y, "z": z * STEP}
                                    for x, z in sorted(self.cells)]
        return md

    @staticmethod
    def _obj(oid: str, otype: str, pos: Mapping[str, float], consts: Any) -> dict[str, Any]:
        obj = FakeController._obj(oid, otype, pos, consts)
        dirty = otype in alfred_constants().val_action_objects["Cleanable"]
        obj.update(dirtyable=dirty, isDirty=dirty)
        return obj

    def _apply(self, a: Mapping[str, Any]) -> tuple[bool, str]:
        name = a.get("action")
        agent = self.metadata.get("agent")
        if name in ("RotateLeft", "RotateRight"):
            agent["rotation"] = {"y": (float(agent["rotation"]["y"]) + (90 if name == "RotateRight" else -90)) % 360}
            return True, ""
        if name == "MoveAhead":
            heading = round(float(agent["rotation"]["y"]) / 90) % 4
            x, z = cell_of(agent["position"]["x"], agent["position"]["z"])
            nxt = (x + AHEAD[heading][0], z + AHEAD[heading][1])
            if nxt not in self.cells:
                return False, "MoveAhead is blocked"
            agent["position"] = {"x": nxt[0] * STEP, "y": agent["position"]["y"], "z": nxt[1] * STEP}
            return True, ""
        if name == "CleanObject":
            obj = self._by_id().get(a.get("objectId"))
            if obj is None or not obj.get("dirtyable"):
                return False, "cannot clean"
            obj["isDirty"] = False
            return True, ""
        return super()._apply(a)
