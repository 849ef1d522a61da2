"""The seeded episode generator and the fixed, versioned evaluation set.

Sizes are EmbodiedBench's (the dataset its README names): base, common_sense and
complex have the four base families x 12 episodes, spatial the four ``*_relative`` families
x 12, visual pick / stack / place x 12 (no wipe): 228 episodes. common_sense, complex and
visual reuse base's scenes exactly; only the instruction differs (96 distinct scenes).

Every episode's scene is generated from ``(generator seed, family, index)`` alone and stored
in full in the episode's metadata (JSON), so an episode is reproducible from its spec and the
eval set's digest (in the suite's protocol) changes whenever any scene or instruction does.
Instructions are the twin's own wording in each subset's style.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
from typing import Any, Sequence

from envs.eb_manipulation import sim as S
from harness.types import EpisodeSpec

SUITE_NAME = "eb_manipulation"
#: Bumped whenever any generated scene or instruction of the fixed set changes.
EVAL_SET_VERSION = "3"  # 3: the spawn region widened to the original's example scenes' extent
# 2: object counts, stack shapes, wipe areas and dirt as the original
GENERATOR_SEED = 0

BASE_FAMILIES = ("pick_cube_shape", "stack_cubes_color", "place_into_shape_sorter_color", "wipe_table_direction")
RELATIVE_FAMILIES = ("pick_cube_relative", "stack_cubes_relative", "place_into_shape_sorter_relative",
                     "wipe_table_relative")
#: EmbodiedBench's task classes (``task_variation.split('_')[0]``): our ``task_type``.
FAMILY_CLASS = {f: f.split("_")[0] for f in BASE_FAMILIES + RELATIVE_FAMILIES}
SUBSETS = ("base", "common_sense", "complex", "spatial", "visual")
EPISODES_PER_FAMILY = 12
SUBSET_FAMILIES = {
    "base": BASE_FAMILIES, "common_sense": BASE_FAMILIES, "complex": BASE_FAMILIES,
    "spatial": RELATIVE_FAMILIES, "visual": BASE_FAMILIES[:3],
}

# Variation lists (EmbodiedBench task files): pick uses target shapes v0-3, stack the bottom
# colour among the first four colours, place the target colour among the first five, wipe
# the direction; relative tasks the direction words.
PICK_SHAPES = ("star", "triangular", "cylinder", "cube")
STACK_COLORS = ("red", "maroon", "lime", "green")
PLACE_COLORS = ("red", "maroon", "lime", "green", "blue")
PLACE_SHAPES = ("star", "triangular", "cylinder", "cube")
#: Shapes a stack episode draws from: the original's five less the crescent (moon), which the
#: opening fingers drag off another crescent in the twin's physics (a documented difference).
STACK_SHAPES = ("star", "triangular", "cylinder", "cube")
DIRECTIONS = ("horizontal", "vertical")
#: The wipe-area shapes modelled (the original's seen planes less the triangle).
AREA_SHAPES = ("rectangle", "round", "star")
RELATIONS = ("left", "right", "front", "rear")

#: Spawn region of object centres (m): the extent of the objects in EmbodiedBench's own example
#: scenes (evaluator/config/eb_manipulation_example.py: X bins 27-84, Y bins 11-86; the original
#: samples its scenes over its table's ``workspace`` shape, vlm/tasks/wipe_table.py:24, :134-141),
#: cut to the ring around the robot's base that the twin's Panda reaches pointing down
#: (SPAWN_REACH; the original likewise redraws a scene its planner finds no path in,
#: vlm/tasks/wipe_table.py:49-80).
SPAWN_X = (-0.03, 0.55)
SPAWN_Y = (-0.39, 0.39)
#: Distance of an object's centre from the robot's base axis (m): the IK reaches every top-down
#: yaw from 1.5 to 16 cm above the table between 0.28 and 0.80 m (the near end with some wrist
#: turns only below 0.28 m); the far bound leaves room for grasp offsets and approach poses.
SPAWN_REACH = (0.26, 0.76)


def relation(a_xy: Sequence[float], b_xy: Sequence[float]) -> str:
    """Where ``a`` lies relative to ``b`` in the robot's frame (it faces +x; +y is its left):
    the dominant axis of the offset decides (the original's quadrant rule)."""
    dx, dy = a_xy[0] - b_xy[0], a_xy[1] - b_xy[1]
    if abs(dx) >= abs(dy):
        return "front" if dx > 0 else "rear"
    return "left" if dy > 0 else "right"


def _extreme(direction: str, xy: Sequence[float]) -> float:
    """Larger = further in ``direction`` (robot frame)."""
    return {"front": xy[0], "rear": -xy[0], "left": xy[1], "right": -xy[1]}[direction]


def reachable(x: float, y: float) -> bool:
    """Is a point of the table within the ring :data:`SPAWN_REACH` around the robot's base?"""
    return SPAWN_REACH[0] <= math.hypot(x - S.ROBOT_BASE[0], y - S.ROBOT_BASE[1]) <= SPAWN_REACH[1]


class _NoRoom(Exception):
    """The sampled objects so far leave no room for the next one: resample the scene."""


class _Placer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.placed: list[tuple[float, float, float]] = []

    def place(self, radius: float, x=SPAWN_X, y=SPAWN_Y, gap: float = 0.02) -> tuple[float, float]:
        for _ in range(2000):
            px, py = self.rng.uniform(x[0] + radius * 0.3, x[1] - radius * 0.3), self.rng.uniform(y[0] + radius * 0.3, y[1] - radius * 0.3)
            if not reachable(px, py):
                continue
            if all(math.hypot(px - qx, py - qy) >= radius + qr + gap for qx, qy, qr in self.placed):
                self.placed.append((px, py, radius))
                return round(px, 4), round(py, 4)
        raise _NoRoom()

    def block_segment(self, cx: float, cy: float, yaw: float, length: float, width: float) -> None:
        """Reserve the footprint of a wipe area as a chain of discs."""
        n = 5
        for k in range(n):
            t = (k / (n - 1) - 0.5) * length
            self.placed.append((cx + t * math.cos(yaw), cy + t * math.sin(yaw), width / 2 + 0.02))


def _rng(family: str, index: int, seed: int) -> random.Random:
    return random.Random(f"eb_manipulation|v{EVAL_SET_VERSION}|{seed}|{family}|{index}")


def _shape(name, shape, color, xy, rng, scale=(0.9, 1.1)) -> dict[str, Any]:
    return {"name": name, "kind": "shape", "shape": shape, "color": color, "pos": list(xy),
            "yaw": round(rng.uniform(-math.pi / 4, math.pi / 4), 4), "scale": round(rng.uniform(*scale), 4)}


def _colors(rng: random.Random, k: int, exclude: Sequence[str] = ()) -> list[str]:
    return rng.sample([c for c in S.COLORS if c not in exclude], k)


# --- scenes -------------------------------------------------------------------------------
def _scene_pick(index: int, rng: random.Random, relative: bool) -> dict[str, Any]:
    placer = _Placer(rng)
    c_colors = _colors(rng, 2)
    containers = []
    for k in range(2):
        xy = placer.place(S.CONTAINER_INNER / 2 + S.CONTAINER_WALL + 0.02)
        containers.append({"name": f"container{k}", "kind": "container", "color": c_colors[k], "pos": list(xy),
                           "yaw": round(rng.uniform(-0.3, 0.3), 4)})
    if not relative:
        target_shape = PICK_SHAPES[index % len(PICK_SHAPES)]
        others = [s for s in S.SHAPES if s != target_shape]
        shapes = [target_shape] + rng.sample(others, rng.randint(1, len(others)))
    else:
        # vlm/tasks/pick_cube.py:77-88 (model_num = 2): each object's shape drawn on its own
        shapes = [rng.choice(S.SHAPES) for _ in range(2)]
    objects = []
    for k, sh in enumerate(shapes):
        xy = placer.place(S.SHAPE_RADIUS[sh] * 1.1)
        objects.append(_shape(f"object{k}", sh, rng.choice(list(S.COLORS)), xy, rng))
    target = {"object": "object0", "container": rng.choice(["container0", "container1"])}
    scene = {"objects": containers + objects, "target": target}
    if relative:
        rel_obj, rel_cont = RELATIONS[index % 4], RELATIONS[(index // 4) % 4]
        target["object_relation"] = relation(objects[0]["pos"], objects[1]["pos"])
        other = "container1" if target["container"] == "container0" else "container0"
        tc = next(c for c in containers if c["name"] == target["container"])
        oc = next(c for c in containers if c["name"] == other)
        target["container_relation"] = relation(tc["pos"], oc["pos"])
        if (target["object_relation"], target["container_relation"]) != (rel_obj, rel_cont):
            return {}
    return scene


def _scene_stack(index: int, rng: random.Random, relative: bool) -> dict[str, Any]:
    """vlm/tasks/stack_cubes.py:26-29, :86-117: four copies of one shape drawn from the five
    (``class_num = 1``, ``model_num = 4``); the bottom is copy 0, the top copy 1 (:49-53). The
    relative family (stack_cubes_relative.py:19-33, :43-63): two copies each of two shapes, the
    bottom described against its twin, the top against its own. The twin draws from
    :data:`STACK_SHAPES` (no crescent: see there)."""
    placer = _Placer(rng)
    if not relative:
        shape = rng.choice(STACK_SHAPES)
        bottom_color = STACK_COLORS[index % len(STACK_COLORS)]
        colors = [bottom_color] + _colors(rng, 3, exclude=[bottom_color])  # stack_cubes_color.py:31-34
        shapes = [shape] * 4
    else:
        pair = rng.sample(list(STACK_SHAPES), 2)
        shapes = [pair[0], pair[0], pair[1], pair[1]]
        colors = [rng.choice(list(S.COLORS)) for _ in range(4)]
    objs = []
    for k in range(4):
        xy = placer.place(S.SHAPE_RADIUS[shapes[k]] * 1.15, gap=0.04)
        objs.append(_shape(f"object{k}", shapes[k], colors[k], xy, rng, scale=(0.85, 1.15)))
    target = {"bottom": "object0", "top": "object1"}
    if relative:
        # bottom = object0 (described against object1), top = object2 (against object3)
        target["top"] = "object2"
        rel_b, rel_t = RELATIONS[index % 4], RELATIONS[(index // 4) % 4]
        pos = {o["name"]: o["pos"] for o in objs}
        if relation(pos["object0"], pos["object1"]) != rel_b or relation(pos["object2"], pos["object3"]) != rel_t:
            return {}
        target["bottom_relation"], target["top_relation"] = rel_b, rel_t
    return {"objects": objs, "target": target}


def _scene_place(index: int, rng: random.Random, relative: bool) -> dict[str, Any]:
    placer = _Placer(rng)
    # room for the hand beside it; X bins 40-70 in the original's examples (its sorter's centre)
    sorter_xy = placer.place(0.19, x=(0.05, 0.42), gap=0.0)
    sorter = {"name": "sorter", "kind": "sorter", "pos": list(sorter_xy), "yaw": round(rng.uniform(-0.2, 0.2), 4)}
    shape = rng.choice(PLACE_SHAPES)
    if not relative:
        tcolor = PLACE_COLORS[index % len(PLACE_COLORS)]
        colors = [tcolor] + _colors(rng, 2, exclude=[tcolor])
    else:
        colors = [rng.choice(list(S.COLORS)) for _ in range(2)]  # _relative.py:21 (with replacement)
    # place_into_shape_sorter_color.py:12 / _relative.py:14: three (two) copies of the one
    # shape to put in, no distractors (place_into_shape_sorter.py:36-37 need_distractors = False)
    objects = []
    for k, c in enumerate(colors):
        xy = placer.place(S.SHAPE_RADIUS[shape] * 1.1)
        objects.append(_shape(f"object{k}", shape, c, xy, rng))
    target = {"object": "object0"}
    if relative:
        rel = RELATIONS[index % 4]
        if relation(objects[0]["pos"], objects[1]["pos"]) != rel:
            return {}
        target["object_relation"] = rel
    return {"objects": [sorter] + objects, "target": target}


def _area_yaw(direction: str, rng: random.Random) -> float:
    # the area's long axis: horizontal = along world y, vertical = along world x (+-22.5 deg,
    # the original's sampling ranges)
    base = math.pi / 2 if direction == "horizontal" else 0.0
    return round(base + rng.uniform(-math.pi / 8, math.pi / 8), 4)


def _wipe_spots(area: dict[str, Any], rng: random.Random) -> list[list[float]]:
    """The 50 dirt spots (vlm/tasks/wipe_table.py:161-191): on a directional (rectangle) area,
    evenly spaced along its long axis from end to end with a N(0, 5 mm) offset across it; on a
    round or star area, uniform in radius up to half the area's half-extent and in angle."""
    c, s_ = math.cos(area["yaw"]), math.sin(area["yaw"])
    spots = []
    for i in range(S.DIRT_SPOTS):
        if area["shape"] == "rectangle":
            step = S.AREA_SIZE[1] / S.DIRT_SPOTS
            u, v = -S.AREA_SIZE[1] / 2 + step * i, rng.gauss(0.0, 0.005)
        else:
            r, th = rng.uniform(0.0, S.AREA_RADIUS / 2), rng.uniform(-math.pi, math.pi)
            u, v = r * math.cos(th), r * math.sin(th)
        spots.append([round(area["pos"][0] + c * u - s_ * v, 4), round(area["pos"][1] + s_ * u + c * v, 4)])
    return spots


def _scene_wipe(index: int, rng: random.Random, relative: bool) -> dict[str, Any]:
    """wipe_table_direction: two rectangle areas, the target along the asked direction, the
    other across it (wipe_table_direction.py:49-68); wipe_table_relative: two areas of one
    shape drawn from rectangle, round and star (wipe_table.py:116-132 over amsolver/const.py
    ``seen_planes``; the triangle area is not modelled)."""
    placer = _Placer(rng)
    shape = "rectangle" if not relative else rng.choice(AREA_SHAPES)
    if not relative:
        direction = DIRECTIONS[index % 2]
        dirs = [direction, DIRECTIONS[1 - DIRECTIONS.index(direction)]]
    else:
        d = rng.choice(DIRECTIONS)
        dirs = [d, d]
    if shape == "rectangle":
        half_len, width = S.AREA_SIZE[1] / 2, S.AREA_SIZE[0]
    else:
        half_len, width = 0.0, 2 * S.AREA_RADIUS
    areas = []
    colors = [rng.choice(list(S.COLORS)) for _ in range(2)]  # wipe_table_direction.py:22 (with replacement)
    for k, d in enumerate(dirs):
        for _ in range(500):
            yaw = _area_yaw(d, rng) if shape == "rectangle" else round(rng.uniform(-math.pi, math.pi), 4)
            ex = abs(math.cos(yaw)) * half_len + width / 2 - 0.005
            ey = abs(math.sin(yaw)) * half_len + width / 2 - 0.005
            x = (SPAWN_X[0] + ex, SPAWN_X[1] - ex)
            y = (SPAWN_Y[0] + ey, SPAWN_Y[1] - ey)
            if x[0] >= x[1] or y[0] >= y[1]:
                continue
            cx, cy = rng.uniform(*x), rng.uniform(*y)
            # the sponge's path: along the area's axis, 1 cm past its ends (a round / star area:
            # through its centre across the dirt's half radius)
            reach = (half_len if shape == "rectangle" else S.AREA_RADIUS / 2) + 0.01
            if not all(reachable(cx + t * math.cos(yaw), cy + t * math.sin(yaw)) for t in (-reach, 0.0, reach)):
                continue
            ok = all(math.hypot(cx + t * math.cos(yaw) - qx, cy + t * math.sin(yaw) - qy) >= qr + width / 2 + 0.03
                     for t in (-half_len, -half_len / 2, 0, half_len / 2, half_len) for qx, qy, qr in placer.placed)
            if ok:
                placer.block_segment(cx, cy, yaw, 2 * half_len, width)
                areas.append({"name": f"area{k}", "kind": "area", "shape": shape, "color": colors[k],
                              "pos": [round(cx, 4), round(cy, 4)], "yaw": yaw})
                break
        else:
            return {}
    sponge_xy = placer.place(0.055, gap=0.02)
    sponge = {"name": "sponge", "kind": "sponge", "color": "yellow", "pos": list(sponge_xy),
              "yaw": round(rng.uniform(-math.pi / 4, math.pi / 4), 4)}
    spots = _wipe_spots(areas[0], rng)
    target = {"area": "area0", "direction": dirs[0]}
    if relative:
        rel = RELATIONS[index % 4]
        if relation(areas[0]["pos"], areas[1]["pos"]) != rel:
            return {}
        target["area_relation"] = rel
    return {"objects": areas + [sponge], "spots": spots, "target": target}


_SCENES = {"pick": _scene_pick, "stack": _scene_stack, "place": _scene_place, "wipe": _scene_wipe}


def make_scene(family: str, index: int, seed: int = GENERATOR_SEED) -> dict[str, Any]:
    """The scene of episode ``index`` of ``family`` (deterministic in its arguments)."""
    rng = _rng(family, index, seed)
    cls = FAMILY_CLASS[family]
    relative = family.endswith("_relative")
    for _ in range(5000):
        try:
            scene = _SCENES[cls](index, rng, relative)
        except _NoRoom:
            continue
        if scene:
            scene["family"] = family
            scene["task_class"] = cls
            return scene
    raise RuntimeError(f"no scene found for {family} #{index}")


# --- instructions (our wording, one style per subset) -------------------------------------------
SHAPE_WORDS = {"star": "star", "triangular": "triangular prism", "cylinder": "cylinder", "cube": "cube",
               "moon": "moon"}
SHAPE_LOOKS = {  # visual style: what the shape looks like
    "star": "the object with five pointed tips", "triangular": "the block whose ends are triangles",
    "cylinder": "the round object with a flat top", "cube": "the block with six equal square faces",
    "moon": "the curved, crescent-shaped object",
}
#: common-sense style: the shape told by what it is known from; the colour word stays as it is
#: (the original's common_sense rewrite keeps the colour)
SHAPE_HINTS = {
    "star": "the shape that twinkles in the night sky in children's drawings",
    "triangular": "the shape of a slice of a Toblerone bar",
    "cylinder": "the shape of a tin can", "cube": "the shape of a die used in board games",
    "moon": "the shape of the night-time light seen as a thin sliver",
}
COLOR_LOOKS = {c: f"{c}-coloured" for c in S.COLORS}
DIRECTION_HINTS = {"horizontal": "runs from side to side in front of the robot, like a horizon",
                   "vertical": "runs straight away from the robot, like a runway seen from the cockpit"}


def _objects(scene: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in scene["objects"]}


def instruction(scene: dict[str, Any], subset: str) -> str:
    cls, t, objs = scene["task_class"], scene["target"], _objects(scene)
    relative = scene["family"].endswith("_relative")
    if cls == "pick":
        o, c = objs[t["object"]], objs[t["container"]]
        if relative:
            return f"Pick up the {t['object_relation']} object and place it into the {t['container_relation']} container."
        shape, color = o["shape"], c["color"]
        if subset == "base":
            return f"Pick up the {SHAPE_WORDS[shape]} and place it into the {color} container."
        if subset == "common_sense":
            return f"Pick up the object that has {SHAPE_HINTS[shape]} and put it in the {color} container."
        if subset == "complex":
            return (f"I am tidying the table and the loose pieces are in the way. Please take the {SHAPE_WORDS[shape]}, "
                    f"lift it carefully, and drop it into the {color} container, leaving every other item untouched.")
        if subset == "visual":
            return f"Pick up {SHAPE_LOOKS[shape]} and place it into the {COLOR_LOOKS[color]} container."
    if cls == "stack":
        b, top = objs[t["bottom"]], objs[t["top"]]
        if relative:
            return (f"Stack the {t['top_relation']} {SHAPE_WORDS[top['shape']]} on top of the "
                    f"{t['bottom_relation']} {SHAPE_WORDS[b['shape']]}.")
        if subset == "base":
            return f"Stack the {top['color']} {SHAPE_WORDS[top['shape']]} on top of the {b['color']} {SHAPE_WORDS[b['shape']]}."
        if subset == "common_sense":
            return (f"Put the {top['color']} object that has {SHAPE_HINTS[top['shape']]} on top of the {b['color']} "
                    f"one.")
        if subset == "complex":
            return (f"We are building a small tower and the {b['color']} {SHAPE_WORDS[b['shape']]} is its foundation: "
                    f"leave that one where it is, pick up the {top['color']} {SHAPE_WORDS[top['shape']]} and set it down "
                    f"squarely on top of it.")
        if subset == "visual":
            return f"Stack the {COLOR_LOOKS[top['color']]} block on top of the {COLOR_LOOKS[b['color']]} block."
    if cls == "place":
        o = objs[t["object"]]
        if relative:
            return f"Put the {t['object_relation']} {SHAPE_WORDS[o['shape']]} into the shape sorter."
        color, shape = o["color"], o["shape"]
        if subset == "base":
            return f"Put the {color} {SHAPE_WORDS[shape]} into the shape sorter."
        if subset == "common_sense":
            return f"Drop the {color} object that has {SHAPE_HINTS[shape]} into the box with holes in its lid."
        if subset == "complex":
            return (f"Several pieces of the toy are scattered around. Of all of them, only the {color} "
                    f"{SHAPE_WORDS[shape]} should go back into the shape sorter now; please put it in through one of the holes.")
        if subset == "visual":
            return f"Put {SHAPE_LOOKS[shape].replace('the ', 'the ' + COLOR_LOOKS[color] + ' ', 1)} into the shape sorter."
    if cls == "wipe":
        if relative:
            return f"Wipe the {t['area_relation']} area."
        d = t["direction"]
        if subset == "base":
            return f"Wipe the {d} area."
        if subset == "common_sense":
            return f"Use the sponge to clean the strip of the table that {DIRECTION_HINTS[d]}."
        if subset == "complex":
            return (f"Something got spilled and two strips of the table are marked. Take the sponge and scrub "
                    f"only the {d} one clean, from one end to the other.")
    raise ValueError(f"no {subset} instruction for {scene['family']}")


def _seed_of(episode_id: str) -> int:
    return int.from_bytes(hashlib.sha256(episode_id.encode()).digest()[:4], "little")


@functools.lru_cache(maxsize=None)
def _eval_set(seed: int) -> dict[str, tuple[EpisodeSpec, ...]]:
    out: dict[str, tuple[EpisodeSpec, ...]] = {}
    scenes: dict[tuple[str, int], dict[str, Any]] = {}
    for subset in SUBSETS:
        specs = []
        for family in SUBSET_FAMILIES[subset]:
            for i in range(EPISODES_PER_FAMILY):
                key = (family, i)
                if key not in scenes:
                    scenes[key] = make_scene(family, i, seed)
                scene = scenes[key]
                eid = f"{subset}/{family}/{i:02d}"
                meta = {"subset": subset, "family": family, "task_class": scene["task_class"], "index": i,
                        "scene_id": f"{family}/{i:02d}", "scene": scene}
                specs.append(EpisodeSpec(SUITE_NAME, subset, eid, _seed_of(eid), instruction(scene, subset), meta))
        out[subset] = tuple(specs)
    return out


def episodes(subset: str, seed: int = GENERATOR_SEED) -> tuple[EpisodeSpec, ...]:
    sets = _eval_set(seed)
    if subset not in sets:
        raise KeyError(f"unknown eb_manipulation split {subset!r}; splits are {', '.join(SUBSETS)}")
    return sets[subset]


def eval_set_digest(subset: str, seed: int = GENERATOR_SEED) -> str:
    """sha256 of the subset's episodes (ids, seeds, instructions, scenes): in the run identity."""
    payload = [[e.episode_id, e.seed, e.instruction, e.metadata] for e in episodes(subset, seed)]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
