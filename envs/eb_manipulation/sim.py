"""The MuJoCo twin's physics: a Panda (robosuite 1.4's model) on a table, per-episode objects,
an IK + joint-space controller that moves the gripper to an absolute pose in a bounded number
of simulator steps, and the per-family success checks.

Scene geometry is the twin's own (the original's CoppeliaSim scene files carry its sensor
volumes; no numbers from them are used). World frame chosen to match the original's scene
bounds: table top at z = 0.752 m, robot base at x = -0.32 m, objects spawn in front of it.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from envs.eb_manipulation.grammar import euler_xyz_to_matrix

# Headless rendering by default (an explicit MUJOCO_GL wins; "osmesa" where EGL is missing).
os.environ.setdefault("MUJOCO_GL", "egl")
import mujoco  # noqa: E402  (robosuite's MuJoCo)

from envs.eb_manipulation.plugin import MAX_IMAGE_SIZE  # noqa: E402  (the largest camera image side: the offscreen framebuffer's)

# --- Scene constants (the twin's own; chosen so the original's bins land on the table) -----
#: Table top height (m). The original's objects on the table show Z bins 17-18 (EmbodiedBench
#: in-context examples), i.e. a table top near 0.75 m; RLBench's table top is 0.752 m.
TABLE_Z = 0.752
#: The box the workspace check widens (the twin's earlier table; kept so the rules stay as they were).
TABLE_CENTER_X = 0.2
TABLE_SIZE = (0.9, 1.0)  # x, y extent (m)
#: The drawn (and colliding) table top: larger than the workspace box, as the original's front
#: frames show the wooden top from behind the robot's base to past the image's lower edge and
#: past both image sides (the pixel rays of the fitted camera below, on the table plane).
VISUAL_TABLE_CENTER_X, VISUAL_TABLE_SIZE = 0.1, (1.3, 1.3)
#: The robot's base, 5 cm nearer the table's middle than the twin's earlier -0.32 m: EmbodiedBench's
#: own example plans put the gripper, pointing down, at x bin 83 (0.535 m), which the Panda's arm
#: (shoulder to wrist 0.72 m, wrist offset 0.088 m) reaches from -0.27 m or nearer, and at x bin 29
#: (-0.005 m) close to the base, which -0.26 m no longer reaches; the camera fitted to the
#: original's frames puts the base's foot at -0.32 +- 0.06 m.
ROBOT_BASE = (-0.27, 0.0, TABLE_Z)
#: The coordinate grid's origin in x / y (EmbodiedBench ``SCENE_BOUNDS[:2]``; marked in the overlay).
SCENE_X_MIN, SCENE_Y_MIN = -0.3, -0.5
#: The original's workspace check: the table's box widened 0.2 m in x/y, z in [table-0.04, table+1.0].
WORKSPACE_MARGIN = 0.2
WORKSPACE_Z = (-0.04, 1.0)
#: The original's tool frame (PyRep's Panda tip) closes the fingers along its *y* axis; the twin's
#: grip site (robosuite) closes them along its x axis. A rotation the grammar decodes is the tip's,
#: so the grip site is sent to ``R @ TIP_TO_SITE``. Evidence: NVlabs/M2T2 (commit 734a525,
#: m2t2/rlbench_utils.py ``gripper_pose_from_rlbench``) turns an RLBench tip pose into its own
#: gripper frame by a +90 degree turn about the approach axis, and that frame's fingers sit on
#: its x axis (m2t2/meshcat_utils.py ``load_grasp_points``, fingers at x = +-0.053 m).
TIP_TO_SITE = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
#: Half a turn about the approach (z) axis.
HALF_TURN_Z = np.diag([-1.0, -1.0, 1.0])
#: Standard Panda "ready" joint configuration (gripper pointing down, ~0.5 m above the table).
HOME_Q = np.array([0.0, -0.6, 0.0, -2.3, 0.0, 1.7, math.pi / 4])

# --- Controller constants ------------------------------------------------------------------
TIMESTEP = 0.002  # robosuite's default MuJoCo timestep
KP = 400.0  # joint-space stiffness (1/s^2, mass-matrix weighted)
KD = 2.0 * math.sqrt(KP)  # critically damped
MAX_SPEED = 0.35  # m/s of the Cartesian interpolation
MAX_ANG_SPEED = 2.0  # rad/s
MIN_MOVE_S, MAX_MOVE_S = 0.25, 1.6  # interpolation time bounds
HOLD_STEPS = 200  # at most this many steps to converge at the goal after interpolation
GRIPPER_STEPS = 175  # steps to let the fingers close / open
SETTLE_STEPS = 150  # settling after an open (the original settles 10 of its 50 ms steps)
#: Upper bound of simulator steps one grammar action can take (motion + gripper + settle).
MAX_STEPS_PER_ACTION = int(MAX_MOVE_S / TIMESTEP) + HOLD_STEPS + GRIPPER_STEPS + SETTLE_STEPS
#: Further IK starts after the current and the ready posture: the ready posture with the last
#: joint turned +-90 and 180 degrees. From the two first starts alone damped least squares stalls
#: on the last joint's limit for a band of top-down yaws (about 40 degrees wide) that another
#: wrist turn reaches.
IK_WRIST_SEEDS = tuple(np.array([*HOME_Q[:6], HOME_Q[6] + d]) for d in (-math.pi / 2, math.pi / 2, -math.pi))
IK_POS_TOL = 0.004
IK_ROT_TOL = 0.03
GOAL_POS_TOL = 0.006  # a reached motion: tracking error under 6 mm ...
GOAL_ROT_TOL = 0.05  # ... and ~3 degrees
#: Simulator steps between the goal checks along an arm motion: 50 ms, the original's simulation
#: step (CoppeliaSim's default), after each of which it checks (amsolver/task_environment.py:217-230).
PATH_CHECK_STEPS = 25

# --- Objects ---------------------------------------------------------------------------------
#: EmbodiedBench's 20 seen colours (``amsolver/const.py``, from RLBench): name -> RGB.
COLORS: dict[str, tuple[float, float, float]] = {
    "red": (1.0, 0.0, 0.0), "maroon": (0.5, 0.0, 0.0), "lime": (0.0, 1.0, 0.0), "green": (0.0, 0.5, 0.0),
    "blue": (0.0, 0.0, 1.0), "navy": (0.0, 0.0, 0.5), "yellow": (1.0, 1.0, 0.0), "cyan": (0.0, 1.0, 1.0),
    "magenta": (1.0, 0.0, 1.0), "silver": (0.75, 0.75, 0.75), "gray": (0.5, 0.5, 0.5), "orange": (1.0, 0.5, 0.0),
    "olive": (0.5, 0.5, 0.0), "purple": (0.5, 0.0, 0.5), "teal": (0.0, 0.5, 0.5), "azure": (0.0, 0.5, 1.0),
    "violet": (0.5, 0.0, 1.0), "rose": (1.0, 0.0, 0.5), "black": (0.0, 0.0, 0.0), "white": (1.0, 1.0, 1.0),
}
#: The graspable shapes (EmbodiedBench's seen object shapes).
SHAPES = ("star", "triangular", "cylinder", "cube", "moon")
#: Nominal half-height (m) of each shape at scale 1 (bodies rest with their origin this high).
SHAPE_HALF_HEIGHT = {"star": 0.0125, "triangular": 0.016, "cylinder": 0.02, "cube": 0.02, "moon": 0.015}
#: Footprint radius (m) at scale 1, for spawning without overlap.
SHAPE_RADIUS = {"star": 0.03, "triangular": 0.03, "cylinder": 0.022, "cube": 0.029, "moon": 0.03}
#: Contact time constant of the graspable objects (s); >= 2 timesteps for stability.
OBJECT_SOLREF_TIMECONST = 0.008
CONTAINER_INNER = 0.11  # inner side of a pick container (m)
CONTAINER_WALL = 0.01
CONTAINER_HEIGHT = 0.05
SORTER_SIDE = 0.2
SORTER_HEIGHT = 0.09
SORTER_HOLE = 0.08  # 2 x 2 square openings, one per shape in the original
SORTER_PLATE = 0.01
SPONGE_SIZE = (0.05, 0.09, 0.03)  # x (grasp axis), y, z
AREA_SIZE = (0.07, 0.30)  # width, length of a wipe area
AREA_RADIUS = 0.08  # outer radius of a round / star wipe area
DIRT_SPOTS = 50  # EmbodiedBench ``DIRT_POINTS``
DIRT_GEOM_GROUP = 5  # a geom group no camera of the twin draws
DIRT_SUCCESS_MAX_LEFT = 25  # success when at most half remain (LengthCondition(spots, 50 * 0.5))
#: The sponge's dirt sensor: a volume fixed in the sponge's frame (the original's proximity sensor
#: is a child of the sponge model, EmbodiedBench b247936 vlm/tasks/wipe_table.py:108-111, so it
#: moves and turns with the sponge), under its bottom face: the face widened by SPONGE_REACH on
#: each side, from SPONGE_SENSOR_TOP above the face (contact sinks a spot slightly into it) to
#: SPONGE_LIFT below it. A spot is wiped while inside it and the face looks down at the table
#: (its outward normal within SPONGE_FACE_TILT_DEG of straight down): a sponge lying on a side or
#: upside down senses sideways or upward, not the table it tumbles over. (The sensor's own shape
#: is CoppeliaSim model data the twin cannot read; these numbers are the twin's.)
SPONGE_REACH = 0.012
SPONGE_LIFT = 0.02
SPONGE_SENSOR_TOP = 0.002
SPONGE_FACE_TILT_DEG = 45.0
#: Height of the dirt spots' centres (m): on the table, under a resting sponge's bottom face.
SPOT_Z = TABLE_Z + 0.0013
STACK_XY_TOL = 0.03  # stacked cube within 3 cm of the bottom cube's start (the twin's own volume)
STACK_Z_TOL = 0.015


# --- Grasp: the original's attach-on-close rule ------------------------------------------------
#: The twin's proximity-sensor volume between the fingers, a box in the grip site's frame
#: (x = finger axis, z = approach): the open fingers' span across, the pads' width along y, and
#: from the pads' tips (robosuite's pad boxes end 4.4 mm past the grip site) 2.5 cm toward the palm.
#: The original's sensor is part of its CoppeliaSim Panda model; no numbers come from it.
GRASP_SENSOR_HALF = (0.04, 0.012, 0.0185)
GRASP_SENSOR_CENTER_Z = -0.0065
#: Geom group of the sensor box (never drawn, never colliding).
SENSOR_GEOM_GROUP = 4
#: Object kinds the gripper can attach (the original's ``register_graspable_objects``).
GRASPABLE_KINDS = ("shape", "sponge")
#: Simulator steps the opening fingers move before the weld is released (10 ms).
RELEASE_LAG_STEPS = 5

#: Geom group of robosuite's (invisible) robot collision geoms.
HIDDEN_COLLISION_GROUP = 3
#: The cameras whose view decides which objects the model is told about (the original uses
#: front, left / right shoulder and wrist; the twin has these two).
VISIBILITY_CAMERAS = ("front", "robot0_eye_in_hand")
#: Rays per image side cast to find each object's visible surface (the original: 500 px masks).
VISIBILITY_RAYS = 64


def _rgba(color: str, alpha: float = 1.0) -> list[float]:
    return [*COLORS[color], alpha]


@functools.lru_cache(maxsize=1)
def base_xml() -> str:
    """Panda + Panda gripper + table, from robosuite 1.4's models (built once per process)."""
    from robosuite.models import MujocoWorldBase
    from robosuite.models.arenas import TableArena
    from robosuite.models.grippers import gripper_factory
    from robosuite.models.robots import Panda

    world = MujocoWorldBase()
    robot = Panda()
    robot.add_gripper(gripper_factory("PandaGripper"))
    robot.set_base_xpos(list(ROBOT_BASE))
    world.merge(robot)
    arena = TableArena(table_full_size=(*TABLE_SIZE, 0.05), table_offset=(TABLE_CENTER_X, 0.0, TABLE_Z))
    world.merge(arena)
    return world.get_xml()


#: The front camera, fitted to EmbodiedBench's own example frames (the 14 numbered boxes of the
#: pick and stack examples in ``evaluator/config/visual_icl_examples/eb_manipulation``, each
#: matched with its object's bins in ``evaluator/config/eb_manipulation_example.py``; a pinhole
#: camera by least squares, 6.3 px rms at 500 px): beyond the table's far side from the robot,
#: 1.62 m high, looking back at it 24 degrees down, 36.6 degrees vertical field of view. World +y
#: is image-right and +x comes toward the viewer, as in the original's front view.
FRONT_CAMERA_POS = (1.50, 0.0, 1.62)
FRONT_CAMERA_PITCH_DEG = 23.9
FRONT_CAMERA_FOVY = 36.6
#: Scene colours (sRGB 0..1), tuned so that the rendered table and wall regions match the
#: original's frames (benchmarks/eb_manipulation_frames.py measures both).
WOOD_RGB = (0.72, 0.53, 0.41)
WALL_RGB = (0.0, 0.27, 0.32)
FLOOR_RGB = (0.80, 0.81, 0.77)
TEXTURE_SIDE = 256
#: The key light: from behind the robot and to its left, high; it casts the shadows.
KEY_LIGHT_DIR = (0.35, -0.3, -1.0)


def _wood_texture(side: int = TEXTURE_SIDE) -> np.ndarray:
    """A procedural wood grain (rows = grain along the table's x): ring bands with noise."""
    rng = np.random.default_rng(7)
    v = np.linspace(0.0, 1.0, side, endpoint=False)
    xx, yy = np.meshgrid(v, v)
    warp = sum(rng.uniform(0.01, 0.03) * np.sin(2 * np.pi * (k * xx + rng.uniform())) for k in (1, 2, 3))
    rings = 0.5 + 0.5 * np.sin(2 * np.pi * (14 * (yy + warp)) + 3 * np.sin(2 * np.pi * 2 * xx))
    fine = rng.normal(0.0, 1.0, (side, 1)).repeat(side, axis=1)
    shade = 0.86 + 0.10 * rings + 0.025 * fine
    rgb = np.clip(np.array(WOOD_RGB)[None, None, :] * shade[..., None] * 255, 0, 255)
    return rgb.astype(np.uint8)


def _hex_texture(side: int = TEXTURE_SIDE) -> np.ndarray:
    """A dark teal wall with a faint hexagon grid (the original's wall pattern)."""
    v = np.arange(side) / side * 4.0
    xx, yy = np.meshgrid(v, v)
    # distance to the nearest hexagon centre on a pointy-top lattice, as an outline mask
    q = xx * 2 / math.sqrt(3)
    r = yy - xx / math.sqrt(3)
    frac = np.stack([q - np.round(q), r - np.round(r), -(q - np.round(q)) - (r - np.round(r))])
    edge = np.abs(frac).max(axis=0) > 0.42
    rgb = np.array(WALL_RGB)[None, None, :] * np.where(edge, 1.35, 1.0)[..., None]
    return np.clip(rgb * 255, 0, 255).astype(np.uint8)


def _add_texture(spec, name: str, rgb: np.ndarray):
    tex = spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, width=rgb.shape[1], height=rgb.shape[0],
                           nchannel=3)
    tex.data = rgb.tobytes()
    return tex


def _base_spec() -> "mujoco.MjSpec":
    spec = mujoco.MjSpec.from_string(base_xml())
    spec.visual.global_.offwidth = MAX_IMAGE_SIZE
    spec.visual.global_.offheight = MAX_IMAGE_SIZE
    # robosuite's collision geoms (group 0, drawn green) stay invisible: its visual meshes show the robot
    for g in spec.geoms:
        if g.name.startswith(("robot0_", "gripper0_")) and g.group == 0 and (g.contype or g.conaffinity):
            g.rgba = [0.0, 0.0, 0.0, 0.0]
            g.group = HIDDEN_COLLISION_GROUP  # not seen by cameras nor by the visibility rays
    # the arena's image textures are dropped (uploading them made every new renderer, one per
    # episode, ~3x slower to create); two small procedural ones take their place
    for mat in spec.materials:
        if any(mat.textures):
            mat.textures = [""] * len(mat.textures)
    for tex in list(spec.textures):
        if tex.file:
            spec.delete(tex)
    _add_texture(spec, "wood", _wood_texture())
    _add_texture(spec, "hexwall", _hex_texture())
    looks = {"table_ceramic": ("wood", (1.0, 1.0), [1, 1, 1, 1]), "table_mat": ("wood", (1.0, 1.0), [1, 1, 1, 1]),
             "walls_mat": ("hexwall", (3.0, 3.0), [1, 1, 1, 1]), "floorplane": ("", (1, 1), [*FLOOR_RGB, 1]),
             "table_legs_metal": ("", (1, 1), [0.5, 0.5, 0.52, 1])}
    for mat in spec.materials:
        if mat.name in looks:
            tex, rep, rgba = looks[mat.name]
            textures = [""] * len(mat.textures)
            textures[int(mujoco.mjtTextureRole.mjTEXROLE_RGB)] = tex
            mat.textures = textures
            mat.texrepeat = list(rep)
            mat.texuniform = False
            mat.rgba = rgba
            mat.specular, mat.shininess, mat.reflectance = 0.1, 0.1, 0.0
    # the table: larger than the workspace box (see VISUAL_TABLE_SIZE), the rear wall nearer
    hx, hy = VISUAL_TABLE_SIZE[0] / 2, VISUAL_TABLE_SIZE[1] / 2
    for g in spec.geoms:
        if g.name in ("table_collision", "table_visual"):
            g.size = [hx, hy, g.size[2]]
        elif g.name.startswith("table_leg"):
            g.pos = [math.copysign(hx - 0.1, g.pos[0]), math.copysign(hy - 0.1, g.pos[1]), g.pos[2]]
    spec.body("table").pos = [VISUAL_TABLE_CENTER_X, 0.0, spec.body("table").pos[2]]
    for g in list(spec.geoms):  # walls no camera of the twin sees: out (a smaller shadow map area)
        if g.name in ("wall_leftcorner_visual", "wall_rightcorner_visual", "wall_left_visual", "wall_right_visual",
                      "wall_front_visual"):
            spec.delete(g)
    for g in spec.geoms:
        if g.name == "wall_rear_visual":  # nearer, and only as high as the camera sees (no shadow on the table)
            g.pos = [-1.1, 0.0, 0.8]
            g.size = [g.size[0], g.size[1], 0.8] if g.size[2] > 0.5 else g.size
            g.size = [g.size[0], 0.8, g.size[2]] if g.size[1] > 0.5 else g.size
    # lights: a soft ambient headlight and one shadow-casting key light
    spec.visual.headlight.ambient = [0.38, 0.38, 0.38]
    spec.visual.headlight.diffuse = [0.12, 0.12, 0.12]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.visual.quality.shadowsize = 4096
    spec.visual.map.shadowscale = 0.35
    for light in spec.lights:
        light.castshadow = False
        light.diffuse = [0.0, 0.0, 0.0]
    d = np.array(KEY_LIGHT_DIR) / np.linalg.norm(KEY_LIGHT_DIR)
    spec.worldbody.add_light(name="key", type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, pos=list(-2.5 * d + [0, 0, 0.8]),
                             dir=list(d), castshadow=True, diffuse=[0.5, 0.5, 0.48], specular=[0.1, 0.1, 0.1],
                             ambient=[0.0, 0.0, 0.0])
    # the front camera (FRONT_CAMERA_*): its -z looks along the view, +x is image-right (world +y)
    pitch = math.radians(FRONT_CAMERA_PITCH_DEG)
    z = np.array([math.cos(pitch), 0.0, math.sin(pitch)])  # from the scene toward the camera
    x = np.array([0.0, 1.0, 0.0])
    y = np.cross(z, x)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.stack([x, y, z], axis=1).reshape(-1))
    spec.worldbody.add_camera(name="front", pos=list(FRONT_CAMERA_POS), quat=quat, fovy=FRONT_CAMERA_FOVY)
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_MULTICCD  # several contacts per convex pair
    return spec


def _box(body, size, rgba, pos=(0, 0, 0), quat=(1, 0, 0, 0), collide=True, name=None):
    kw = dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(size), rgba=list(rgba), pos=list(pos), quat=list(quat))
    if name:
        kw["name"] = name
    g = body.add_geom(**kw)
    if not collide:
        g.contype = 0
        g.conaffinity = 0
    return g


def _quat_z(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _add_shape(spec, name: str, shape: str, color: str, pos, yaw: float, scale: float):
    """A free graspable object; its body origin is its bounding-box centre."""
    hh = SHAPE_HALF_HEIGHT[shape] * scale
    body = spec.worldbody.add_body(name=name, pos=[pos[0], pos[1], TABLE_Z + hh + 0.001], quat=_quat_z(yaw))
    body.add_freejoint(name=f"{name}_joint")
    rgba = _rgba(color)
    geoms = []
    s = scale
    if shape == "cube":
        geoms.append(_box(body, [0.02 * s] * 3, rgba))
    elif shape == "cylinder":
        geoms.append(body.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.02 * s, 0.02 * s, 0], rgba=rgba))
    elif shape == "triangular":
        # an upright triangular prism: an equilateral triangle (centroid at the origin, one
        # side parallel to body y) extruded along z
        r, half_h = 0.026 * s, SHAPE_HALF_HEIGHT["triangular"] * s
        tri = [(r * math.cos(math.radians(a)), r * math.sin(math.radians(a))) for a in (0, 120, 240)]
        verts = [c for (px, py) in tri for zz in (-half_h, half_h) for c in (px, py, zz)]
        spec.add_mesh(name=f"{name}_mesh", uservert=verts)
        geoms.append(body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"{name}_mesh", rgba=rgba))
    elif shape == "star":
        # a flat five-pointed star: a pentagon prism and five triangular prisms (all convex)
        r_out, r_in, half_t = 0.028 * s, 0.012 * s, 0.0125 * s
        pent = [(r_in * math.cos(math.radians(90 + 72 * k + 36)), r_in * math.sin(math.radians(90 + 72 * k + 36)))
                for k in range(5)]
        verts = [c for (px, py) in pent for zz in (-half_t, half_t) for c in (px, py, zz)]
        spec.add_mesh(name=f"{name}_core", uservert=verts)
        geoms.append(body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"{name}_core", rgba=rgba))
        for k in range(5):
            a = math.radians(90 + 72 * k)
            tip = (r_out * math.cos(a), r_out * math.sin(a))
            b1, b2 = pent[(k - 1) % 5], pent[k]
            verts = [c for (px, py) in (tip, b1, b2) for zz in (-half_t, half_t) for c in (px, py, zz)]
            spec.add_mesh(name=f"{name}_tip{k}", uservert=verts)
            geoms.append(body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"{name}_tip{k}", rgba=rgba))
    elif shape == "moon":
        # a crescent: five blocks on an arc around the body's -x side; the middle block is at +x
        radius, thick, half_h = 0.022 * s, 0.006 * s, 0.015 * s
        for k, deg in enumerate((-64, -32, 0, 32, 64)):
            a = math.radians(deg)
            cx, cy = radius * math.cos(a) - radius * 0.5, radius * math.sin(a)
            geoms.append(_box(body, [thick, 0.0075 * s, half_h], rgba, pos=(cx, cy, 0), quat=_quat_z(a)))
    else:
        raise ValueError(f"unknown shape {shape!r}")
    for g in geoms:
        g.friction = [1.2, 0.01, 0.0005]
        g.condim = 4
        g.density = 400.0
        g.solref = [OBJECT_SOLREF_TIMECONST, 1.0]  # stiffer than the default 0.02: no sinking into thin walls
    return body


def _add_container(spec, name: str, color: str, pos, yaw: float):
    body = spec.worldbody.add_body(name=name, pos=[pos[0], pos[1], TABLE_Z], quat=_quat_z(yaw))
    rgba = _rgba(color)
    half, w, h = CONTAINER_INNER / 2, CONTAINER_WALL / 2, CONTAINER_HEIGHT / 2
    _box(body, [half + 2 * w, half + 2 * w, 0.004], rgba, pos=(0, 0, 0.004))
    for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        size = [w, half + 2 * w, h] if sx else [half + 2 * w, w, h]
        _box(body, size, rgba, pos=(sx * (half + w), sy * (half + w), h))
    return body


def _add_sorter(spec, name: str, pos, yaw: float):
    body = spec.worldbody.add_body(name=name, pos=[pos[0], pos[1], TABLE_Z], quat=_quat_z(yaw))
    rgba = [0.85, 0.1, 0.1, 1.0]  # the original's sorter is red
    half, w, h = SORTER_SIDE / 2, 0.005, SORTER_HEIGHT / 2
    for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        size = [w, half, h] if sx else [half, w, h]
        _box(body, size, rgba, pos=(sx * (half - w), sy * (half - w), h))
    # top plate: a grid of bars leaving 2 x 2 square holes
    bar = (SORTER_SIDE - 2 * SORTER_HOLE) / 3
    zt = SORTER_HEIGHT - SORTER_PLATE / 2
    for c in (-1, 0, 1):
        off = c * (SORTER_HOLE + bar) / 1.0 if c else 0.0
        off = c * (half - bar / 2)
        _box(body, [bar / 2, half, SORTER_PLATE / 2], rgba, pos=(off, 0, zt))
        _box(body, [half, bar / 2, SORTER_PLATE / 2], rgba, pos=(0, off, zt))
    return body


def sorter_holes(pos, yaw: float) -> list[np.ndarray]:
    """World xy centres of the sorter's four openings."""
    off = SORTER_HOLE / 2 + (SORTER_SIDE - 2 * SORTER_HOLE) / 3 / 2
    c, s = math.cos(yaw), math.sin(yaw)
    return [np.array([pos[0] + c * dx - s * dy, pos[1] + s * dx + c * dy])
            for dx in (-off, off) for dy in (-off, off)]


def _add_area(spec, name: str, color: str, pos, yaw: float, shape: str = "rectangle"):
    """A flat, visual-only wipe area: a rectangle (long axis along body x), a disc, or a star."""
    body = spec.worldbody.add_body(name=name, pos=[pos[0], pos[1], TABLE_Z + 0.0006], quat=_quat_z(yaw))
    rgba = _rgba(color, 0.6)
    if shape == "rectangle":
        _box(body, [AREA_SIZE[1] / 2, AREA_SIZE[0] / 2, 0.0005], rgba, collide=False)
    elif shape == "round":
        g = body.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[AREA_RADIUS, 0.0005, 0], rgba=rgba)
        g.contype = g.conaffinity = 0
    elif shape == "star":
        r_in, half_t = AREA_RADIUS * 0.45, 0.0005
        pent = [(r_in * math.cos(math.radians(90 + 72 * k + 36)), r_in * math.sin(math.radians(90 + 72 * k + 36)))
                for k in range(5)]
        parts = [pent] + [[(AREA_RADIUS * math.cos(math.radians(90 + 72 * k)), AREA_RADIUS * math.sin(math.radians(90 + 72 * k))),
                           pent[(k - 1) % 5], pent[k]] for k in range(5)]
        for j, poly in enumerate(parts):
            spec.add_mesh(name=f"{name}_m{j}", uservert=[c for (px, py) in poly for zz in (-half_t, half_t)
                                                          for c in (px, py, zz)])
            g = body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"{name}_m{j}", rgba=rgba)
            g.contype = g.conaffinity = 0
    else:
        raise ValueError(f"unknown area shape {shape!r}")
    return body


def _add_sponge(spec, name: str, color: str, pos, yaw: float):
    body = spec.worldbody.add_body(name=name, pos=[pos[0], pos[1], TABLE_Z + SPONGE_SIZE[2] / 2 + 0.001],
                                   quat=_quat_z(yaw))
    body.add_freejoint(name=f"{name}_joint")
    g = _box(body, [d / 2 for d in SPONGE_SIZE], _rgba(color))
    g.friction = [1.0, 0.01, 0.0005]
    g.condim = 4
    g.density = 150.0
    return body


@dataclass
class MoveResult:
    ok: bool
    reason: str = ""
    sim_steps: int = 0
    #: ``watch`` (see :meth:`PandaTable.move_to`) held at one of its checks along the arm's path
    goal_on_path: bool = False


class PandaTable:
    """One episode's MuJoCo world: build from a layout, move, grip, check success."""

    def __init__(self, layout: Mapping[str, Any]) -> None:
        self.layout = layout
        spec = _base_spec()
        self.objects: dict[str, dict[str, Any]] = {}
        for obj in layout["objects"]:
            kind = obj["kind"]
            if kind == "shape":
                _add_shape(spec, obj["name"], obj["shape"], obj["color"], obj["pos"], obj["yaw"], obj["scale"])
            elif kind == "container":
                _add_container(spec, obj["name"], obj["color"], obj["pos"], obj["yaw"])
            elif kind == "sorter":
                _add_sorter(spec, obj["name"], obj["pos"], obj["yaw"])
            elif kind == "area":
                _add_area(spec, obj["name"], obj["color"], obj["pos"], obj["yaw"], obj.get("shape", "rectangle"))
            elif kind == "sponge":
                _add_sponge(spec, obj["name"], obj["color"], obj["pos"], obj["yaw"])
            else:
                raise ValueError(f"unknown object kind {kind!r}")
            self.objects[obj["name"]] = obj
        eef = spec.body("gripper0_eef")
        sensor = eef.add_geom(name="grasp_sensor", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(GRASP_SENSOR_HALF),
                              pos=[0.0, 0.0, GRASP_SENSOR_CENTER_Z], rgba=[0.0, 1.0, 0.0, 0.0])
        sensor.contype = sensor.conaffinity = 0
        sensor.group = SENSOR_GEOM_GROUP
        sensor.mass = 0.0
        sensor.density = 0.0
        self.graspable = [o["name"] for o in layout["objects"] if o["kind"] in GRASPABLE_KINDS]
        for name in self.graspable:  # one inactive weld per graspable object (attach-on-close)
            spec.add_equality(type=mujoco.mjtEq.mjEQ_WELD, objtype=mujoco.mjtObj.mjOBJ_BODY, name=f"attach_{name}",
                              name1="gripper0_eef", name2=name, active=False)
        spots = layout.get("spots") or []
        spot_body = spec.worldbody.add_body(name="dirt", pos=[0, 0, SPOT_Z])
        for i, (sx, sy) in enumerate(spots):
            # invisible to every camera, as the original's ``renderable=False`` spots
            # (EmbodiedBench b247936 vlm/tasks/wipe_table.py:167-171, 180-184): geom group
            # DIRT_GEOM_GROUP is not drawn and the spot is fully transparent anyway
            g = spot_body.add_geom(name=f"spot{i}", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.006, 0.0003, 0],
                                   pos=[sx, sy, 0], rgba=[0.35, 0.25, 0.1, 0.0])
            g.group = DIRT_GEOM_GROUP
            g.contype = 0
            g.conaffinity = 0
        self.model = spec.compile()
        self.model.opt.timestep = TIMESTEP
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.arm_joints = [m.joint(f"robot0_joint{i}").id for i in range(1, 8)]
        self.arm_qpos = np.array([m.jnt_qposadr[j] for j in self.arm_joints])
        self.arm_dofs = np.array([m.jnt_dofadr[j] for j in self.arm_joints])
        self.arm_act = np.array([m.actuator(f"robot0_torq_j{i}").id for i in range(1, 8)])
        self.finger_act = np.array([m.actuator("gripper0_gripper_finger_joint1").id,
                                    m.actuator("gripper0_gripper_finger_joint2").id])
        self.finger_qpos = np.array([m.jnt_qposadr[m.joint(n).id] for n in
                                     ("gripper0_finger_joint1", "gripper0_finger_joint2")])
        self.site = m.site("gripper0_grip_site").id
        self.q_lo = m.jnt_range[self.arm_joints, 0] + 1e-3
        self.q_hi = m.jnt_range[self.arm_joints, 1] - 1e-3
        self.torque_limit = m.actuator_ctrlrange[self.arm_act, 1]
        self._ik_data = mujoco.MjData(m)
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self._M = np.zeros((m.nv, m.nv))
        self.spot_ids = np.array([m.geom(f"spot{i}").id for i in range(len(spots))], dtype=int)
        self.spot_xy = np.array(spots, dtype=float).reshape(-1, 2)
        self.spot_xyz = np.column_stack([self.spot_xy, np.full(len(self.spot_xy), SPOT_Z)])
        self.spot_alive = np.ones(len(spots), dtype=bool)
        self.sensor_geom = m.geom("grasp_sensor").id
        self.eef_body = m.body("gripper0_eef").id
        self.attach_eq = {n: m.equality(f"attach_{n}").id for n in self.graspable}
        self.object_geoms = {n: [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(n).id] for n in self.graspable}
        self.attached: list[str] = []
        self.sponge = next((o["name"] for o in layout["objects"] if o["kind"] == "sponge"), None)
        self.sim_steps = 0
        self.gripper_open = True
        # start pose
        self.data.qpos[self.arm_qpos] = HOME_Q
        self.data.qpos[self.finger_qpos] = [0.04, -0.04]
        self.q_ref = HOME_Q.copy()
        self._set_gripper_ctrl(True)
        mujoco.mj_forward(m, self.data)
        self._run(100)  # let objects settle on the table
        self.start_positions = {n: self.body_pos(n).copy() for n in self.objects}

    # --- state ------------------------------------------------------------------------------
    def body_pos(self, name: str) -> np.ndarray:
        return self.data.body(name).xpos

    def body_rot(self, name: str) -> np.ndarray:
        return self.data.body(name).xmat.reshape(3, 3)

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def finger_width(self) -> float:
        q = self.data.qpos[self.finger_qpos]
        return float(q[0] - q[1])

    # --- low level ----------------------------------------------------------------------------
    def _set_gripper_ctrl(self, open_: bool) -> None:
        self.data.ctrl[self.finger_act] = [0.04, -0.04] if open_ else [0.0, 0.0]

    def _torques(self) -> None:
        m, d = self.model, self.data
        mujoco.mj_fullM(m, self._M, d.qM)
        mass = self._M[np.ix_(self.arm_dofs, self.arm_dofs)]
        e = self.q_ref - d.qpos[self.arm_qpos]
        qd = d.qvel[self.arm_dofs]
        tau = mass @ (KP * e - KD * qd) + d.qfrc_bias[self.arm_dofs]
        d.ctrl[self.arm_act] = np.clip(tau, -self.torque_limit, self.torque_limit)

    def _run(self, n: int) -> None:
        m, d = self.model, self.data
        wipe = self.sponge is not None and self.spot_alive.any()
        for _ in range(n):
            self._torques()
            mujoco.mj_step(m, d)
            if wipe:
                self._wipe()
        self.sim_steps += n

    def _wipe(self) -> None:
        """Remove the spots inside the sponge's sensor volume (see :data:`SPONGE_REACH`)."""
        body = self.data.body(self.sponge)
        p, r = body.xpos, body.xmat.reshape(3, 3)
        if self.sponge in self.attached:
            # held: where the hand's weld holds it. The original parents a grasped object to the
            # gripper (rigid); the twin's weld is soft and lets a sponge dragged on the table
            # twist in the fingers, which would turn its sensor away.
            p, r = self._welded_pose(self.sponge)
        if r[2, 2] < math.cos(math.radians(SPONGE_FACE_TILT_DEG)):  # the bottom face (-z) does not look down
            return
        half = np.array(SPONGE_SIZE) / 2
        local = (self.spot_xyz - p) @ r  # spot offsets in the sponge's frame
        depth = local[:, 2] + half[2]  # above (+) / below (-) the sponge's bottom face
        hit = ((np.abs(local[:, 0]) <= half[0] + SPONGE_REACH) & (np.abs(local[:, 1]) <= half[1] + SPONGE_REACH)
               & (depth <= SPONGE_SENSOR_TOP) & (depth >= -SPONGE_LIFT))
        new = hit & self.spot_alive
        if new.any():
            self.spot_alive &= ~new
            self.model.geom_rgba[self.spot_ids[new], 3] = 0.0

    # --- inverse kinematics -------------------------------------------------------------------
    def ik(self, pos: np.ndarray, rot: np.ndarray, q0: np.ndarray, iters: int = 120,
           damping: float = 0.02) -> tuple[np.ndarray, float, float]:
        """Damped least squares on the arm; returns (q, position error, rotation error)."""
        m, d = self.model, self._ik_data
        d.qpos[:] = self.data.qpos
        q = np.array(q0, dtype=float)
        ep_n = er_n = float("inf")
        for _ in range(iters):
            d.qpos[self.arm_qpos] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            p = d.site_xpos[self.site]
            r = d.site_xmat[self.site].reshape(3, 3)
            ep = pos - p
            er = 0.5 * (np.cross(r[:, 0], rot[:, 0]) + np.cross(r[:, 1], rot[:, 1]) + np.cross(r[:, 2], rot[:, 2]))
            ep_n, er_n = float(np.linalg.norm(ep)), float(np.linalg.norm(er))
            if ep_n < IK_POS_TOL * 0.25 and er_n < IK_ROT_TOL * 0.25:
                break
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self.site)
            jac = np.vstack([self._jacp[:, self.arm_dofs], self._jacr[:, self.arm_dofs]])
            err = np.concatenate([ep, er])
            jjt = jac @ jac.T + damping ** 2 * np.eye(6)
            dq = jac.T @ np.linalg.solve(jjt, err)
            # null space: stay near the ready posture
            pinv = jac.T @ np.linalg.inv(jjt)
            dq += (np.eye(7) - pinv @ jac) @ (0.05 * (HOME_Q - q))
            step = np.linalg.norm(dq)
            if step > 0.3:
                dq *= 0.3 / step
            q = np.clip(q + dq, self.q_lo, self.q_hi)
        return q, ep_n, er_n

    def in_workspace(self, pos: np.ndarray) -> bool:
        x0 = TABLE_CENTER_X - TABLE_SIZE[0] / 2 - WORKSPACE_MARGIN
        x1 = TABLE_CENTER_X + TABLE_SIZE[0] / 2 + WORKSPACE_MARGIN
        y1 = TABLE_SIZE[1] / 2 + WORKSPACE_MARGIN
        return (x0 <= pos[0] <= x1 and -y1 <= pos[1] <= y1
                and TABLE_Z + WORKSPACE_Z[0] <= pos[2] <= TABLE_Z + WORKSPACE_Z[1])

    # --- one grammar action -------------------------------------------------------------------
    def move_to(self, pos: np.ndarray, rot: np.ndarray, watch: Callable[[], bool] | None = None) -> MoveResult:
        """Move the gripper to (pos, rot) through the joint controller, bounded in steps.

        ``watch`` (a goal check) is called every :data:`PATH_CHECK_STEPS` simulator steps of the
        motion and once at its end; :attr:`MoveResult.goal_on_path` says whether it ever held. The
        original checks its task's success after every simulation step of the arm's path
        (EmbodiedBench b247936 amsolver/task_environment.py:217-230)."""
        start = self.sim_steps
        if not self.in_workspace(pos):
            return MoveResult(False, "The target position is outside the robot's workspace", 0)
        q_now = self.data.qpos[self.arm_qpos].copy()
        # The two fingers are alike: a pose and the same pose turned half a turn about the approach
        # axis grasp alike. The IK's rotation error does not tell them apart, so the move aims at
        # the one nearer the hand's present rotation, for the solve and the interpolation alike.
        flipped = rot @ HALF_TURN_Z
        r_now = self.ee_pose()[1]
        if np.trace(r_now.T @ flipped) > np.trace(r_now.T @ rot):
            rot = flipped
        best = None
        for seed in (q_now, HOME_Q, *IK_WRIST_SEEDS):
            q, ep, er = self.ik(pos, rot, seed)
            if ep < IK_POS_TOL and er < IK_ROT_TOL:
                best = q
                break
        if best is None:
            return MoveResult(False, "No inverse-kinematics solution reaches the target pose", 0)
        p0, r0 = self.ee_pose()
        dist = float(np.linalg.norm(pos - p0))
        rel = r0.T @ rot
        ang = math.acos(max(-1.0, min(1.0, (np.trace(rel) - 1) / 2)))
        duration = min(MAX_MOVE_S, max(MIN_MOVE_S, dist / MAX_SPEED, ang / MAX_ANG_SPEED))
        ticks = max(1, int(round(duration / (5 * TIMESTEP))))
        q_ref = self.q_ref.copy()
        cartesian = True
        seen = [False, self.sim_steps]  # goal held so far, simulator step of the last check

        def run(n: int) -> None:
            self._run(n)
            if watch is not None and not seen[0] and self.sim_steps - seen[1] >= PATH_CHECK_STEPS:
                seen[1] = self.sim_steps
                seen[0] = bool(watch())
        for k in range(1, ticks + 1):
            s = k / ticks
            s = s * s * s * (10 - 15 * s + 6 * s * s)  # minimum jerk
            if cartesian:
                pk = p0 + s * (pos - p0)
                rk = r0 @ _axis_angle_matrix(rel, s)
                q_new, ep, er = self.ik(pk, rk, q_ref, iters=4)
                if ep > 0.03 or er > 0.2:  # the straight line leaves the reachable set: go joint-space
                    cartesian = False
                    q_from, k_from = q_ref.copy(), k
                else:
                    q_ref = q_new
            if not cartesian:
                frac = (k - k_from + 1) / (ticks - k_from + 1)
                q_ref = q_from + frac * (best - q_from)
            self.q_ref = q_ref
            run(5)
        # converge at the goal (refine IK from where the interpolation ended)
        q_goal, ep, er = self.ik(pos, rot, self.q_ref)
        if not (ep < IK_POS_TOL and er < IK_ROT_TOL):
            q_goal = best
        self.q_ref = q_goal
        for _ in range(HOLD_STEPS // 10):
            run(10)
            p, r = self.ee_pose()
            if np.linalg.norm(p - pos) < GOAL_POS_TOL * 0.5 and np.linalg.norm(self.data.qvel[self.arm_dofs]) < 0.05:
                break
        if watch is not None and not seen[0]:
            seen[0] = bool(watch())  # the path's last state
        return MoveResult(True, "", self.sim_steps - start, goal_on_path=seen[0])

    def sensed(self) -> list[str]:
        """Graspable objects any of whose geoms overlaps the gripper's sensor volume."""
        m, d = self.model, self.data
        return [n for n in self.graspable
                if any(mujoco.mj_geomDistance(m, d, self.sensor_geom, g, 0.01, None) <= 0.0 for g in self.object_geoms[n])]

    def attach(self, name: str) -> None:
        """Weld ``name`` to the hand where it is now (the original parents it to the gripper)."""
        m, d = self.model, self.data
        eq = self.attach_eq[name]
        p1, r1 = d.xpos[self.eef_body], d.xmat[self.eef_body].reshape(3, 3)
        p2, r2 = d.body(name).xpos, d.body(name).xmat.reshape(3, 3)
        # weld data: anchor (3), relpos (3) + relquat (4) = the object's (body2) pose in the hand's
        # (body1) frame, torquescale (checked: the attached object keeps its pose to < 1 mm)
        q = np.zeros(4)
        mujoco.mju_mat2Quat(q, (r1.T @ r2).reshape(-1))
        m.eq_data[eq, 0:3] = 0.0
        m.eq_data[eq, 3:6] = r1.T @ (p2 - p1)
        m.eq_data[eq, 6:10] = q
        m.eq_data[eq, 10] = 1.0
        d.eq_active[eq] = 1
        self.attached.append(name)

    def _welded_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The pose the weld of :meth:`attach` holds ``name`` at (the hand's pose times the weld's)."""
        m, d = self.model, self.data
        eq = self.attach_eq[name]
        p1, r1 = d.xpos[self.eef_body], d.xmat[self.eef_body].reshape(3, 3)
        rel = np.zeros(9)
        mujoco.mju_quat2Mat(rel, m.eq_data[eq, 6:10])
        return p1 + r1 @ m.eq_data[eq, 3:6], r1 @ rel.reshape(3, 3)

    def release(self) -> None:
        for name in self.attached:
            self.data.eq_active[self.attach_eq[name]] = 0
        self.attached = []

    def set_gripper(self, open_: bool) -> int:
        """Actuate the fingers if the commanded state differs; settle after an open.

        EmbodiedBench's rule (``amsolver/task_environment.py:398-412``): when the fingers are
        told to close, every graspable object the gripper's proximity sensor detects is attached
        to the gripper first (PyRep ``Gripper.grasp``); when told to open, everything attached
        is released first. The twin attaches with a MuJoCo weld; the rest is physics."""
        if open_ == self.gripper_open:
            return 0
        start = self.sim_steps
        self.gripper_open = open_
        if not open_:
            for name in self.sensed():
                self.attach(name)
        self._set_gripper_ctrl(open_)
        if open_ and self.attached:
            # the fingers let go of the squeeze first, then the weld goes: releasing the weld
            # under the fingers' squeeze would fling the object (a MuJoCo artefact)
            self._run(RELEASE_LAG_STEPS)
            self.release()
            self._run(GRIPPER_STEPS - RELEASE_LAG_STEPS)
        else:
            self._run(GRIPPER_STEPS)
        if open_:
            self._run(SETTLE_STEPS)
        return self.sim_steps - start

    # --- success --------------------------------------------------------------------------------
    def inside(self, obj: str, holder: str) -> bool:
        """Is ``obj``'s centre inside ``holder``'s success volume (a container or the sorter)?"""
        kind = self.objects[holder]["kind"]
        p = self.body_pos(obj)
        h = self.body_pos(holder)
        r = self.body_rot(holder)
        local = r.T @ (p - h)
        if kind == "container":
            half = CONTAINER_INNER / 2
            return abs(local[0]) <= half and abs(local[1]) <= half and 0.0 <= local[2] <= CONTAINER_HEIGHT + 0.01
        if kind == "sorter":
            half = SORTER_SIDE / 2 - 0.01
            return abs(local[0]) <= half and abs(local[1]) <= half and 0.0 <= local[2] <= SORTER_HEIGHT - SORTER_PLATE
        raise ValueError(f"{holder} is not a container")

    def stacked(self, top: str, bottom: str) -> bool:
        """Both objects in the success volume at the bottom one's start position."""
        start = self.start_positions[bottom]
        pb, pt = self.body_pos(bottom), self.body_pos(top)
        hb = SHAPE_HALF_HEIGHT[self.objects[bottom]["shape"]] * self.objects[bottom]["scale"]
        ht = SHAPE_HALF_HEIGHT[self.objects[top]["shape"]] * self.objects[top]["scale"]
        bottom_ok = np.linalg.norm(pb[:2] - start[:2]) <= STACK_XY_TOL and abs(pb[2] - start[2]) <= STACK_Z_TOL
        top_ok = (np.linalg.norm(pt[:2] - start[:2]) <= STACK_XY_TOL
                  and abs(pt[2] - (start[2] + hb + ht)) <= STACK_Z_TOL)
        return bool(bottom_ok and top_ok)

    def visible_surface_centroids(self, names) -> dict[str, np.ndarray]:
        """Per object: the mean of its surface points seen by :data:`VISIBILITY_CAMERAS`, averaged
        over the cameras that see it; objects no camera sees are left out. The original's rule
        (EmbodiedBench b247936 ``envs/eb_manipulation/eb_man_utils.py:294-335``: mask pixels'
        point-cloud mean per camera, averaged over cameras) with rays instead of depth masks."""
        m, d = self.model, self.data
        body_of = {m.body(n).id: n for n in names}
        geom_body = m.geom_bodyid
        n = VISIBILITY_RAYS
        groups = np.array([1, 1, 1, 0, 0, 0], dtype=np.uint8)
        per_camera: dict[str, list[np.ndarray]] = {}
        for cam_name in VISIBILITY_CAMERAS:
            cam = m.camera(cam_name).id
            pos, rot = d.cam_xpos[cam].copy(), d.cam_xmat[cam].reshape(3, 3)
            half = math.tan(math.radians(m.cam_fovy[cam]) / 2)
            u = (np.arange(n) + 0.5) / n * 2 - 1
            xs, ys = np.meshgrid(u * half, -u * half)
            dirs = np.stack([xs, ys, -np.ones_like(xs)], axis=-1).reshape(-1, 3) @ rot.T
            dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
            geomid = np.full(len(dirs), -1, dtype=np.int32)
            dist = np.full(len(dirs), -1.0)
            mujoco.mj_multiRay(m, d, pos, dirs.reshape(-1), groups, 1, -1, geomid, dist, len(dirs), 10.0)
            hit = geomid >= 0
            bodies = geom_body[geomid[hit]]
            points = pos + dirs[hit] * dist[hit, None]
            for bid, name in body_of.items():
                sel = bodies == bid
                if sel.any():
                    per_camera.setdefault(name, []).append(points[sel].mean(axis=0))
        return {name: np.mean(per_camera[name], axis=0) for name in names if name in per_camera}

    def spots_left(self) -> int:
        return int(self.spot_alive.sum())


def _axis_angle_matrix(rel: np.ndarray, s: float) -> np.ndarray:
    """``rel`` raised to the power ``s`` (geodesic interpolation of a rotation)."""
    angle = math.acos(max(-1.0, min(1.0, (np.trace(rel) - 1) / 2)))
    if angle < 1e-6:
        return np.eye(3)
    if abs(angle - math.pi) < 1e-4:
        w, v = np.linalg.eigh((rel + rel.T) / 2 + np.eye(3))  # axis: eigenvector of eigenvalue 1
        axis = v[:, -1]
    else:
        axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / (2 * math.sin(angle))
    a = angle * s
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(a) * k + (1 - math.cos(a)) * (k @ k)


def top_down_rotation(finger_yaw: float) -> np.ndarray:
    """The *action's* rotation (the original's tip frame) pointing straight down with the fingers
    closing along world yaw ``finger_yaw`` (radians): the tip's y axis is the finger axis
    (:data:`TIP_TO_SITE`), so this is extrinsic xyz Euler (180 deg, 0, finger_yaw + 90 deg)."""
    return euler_xyz_to_matrix(math.pi, 0.0, finger_yaw + math.pi / 2)
