"""EB-Manipulation's 7-integer action grammar: ``[X, Y, Z, Roll, Pitch, Yaw, Gripper]``.

Constants and conversions are EmbodiedBench's (``envs/eb_manipulation/eb_man_utils.py``,
paper-release code b247936):

* scene bounds x in [-0.3, 0.7], y in [-0.5, 0.5], z in [0.6, 1.6] m, 100 cells of 1 cm
  per axis; an action bin maps to the *centre* of its cell (``min + 0.01 * idx + 0.005``),
  bin 100 is accepted and lands 5 mm outside the bounds, nothing is clipped;
* rotation bins of 3 degrees, ``angle = idx * 3 - 180`` for roll, pitch and yaw, applied
  as extrinsic x-y-z Euler angles (``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``);
* gripper 1 = open, 0 = closed, thresholded at 0.5;
* object coordinates shown to the model use ``floor((p - min) / 0.01)`` capped at 99 with
  no lower clamp.

This module is pure numpy: the CoppeliaSim adapter and the prompt code use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

#: EmbodiedBench ``SCENE_BOUNDS`` (x_min, y_min, z_min, x_max, y_max, z_max), metres.
SCENE_BOUNDS = np.array([-0.3, -0.5, 0.6, 0.7, 0.5, 1.6])
#: EmbodiedBench ``VOXEL_SIZE``: cells per axis.
VOXEL_SIZE = 100
#: EmbodiedBench ``ROTATION_RESOLUTION``: degrees per rotation bin.
ROTATION_RESOLUTION = 3
#: Rotation bins per full turn (120); bin 120 is the same angle as bin 0.
ROTATION_BINS = 360 // ROTATION_RESOLUTION
#: Metres per position cell (1 cm).
CELL = float((SCENE_BOUNDS[3] - SCENE_BOUNDS[0]) / VOXEL_SIZE)
#: The simulator's gripper threshold (open when >= 0.5).
GRIPPER_THRESHOLD = 0.5

ACTION_LEN = 7


@dataclass(frozen=True)
class Pose:
    """A gripper target: world position (m), rotation matrix, gripper open flag."""

    position: np.ndarray
    rotation: np.ndarray
    gripper_open: bool


class ActionFormatError(ValueError):
    """The value is not 7 finite, integral numbers (the reason is the message)."""


def validate_action(action: Any) -> list[int]:
    """Return the action as 7 ints, or raise :class:`ActionFormatError` saying why.

    Accepted: any sequence / 1-D array of 7 numbers that are integers or integral
    floats (``3.0``). Booleans and strings are refused. Values are not range-checked
    (the original extrapolates out-of-range bins; see :func:`action_to_pose`).
    """
    if isinstance(action, (str, bytes)) or not isinstance(action, (Sequence, np.ndarray)):
        raise ActionFormatError(f"an action is a list of 7 integers, got {type(action).__name__}")
    values = list(np.asarray(action, dtype=object).reshape(-1)) if isinstance(action, np.ndarray) else list(action)
    if isinstance(action, np.ndarray) and action.ndim != 1:
        raise ActionFormatError(f"an action is a flat list of 7 integers, got an array of shape {action.shape}")
    if len(values) != ACTION_LEN:
        raise ActionFormatError(f"an action has 7 numbers [X, Y, Z, Roll, Pitch, Yaw, Gripper], got {len(values)}")
    out: list[int] = []
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ActionFormatError(f"action entry {i} is {v!r}, not a number")
        try:
            f = float(v)
        except OverflowError:  # an int beyond float range: the original's conversion fails too
            raise ActionFormatError(f"action entry {i} is out of range") from None
        if not math.isfinite(f):
            raise ActionFormatError(f"action entry {i} is not finite ({v!r})")
        if f != math.floor(f):
            raise ActionFormatError(f"action entry {i} is {v!r}, not an integer")
        out.append(int(f))
    return out


def is_non_finite(action: Any) -> bool:
    """True for a numeric sequence containing NaN or infinity (an agent contract breach)."""
    if isinstance(action, (str, bytes)) or not isinstance(action, (Sequence, np.ndarray)):
        return False
    if any(v is None or isinstance(v, (str, bytes)) for v in (action.reshape(-1) if isinstance(action, np.ndarray) else action)):
        return False
    try:
        arr = np.asarray(action, dtype=float)
    except (TypeError, ValueError, OverflowError):  # an int beyond float range is not NaN
        return False
    return bool(arr.size) and not bool(np.all(np.isfinite(arr)))


def bin_to_position(idx: Sequence[int]) -> np.ndarray:
    """Position bins -> world position (cell centre, EmbodiedBench's formula, no clipping)."""
    return SCENE_BOUNDS[:3] + CELL * np.asarray(idx, dtype=float)[:3] + CELL / 2


def position_to_bin(p: Sequence[float]) -> list[int]:
    """World position -> observed bins: ``floor((p - min) / cell)``, capped at 99, no lower clamp."""
    idx = np.floor((np.asarray(p, dtype=float) - SCENE_BOUNDS[:3]) / CELL + 1e-9).astype(int)
    return [int(min(i, VOXEL_SIZE - 1)) for i in idx]


def position_to_action_bin(p: Sequence[float]) -> list[int]:
    """World position -> the action bin whose cell centre is nearest (for planners)."""
    idx = np.rint((np.asarray(p, dtype=float) - SCENE_BOUNDS[:3] - CELL / 2) / CELL).astype(int)
    return [int(i) for i in idx]


def bin_to_angle_deg(idx: int) -> float:
    return float(idx * ROTATION_RESOLUTION - 180)


def angle_deg_to_bin(angle: float) -> int:
    """Degrees -> rotation bin in 0..119 (nearest; angles wrap)."""
    return int(round((angle + 180.0) / ROTATION_RESOLUTION)) % ROTATION_BINS


def euler_xyz_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Extrinsic x-y-z Euler angles (radians) -> rotation matrix ``Rz @ Ry @ Rx``."""
    cr, sr, cp, sp, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def matrix_to_euler_xyz(r: np.ndarray) -> tuple[float, float, float]:
    """Inverse of :func:`euler_xyz_to_matrix` (radians; pitch in [-pi/2, pi/2])."""
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(r[2, 0]) < 1 - 1e-9:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: put everything in yaw
        roll = 0.0
        yaw = math.atan2(-r[0, 1], r[1, 1])
    return roll, pitch, yaw


def matrix_to_quat_xyzw(r: np.ndarray) -> np.ndarray:
    """Rotation matrix -> quaternion (x, y, z, w) (the original's order; not sign-normalised)."""
    w = math.sqrt(max(0.0, 1 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + r[0, 0] - r[1, 1] - r[2, 2])) / 2, r[2, 1] - r[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - r[0, 0] + r[1, 1] - r[2, 2])) / 2, r[0, 2] - r[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - r[0, 0] - r[1, 1] + r[2, 2])) / 2, r[1, 0] - r[0, 1])
    return np.array([x, y, z, w])


def action_to_pose(action: Sequence[int]) -> Pose:
    """A validated 7-int action -> :class:`Pose` (no clipping; angles wrap)."""
    a = list(action)
    angles = [math.radians(bin_to_angle_deg(i)) for i in a[3:6]]
    return Pose(bin_to_position(a[:3]), euler_xyz_to_matrix(*angles), float(a[6]) >= GRIPPER_THRESHOLD)


def action_to_continuous(action: Sequence[int]) -> np.ndarray:
    """The original's continuous action: position (3), quaternion xyzw (4), gripper (1)."""
    pose = action_to_pose(action)
    return np.concatenate([pose.position, matrix_to_quat_xyzw(pose.rotation), [1.0 if pose.gripper_open else 0.0]])


def pose_to_action(position: Sequence[float], rotation: np.ndarray, gripper_open: bool) -> list[int]:
    """A world pose -> the nearest 7-int action (what an oracle emits)."""
    roll, pitch, yaw = matrix_to_euler_xyz(np.asarray(rotation, dtype=float))
    return [*position_to_action_bin(position),
            *(angle_deg_to_bin(math.degrees(a)) for a in (roll, pitch, yaw)),
            1 if gripper_open else 0]
