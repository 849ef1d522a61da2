"""Walking to an object on AI2-THOR 2.1.0 in ALFRED's navigation primitives.

The code is ours; the rules are ALFRED's (askforalfred/alfred, commit
f91f4c0c96c7a29f33d0557f86b0a21035379b3b), so that a walk costs what the
expert's walks in ``plan.low_actions`` cost (ALFRED's L*):

- **Grid**: cells of ``AGENT_STEP_SIZE`` = 0.25 m (gen/constants.py:90); four
  headings 90 degrees apart (0: +z, rotation 0; 1: +x, 90; 2: -z, 180; 3: -x,
  270); the camera horizon in steps of ``AGENT_HORIZON_ADJ`` = 15 degrees
  (gen/constants.py:91), positive looking down.
- **Moves** (gen/graph/graph_obj.py:67-89 edges, :355-362 ``get_plan_move``,
  :365-373 ``horizon_adjust``): ``RotateLeft`` / ``RotateRight`` turn one
  heading in place; ``MoveAhead`` moves one cell along the heading, onto a
  reachable cell; ``LookUp`` / ``LookDown`` change the horizon by 15 degrees,
  appended after the turns and moves.
- **A walk** (gen/graph/graph_obj.py:320-352 ``navigate_to_goal``): first look
  to 45 degrees, then a shortest sequence of turns and moves to the goal cell and
  heading, then look to the goal's horizon. Every turn, move and look is one
  low-level action of ALFRED's count. Of the shortest, the one with the fewest
  moves, as ALFRED's weights choose (our search is Dijkstra's; ALFRED's is
  networkx's A*).
- **The goal pose of an object** (gen/game_states/task_game_state_full_knowledge.py:179-255
  ``get_obj_coords``): the reachable cell nearest the object (L1 distance, first
  in the layout files' order: z, then x), or, for a receptacle, ALFRED's vetted
  interaction cell (``layouts/FloorPlan<N>-openable.json``); facing the object
  along the axis it lies furthest on; one cell further back when the camera is
  within 0.5 m of it; the horizon that looks at it, rounded to 15 degrees and
  clipped to [-30, 60], with ALFRED's forced horizons (gen/constants.py:1205-1209).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from envs.thor.thor_env import AGENT_HORIZON_ADJ

#: gen/constants.py:90 (metres per grid cell and per MoveAhead).
STEP = 0.25
#: degrees per LookUp / LookDown.
HORIZON_STEP = AGENT_HORIZON_ADJ
#: gen/constants.py:95 (the goal horizon is rounded to this many degrees).
HORIZON_GRANULARITY = 15
#: gen/graph/graph_obj.py:328: the horizon every walk starts by looking to.
WALK_HORIZON = 45
#: task_game_state_full_knowledge.py:241: the goal horizon is clipped to this range.
HORIZON_RANGE = (-30, 60)
#: task_game_state_full_knowledge.py:219: a camera closer than this (metres) steps back one cell.
TOO_CLOSE_M = 0.5
#: gen/constants.py:1205-1209: (type, floor plan or None for all) -> horizon.
FORCED_HORIZONS: Mapping[tuple[str, int | None], int] = {("FloorLamp", None): 0, ("Fridge", 18): 30,
                                                         ("Toilet", None): 15}

#: The primitives of a walk (AI2-THOR 2.1.0 action names).
MOVE_AHEAD, ROTATE_LEFT, ROTATE_RIGHT = "MoveAhead", "RotateLeft", "RotateRight"
LOOK_UP, LOOK_DOWN = "LookUp", "LookDown"
PRIMITIVES: tuple[str, ...] = (MOVE_AHEAD, ROTATE_LEFT, ROTATE_RIGHT, LOOK_UP, LOOK_DOWN)
#: (dx, dz) of one MoveAhead per heading.
_AHEAD = ((0, 1), (1, 0), (0, -1), (-1, 0))

Cell = tuple[int, int]


@dataclass(frozen=True)
class GridPose:
    """An agent pose on the grid: cell (x, z), heading 0-3, horizon in degrees."""

    x: int
    z: int
    heading: int
    horizon: int


def cell_of(x: float, z: float) -> Cell:
    return round(x / STEP), round(z / STEP)


def grid_of(positions: Iterable[Mapping[str, float]]) -> tuple[Cell, ...]:
    """The reachable cells of ``GetReachablePositions``, in the layout files' order (z, then x)."""
    return tuple(sorted({cell_of(float(p["x"]), float(p["z"])) for p in positions}, key=lambda c: (c[1], c[0])))


def pose_of(agent: Mapping[str, object]) -> GridPose:
    """The grid pose of AI2-THOR's ``metadata["agent"]`` (horizons above 180 are negative)."""
    pos = agent["position"]
    rot = agent["rotation"]
    assert isinstance(pos, Mapping) and isinstance(rot, Mapping)
    horizon = round(float(agent.get("cameraHorizon", 0) or 0))  # type: ignore[arg-type]
    if horizon > 180:
        horizon -= 360
    x, z = cell_of(float(pos["x"]), float(pos["z"]))
    return GridPose(x, z, round(float(rot["y"]) / 90) % 4, horizon)


def looks(horizon: int, goal: int) -> list[str]:
    """LookDown / LookUp from ``horizon`` to ``goal`` (whole 15-degree steps, as horizon_adjust)."""
    if horizon < goal:
        return [LOOK_DOWN] * ((goal - horizon) // HORIZON_STEP)
    if horizon > goal:
        return [LOOK_UP] * ((horizon - goal) // HORIZON_STEP)
    return []


def turns_and_moves(cells: Iterable[Cell], start: GridPose, goal: GridPose) -> list[str] | None:
    """The fewest RotateLeft / RotateRight / MoveAhead from ``start`` to ``goal``'s cell and
    heading (moves only onto reachable cells), and of those the one with the fewest moves
    (ALFRED weighs a move 1 + 1e-4, a turn 1: graph_obj.py:11-13, :59, :77-89); None when
    the goal cannot be reached."""
    free = set(cells)
    first, last = (start.x, start.z, start.heading), (goal.x, goal.z, goal.heading)
    came: dict[tuple[int, int, int], tuple[tuple[int, int, int], str] | None] = {first: None}
    cost = {first: (0, 0)}
    queue: list[tuple[int, int, int, tuple[int, int, int]]] = [(0, 0, 0, first)]
    order = 0
    while queue:
        total, moves, _, state = heapq.heappop(queue)
        if state == last:
            break
        if (total, moves) > cost[state]:
            continue
        x, z, h = state
        dx, dz = _AHEAD[h]
        for action, nxt in ((ROTATE_LEFT, (x, z, (h - 1) % 4)), (ROTATE_RIGHT, (x, z, (h + 1) % 4)),
                            (MOVE_AHEAD, (x + dx, z + dz, h))):
            if action == MOVE_AHEAD and (nxt[0], nxt[1]) not in free:
                continue
            step = (total + 1, moves + (action == MOVE_AHEAD))
            if nxt not in cost or step < cost[nxt]:
                cost[nxt], came[nxt] = step, (state, action)
                order += 1
                heapq.heappush(queue, (*step, order, nxt))
    if last not in came:
        return None
    actions: list[str] = []
    link = came[last]
    while link is not None:
        state, action = link
        actions.append(action)
        link = came[state]
    return actions[::-1]


def walk(cells: Iterable[Cell], start: GridPose, goal: GridPose) -> list[str] | None:
    """The primitives of the expert's walk from ``start`` to ``goal``: look to 45 degrees,
    turn and move, look to the goal's horizon. None when the goal cell cannot be reached."""
    path = turns_and_moves(cells, start, goal)
    if path is None:
        return None
    return looks(start.horizon, WALK_HORIZON) + path + looks(WALK_HORIZON, goal.horizon)


def goal_pose(position: Mapping[str, float], obj_type: str, cells: Sequence[Cell], camera_height: float,
              floor_plan: int, known: Cell | None = None) -> GridPose | None:
    """Where ALFRED's expert stands to act on an object at ``position`` (metres): see the
    module docstring. ``cells`` in :func:`grid_of`'s order; ``known``: the receptacle's
    vetted cell (used only when it is reachable). None without reachable cells."""
    if not cells:
        return None
    cx, cz, cy = float(position["x"]) / STEP, float(position["z"]) / STEP, float(position["y"]) / STEP
    free = set(cells)
    if known is not None and known in free:
        best = known
    else:
        best = min(cells, key=lambda c: abs(cx - c[0]) + abs(cz - c[1]))  # first of the nearest
    dx, dz = cx - best[0], cz - best[1]
    if abs(dx) > abs(dz):
        heading = 1 if dx > 0 else 3
    else:
        heading = 0 if dz > 0 else 2
    camera_to_object = math.dist((best[0], best[1], camera_height / STEP), (cx, cz, cy)) * STEP
    if camera_to_object < TOO_CLOSE_M:
        back_x, back_z = _AHEAD[heading]
        back = (best[0] - back_x, best[1] - back_z)
        if back in free:
            best = back
            dx, dz = cx - best[0], cz - best[1]
    horizontal = max(abs(dx), abs(dz)) * STEP
    below = camera_height - float(position["y"])
    horizon = round(math.atan2(below, horizontal) * (180 / math.pi / HORIZON_GRANULARITY)) * HORIZON_GRANULARITY
    horizon = int(min(max(horizon, HORIZON_RANGE[0]), HORIZON_RANGE[1]))
    forced = FORCED_HORIZONS.get((obj_type, floor_plan), FORCED_HORIZONS.get((obj_type, None)))
    if forced is not None:
        horizon = forced
    return GridPose(best[0], best[1], heading, horizon)
