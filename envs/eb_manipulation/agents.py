"""Reference agents for EB-Manipulation: a privileged oracle and a seeded random agent.

Both satisfy :class:`harness.interfaces.Agent` and are this suite's own agents
(envs/eb_manipulation/plugin.py): ``planner=oracle`` / ``planner=random`` on
``suite=eb_manipulation`` run them.
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping, Sequence

import numpy as np

from envs.eb_manipulation import grammar as G
from envs.eb_manipulation import sim as S
from envs.eb_manipulation.plugin import RandomParams
from harness.interfaces import AgentRequest
from harness.params import NoParams, parse
from harness.types import INFO_PRIVILEGED, EpisodeSpec

ORACLE_VERSION = "1"
RANDOM_VERSION = "1"
APPROACH_HEIGHT = 0.09  # m above the grasp / release point for the approach and lift poses
RELEASE_CLEARANCE = 0.015  # object bottom above the holder's rim when the fingers open


def _wrap_half_turn(a: float) -> float:
    """Finger axes are symmetric under a half turn: map to [0, pi), the range the Panda's
    last joint reaches from its ready posture with the gripper pointing down."""
    return a % math.pi


#: Lowest grasp height of the grip site above the table (m): robosuite's Panda finger
#: collision boxes reach 12.5 mm below the grip site.
GRASP_FLOOR = 0.012


def _act(p: Sequence[float], finger_yaw: float, open_: bool, z_floor: float | None = None) -> list[int]:
    """The nearest action; with ``z_floor``, the nearest Z bin not below that height."""
    a = G.pose_to_action(p, S.top_down_rotation(_wrap_half_turn(finger_yaw)), open_)
    if z_floor is not None:
        while G.bin_to_position(a[:3])[2] < z_floor - 1e-9:
            a[2] += 1
    return a


#: Finger-axis symmetry of each graspable (radians between equivalent grasps).
_GRASP_PERIOD = {"cube": math.pi / 2, "star": 2 * math.pi / 5, "triangular": 2 * math.pi / 3, "cylinder": math.pi / 6,
                 "moon": 2 * math.pi, "sponge": math.pi}


def _grasp(obj: Mapping[str, Any], avoid: Sequence[np.ndarray] = ()) -> tuple[np.ndarray, float]:
    """Grasp point (world) and finger yaw for a graspable object.

    Among the object's symmetric grasps, the one whose finger axis (the hand's long side) is
    most nearly perpendicular to the nearest point in ``avoid`` (holders beside the object)."""
    p = np.array(obj["xyz"], dtype=float)
    yaw0 = float(obj["yaw_now"])
    kind = "sponge" if obj["kind"] == "sponge" else obj["shape"]
    s = float(obj.get("scale", 1.0))
    period = _GRASP_PERIOD[kind]
    candidates = [yaw0 + k * period for k in range(max(1, round(2 * math.pi / period)))]
    if avoid:
        near = min(avoid, key=lambda q: float(np.linalg.norm(q[:2] - p[:2])))
        away = math.atan2(near[1] - p[1], near[0] - p[0])
        yaw = min(candidates, key=lambda y: abs(math.cos(y - away)))
    else:
        yaw = candidates[0]
    # the grasp centre in the object's frame, turned to the chosen grasp
    local = {"star": (0.0, 0.026 * s * math.sin(math.radians(18))),  # fingers on two side tips
             "triangular": (0.026 * s * 0.25, 0.0),  # one finger on a side, one on the opposite vertex
             "moon": (0.022 * s * 0.5, 0.0)}.get(kind, (0.0, 0.0))  # the crescent's middle block
    c, sn = math.cos(yaw), math.sin(yaw)
    p = p + np.array([c * local[0] - sn * local[1], sn * local[0] + c * local[1], 0.0])
    return p, yaw


def _holding(state: Mapping[str, Any], name: str) -> bool:
    if state["gripper_open"]:
        return False
    obj = np.array(state["objects"][name]["xyz"])
    return bool(np.linalg.norm(obj - np.array(state["ee_position"])) < 0.05)


def _pick_up(obj: Mapping[str, Any], avoid: Sequence[np.ndarray] = ()) -> tuple[list[list[int]], float]:
    p, yaw = _grasp(obj, avoid)
    above = p + [0, 0, APPROACH_HEIGHT]
    grasp = _act(p, yaw, False, z_floor=S.TABLE_Z + GRASP_FLOOR)
    return [_act(above, yaw, True), grasp, _act(above, yaw, False)], yaw


def oracle_plan(state: Mapping[str, Any]) -> list[list[int]]:
    """The discretised action sequence that finishes the task from ``state``."""
    cls, t, objs = state["task_class"], state["target"], state["objects"]
    if cls in ("pick", "place", "stack"):
        name = t["object"] if cls != "stack" else t["top"]
        obj = objs[name]
        half = S.SHAPE_HALF_HEIGHT[obj["shape"]] * float(obj["scale"])
        if not _holding(state, name):
            # pick up, then re-plan the release from the held object's true offset
            avoid = [np.array(o["xyz"]) for o in objs.values() if o["kind"] in ("container", "sorter")]
            return _pick_up(obj, avoid)[0]
        ee = np.array(state["ee_position"])
        offset = np.array(obj["xyz"]) - ee  # where the object sits in the fingers
        offset[2] = 0.0
        yaw = float(state["ee_finger_yaw"])
        if cls == "pick":
            holder = objs[t["container"]]
            dest = np.array([*holder["xyz"][:2], S.TABLE_Z + S.CONTAINER_HEIGHT + half + RELEASE_CLEARANCE + 0.01])
        elif cls == "place":
            holder = objs["sorter"]
            holes = S.sorter_holes(holder["xyz"], holder["yaw"])
            hole = min(holes, key=lambda h: float(np.linalg.norm(h - np.array(obj["xyz"][:2]))))
            dest = np.array([*hole, S.TABLE_Z + S.SORTER_HEIGHT + half + RELEASE_CLEARANCE])
        else:
            bottom = objs[t["bottom"]]
            hb = S.SHAPE_HALF_HEIGHT[bottom["shape"]] * float(bottom["scale"])
            dest = np.array([*bottom["xyz"][:2], bottom["xyz"][2] + hb + half + 0.012])
            # turn the held object onto the bottom one's orientation (the smaller turn of its
            # symmetry set); none between different shapes
            turn = 0.0
            if obj["shape"] == bottom["shape"]:
                period = _GRASP_PERIOD[obj["shape"]]
                turn = (float(bottom["yaw_now"]) - float(obj["yaw_now"]) + period / 2) % period - period / 2
            yaw = yaw + turn
            c, s_ = math.cos(turn), math.sin(turn)
            offset = np.array([c * offset[0] - s_ * offset[1], s_ * offset[0] + c * offset[1], 0.0])
        dest = dest - offset
        return [_act(dest + [0, 0, APPROACH_HEIGHT * 0.6], yaw, False), _act(dest, yaw, True)]
    if cls == "wipe":
        sponge = objs["sponge"]
        area = objs[t["area"]]
        plan = [] if _holding(state, "sponge") else _pick_up(sponge)[0]
        a = float(area["yaw"])
        axis = np.array([math.cos(a), math.sin(a), 0.0])
        centre = np.array([*area["pos"], 0.0])
        # across a rectangle along its long axis; through a round / star area's centre
        half = (S.AREA_SIZE[1] / 2 if area.get("shape", "rectangle") == "rectangle" else S.AREA_RADIUS / 2) + 0.01
        # start at the end of the area nearer the sponge
        ends = [centre - axis * half, centre + axis * half]
        sp = np.array(sponge["xyz"])
        if np.linalg.norm(ends[1][:2] - sp[:2]) < np.linalg.norm(ends[0][:2] - sp[:2]):
            ends.reverse()
        z = S.TABLE_Z + S.SPONGE_SIZE[2] / 2 - 0.004  # press the sponge lightly on the table
        start, end = ends[0] + [0, 0, z], ends[1] + [0, 0, z]
        plan += [_act(start + [0, 0, 0.06], a, False), _act(start, a, False), _act(end, a, False)]
        return plan
    raise ValueError(f"unknown task class {cls!r}")


class OracleAgent:
    """Plans the discretised actions from the true state (privileged upper bound).

    Each call re-plans from the current state (``info["privileged_state"]``): the whole
    remaining plan is returned and executed open-loop, as a planner's plan is.
    """

    name = "eb_manipulation_oracle"
    privileged = True
    action_kinds = frozenset({"discrete"})
    reads_images = False

    #: The parameter declaration (envs/eb_manipulation/plugin.py): none.
    Params = NoParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": ORACLE_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[list[int]]]:
        out = []
        for r in requests:
            state = r.info.get(INFO_PRIVILEGED)
            if state is None:
                raise ValueError("the oracle needs info['privileged_state'] (reset with privileged=True)")
            out.append(oracle_plan(state))
        return out


def random_action(rng: random.Random, gripper_open_only: bool = False) -> list[int]:
    """A random in-range action: position bins 0..100, rotation bins 0..119, gripper 0/1
    (always open with ``gripper_open_only``, as the original's fallback)."""
    return [rng.randint(0, G.VOXEL_SIZE), rng.randint(0, G.VOXEL_SIZE), rng.randint(0, G.VOXEL_SIZE),
            rng.randint(0, G.ROTATION_BINS - 1), rng.randint(0, G.ROTATION_BINS - 1),
            rng.randint(0, G.ROTATION_BINS - 1), 1 if gripper_open_only else rng.randint(0, 1)]


class RandomAgent:
    """One random in-range 7-integer action per call, seeded by (seed, episode key)."""

    name = "eb_manipulation_random"
    privileged = False
    action_kinds = frozenset({"discrete"})
    reads_images = False

    #: The parameter declaration (envs/eb_manipulation/plugin.py).
    Params = RandomParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        self.seed = self.params.seed
        self._rngs: dict[tuple, random.Random] = {}

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": RANDOM_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        self._rngs[episode.key] = random.Random(f"eb_manipulation_random|{self.seed}|{'|'.join(map(str, episode.key))}")

    def act(self, requests: Sequence[AgentRequest]) -> list[list[list[int]]]:
        out = []
        for r in requests:
            rng = self._rngs.get(r.episode.key)
            if rng is None:
                self.reset(r.episode)
                rng = self._rngs[r.episode.key]
            out.append([random_action(rng)])
        return out
