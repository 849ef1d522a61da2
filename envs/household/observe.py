"""Observations drawn from the state: a text description and two schematic images.

- :func:`render_frame` (a suite's default image) draws only what an AI2-THOR frame
  would show, with no text at all: from a start pose, the static receptacles inside
  the camera's field of view (positions from the floor plan's layout ids); facing a
  receptacle, that receptacle with its door drawn open or closed, what can be seen
  in it as type-coloured tiles (nested contents as smaller tiles), a light drawn
  when it is on, and the held object drawn in the lower right of the view (nothing
  when the hands are empty). No names, no state words, no heated/cooled/cleaned
  marks (a frame does not show ALFRED's bookkeeping).
- :func:`render` (``annotated``) is the older schematic for text-reading planners: the
  same view with labels, state words ("Fridge (open)"), state marks and a holding panel.

Deterministic, and cheap enough to render every step.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from envs.household.world import World

#: The two images a suite can show: ``frame`` (:func:`render_frame`) or ``annotated`` (:func:`render`).
IMAGE_MODES = ("frame", "annotated")

#: Horizontal = vertical field of view of the agent's camera, degrees (iTHOR's default
#: agent camera; neither ALFRED nor EmbodiedBench sets ``fieldOfView``). Checked on the
#: layouts: 1722 of the 1755 receptacles project inside a 90 degree view from the pose
#: their ``-openable.json`` entry gives (tests/envs/household/test_household_observe.py).
FIELD_OF_VIEW_DEG = 90.0
#: Camera height above the floor, metres: the agent's ``y`` in ALFRED's ``init_action``
#: teleports (0.9) plus the agent camera's offset (0.675, envs/thor/engine.py ``goto``).
CAMERA_HEIGHT_M = 0.9 + 0.675
#: Nominal half-extent of a drawn receptacle, metres (a tile is this size at 1 m depth: half the view).
RECEPTACLE_HALF_M = 0.35
_LARGE = frozenset({"CounterTop", "DiningTable", "Bed", "Sofa", "Dresser", "Fridge", "Bathtub",
                    "BathtubBasin", "Desk", "Shelf", "TVStand", "CoffeeTable", "SideTable", "ArmChair"})

_ROOM_BACKGROUND = {  # by floor-plan hundreds: kitchen, living room, bedroom, bathroom
    0: (228, 220, 200), 2: (214, 226, 214), 3: (222, 214, 232), 4: (210, 224, 236),
}


def _visible_contents(world: World, recep_id: str) -> list[str]:
    """Objects directly in ``recep_id`` when it is open (or not openable)."""
    r = world.objects[recep_id]
    if r.openable and not r.is_open:
        return []
    return [k for k in world.contents(recep_id) if not world.objects[k].inactive]


def _state_words(world: World, obj_id: str) -> str:
    o = world.objects[obj_id]
    words = []
    if o.openable:
        words.append("open" if o.is_open else "closed")
    if o.toggleable:
        words.append("on" if o.is_on else "off")
    words += [w for w in ("cleaned", "heated", "cooled") if getattr(o, w)]
    return f" ({', '.join(words)})" if words else ""


def _list(world: World, recep_id: str) -> str:
    items = []
    for k in _visible_contents(world, recep_id):
        inner = _list(world, k) if world.objects[k].receptacle else ""
        items.append(f"{k}{_state_words(world, k)}" + (f" [containing {inner}]" if inner else ""))
    return ", ".join(items)


def describe(world: World) -> str:
    """What the agent faces (receptacle, open/closed, visible contents) and holds."""
    lines = []
    at = world.at
    if at is None or at not in world.objects:
        lines.append("You are not facing anything in particular.")
    else:
        lines.append(f"You are facing {at}{_state_words(world, at)}.")
        root = world.root(at)
        if root != at:
            lines.append(f"It is in {root}{_state_words(world, root)}.")
        focus = root
        if world.objects[focus].receptacle:
            contents = _list(world, focus)
            if world.objects[focus].openable and not world.objects[focus].is_open:
                lines.append(f"{focus} is closed; you cannot see inside.")
            else:
                lines.append(f"In {focus}: {contents}." if contents else f"{focus} is empty.")
    if world.holding is None:
        lines.append("You are holding nothing.")
    else:
        inner = _list(world, world.holding) if world.objects[world.holding].receptacle else ""
        lines.append(f"You are holding {world.holding}{_state_words(world, world.holding)}"
                     + (f" [containing {inner}]" if inner else "") + ".")
    return " ".join(lines)


def _colour(obj_type: str) -> tuple[int, int, int]:
    h = zlib.crc32(obj_type.encode())
    return (60 + h % 160, 60 + (h >> 8) % 160, 60 + (h >> 16) % 160)


@lru_cache(maxsize=8)
def _font(px: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's bundled font at ``px`` pixels (a readable label at any render size)."""
    return ImageFont.load_default(size=px)


#: Maps an engine id to the label drawn for it (default: the id itself).
Namer = Callable[[str], str]


def render(world: World, size: int = 224, name: Namer | None = None) -> np.ndarray:
    """A ``(size, size, 3)`` uint8 image of what the agent faces and holds.

    ``name`` gives each object's label: a suite passes the names of its action
    language (EB-ALFRED: ``Cabinet_2``, ``Sink``), so the image never shows an
    engine id a planner cannot use.
    """
    name = name or (lambda k: k)
    bg = _ROOM_BACKGROUND.get(world.floor_plan // 100, (220, 220, 220))
    img = Image.new("RGB", (size, size), bg)
    draw = ImageDraw.Draw(img)
    font = _font(max(10, size // 28))
    pad = max(2, size // 28)
    hand_h = size // 5
    at = world.at
    if at is not None and at in world.objects:
        root = world.root(at)
        r = world.objects[root]
        box = (pad, pad + max(12, size // 24), size - pad, size - hand_h - pad)
        draw.rectangle(box, fill=_colour(r.type), outline=(30, 30, 30), width=2)
        draw.text((pad + 2, pad), f"{name(root)}{_state_words(world, root)}", fill=(0, 0, 0), font=font)
        if r.openable and not r.is_open:
            x0, y0, x1, y1 = box
            draw.rectangle((x0 + 6, y0 + 6, x1 - 6, y1 - 6), fill=(120, 90, 60), outline=(40, 30, 20))
            draw.ellipse((x1 - 20, (y0 + y1) // 2 - 4, x1 - 12, (y0 + y1) // 2 + 4), fill=(230, 210, 120))
        else:
            if r.toggleable and r.is_on:
                draw.ellipse((box[2] - 18, box[1] + 4, box[2] - 6, box[1] + 16), fill=(255, 230, 40))
            _draw_tiles(world, draw, font, _visible_contents(world, root), box, at, name)
    else:
        draw.text((pad, size // 3), "(facing nothing)", fill=(60, 60, 60), font=font)
    # Held object, bottom strip.
    y0 = size - hand_h
    draw.rectangle((0, y0, size - 1, size - 1), fill=(245, 245, 245), outline=(90, 90, 90))
    if world.holding is not None:
        h = world.objects[world.holding]
        draw.rectangle((pad, y0 + pad, pad + hand_h - 2 * pad, size - pad), fill=_colour(h.type), outline=(0, 0, 0))
        draw.text((hand_h + pad, y0 + pad), f"holding {name(world.holding)}{_state_words(world, world.holding)}",
                  fill=(0, 0, 0), font=font)
    else:
        draw.text((pad, y0 + pad), "hands empty", fill=(90, 90, 90), font=font)
    return np.asarray(img, dtype=np.uint8)


@dataclass(frozen=True)
class Pose:
    """An agent pose as ALFRED's ``init_action`` and the layouts give it: position
    (x, z, metres), rotation (degrees about y: 0 faces +z, 90 faces +x) and camera
    horizon (degrees, positive looks down)."""

    x: float
    z: float
    rotation: float
    horizon: float

    @classmethod
    def of(cls, values: Sequence[float]) -> "Pose":
        """From ``[x, z, rotation, horizon]`` (a layout entry, or :attr:`SceneFacts.start_pose`)."""
        return cls(float(values[0]), float(values[1]), float(values[2]), float(values[3]))


def layout_poses(floor_plan: int) -> dict[str, Pose]:
    """Static receptacle AI2-THOR id -> the agent pose facing it (``FloorPlan<N>-openable.json``)."""
    return {k: Pose.of(v) for k, v in _layout_entries(floor_plan)}


@lru_cache(maxsize=128)
def _layout_entries(floor_plan: int) -> tuple[tuple[str, tuple[float, ...]], ...]:
    from envs.household.constants import alfred_constants

    path = alfred_constants().layouts_dir / f"FloorPlan{floor_plan}-openable.json"
    with open(path, encoding="utf-8") as fh:
        return tuple(sorted((str(k), tuple(float(x) for x in v)) for k, v in json.load(fh).items()))


def project(point: tuple[float, float, float], pose: Pose,
            fov_deg: float = FIELD_OF_VIEW_DEG, camera_y: float = CAMERA_HEIGHT_M) -> tuple[float, float, float] | None:
    """``point`` (x, y, z) in normalised view coordinates (u right, v up, each in [-1, 1]
    inside the view) and its depth, or None when it lies behind the camera."""
    rot, hor = math.radians(pose.rotation), math.radians(pose.horizon)
    dx, dy, dz = point[0] - pose.x, point[1] - camera_y, point[2] - pose.z
    right = dx * math.cos(rot) - dz * math.sin(rot)
    ahead = dx * math.sin(rot) + dz * math.cos(rot)
    depth = ahead * math.cos(hor) - dy * math.sin(hor)
    up = dy * math.cos(hor) + ahead * math.sin(hor)
    if depth <= 0.05:
        return None
    t = math.tan(math.radians(fov_deg) / 2)
    return right / depth / t, up / depth / t, depth


def _thor_position(thor_id: str | None) -> tuple[float, float, float] | None:
    parts = (thor_id or "").split("|")
    if len(parts) < 4:
        return None
    try:
        return float(parts[1]), float(parts[2]), float(parts[3])
    except ValueError:
        return None


def receptacles_in_view(world: World, pose: Pose) -> list[tuple[str, float, float, float]]:
    """Static receptacles whose layout position projects inside the view from ``pose``:
    ``(engine id, u, v, depth)``, farthest first (the drawing order). Receptacles the
    layouts give no position (a bare ``StoveBurner`` id) are never drawn."""
    out = []
    for k, o in world.objects.items():
        pos = _thor_position(o.thor_id) if o.receptacle and o.parent is None else None
        if pos is None:
            continue
        q = project(pos, pose)
        if q is not None and abs(q[0]) <= 1 and abs(q[1]) <= 1:
            out.append((k, *q))
    return sorted(out, key=lambda t: (-t[3], t[0]))


def start_view(world: World, start_pose: Sequence[float] | None) -> Pose | None:
    """The pose the first frame is seen from: the trajectory's start pose, else the layout
    pose facing the receptacle the agent starts at, else the first layout pose (id order)."""
    if start_pose is not None:
        return Pose.of(start_pose)
    poses = layout_poses(world.floor_plan)
    at = world.objects.get(world.at) if world.at is not None else None
    if at is not None and at.thor_id in poses:
        return poses[at.thor_id]
    return next(iter(poses.values()), None)


def _draw_door(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], is_open: bool) -> None:
    """A closed door covers the front (with a knob); an open one is drawn swung out to the left."""
    x0, y0, x1, y1 = box
    inset = max(2, (x1 - x0) // 30)
    if not is_open:
        draw.rectangle((x0 + inset, y0 + inset, x1 - inset, y1 - inset), fill=(120, 90, 60), outline=(40, 30, 20))
        r = max(2, (x1 - x0) // 40)
        cy = (y0 + y1) // 2
        draw.ellipse((x1 - inset - 4 * r, cy - r, x1 - inset - 2 * r, cy + r), fill=(230, 210, 120))
    else:
        w = max(3, (x1 - x0) // 5)
        skew = max(2, (y1 - y0) // 8)
        draw.polygon([(x0, y0), (x0 - w, y0 - skew), (x0 - w, y1 + skew), (x0, y1)],
                     fill=(120, 90, 60), outline=(40, 30, 20))


def _draw_items(world: World, draw: ImageDraw.ImageDraw, items: list[str], box: tuple[int, int, int, int],
                depth: int = 0) -> None:
    """Objects as a grid of type-coloured tiles (no labels); a receptacle's own contents as smaller tiles."""
    if not items:
        return
    x0, y0, x1, y1 = box
    cols = max(1, min(4, len(items)))
    rows = (len(items) + cols - 1) // cols
    w = max(2, (x1 - x0 - 4) // cols)
    h = max(2, (y1 - y0 - 4) // max(rows, 1))
    for i, k in enumerate(items):
        cx, cy = x0 + 2 + (i % cols) * w, y0 + 2 + (i // cols) * h
        o = world.objects[k]
        tile = (cx + 2, cy + 2, cx + w - 2, cy + h - 2)
        if tile[2] <= tile[0] or tile[3] <= tile[1]:
            continue
        draw.rectangle(tile, fill=_colour(o.type), outline=(20, 20, 20))
        if o.receptacle and depth < 2:
            inner = [c for c in world.contents(k) if not world.objects[c].inactive]
            ix0, iy0, ix1, iy1 = tile
            _draw_items(world, draw, inner, (ix0 + (ix1 - ix0) // 4, iy0 + (iy1 - iy0) // 3, ix1 - 2, iy1 - 2),
                        depth + 1)


def _draw_receptacle(world: World, draw: ImageDraw.ImageDraw, recep_id: str, box: tuple[int, int, int, int]) -> None:
    r = world.objects[recep_id]
    draw.rectangle(box, fill=_colour(r.type), outline=(30, 30, 30), width=2)
    if r.toggleable and r.is_on:
        d = max(4, (box[2] - box[0]) // 25)
        draw.ellipse((box[2] - 3 * d, box[1] + d, box[2] - d, box[1] + 3 * d), fill=(255, 230, 40))
    if r.openable:
        _draw_door(draw, box, r.is_open)
        if not r.is_open:
            return
    _draw_items(world, draw, _visible_contents(world, recep_id), box)


def render_frame(world: World, size: int = 224, pose: Pose | None = None) -> np.ndarray:
    """A ``(size, size, 3)`` uint8 image holding only what a camera frame would show (no text).

    With ``pose``: the room from that pose (:func:`receptacles_in_view`, nearer drawn over
    farther). Without: the receptacle the agent faces, filling the view. The held object
    is drawn in the lower right; nothing marks empty hands.
    """
    bg = _ROOM_BACKGROUND.get(world.floor_plan // 100, (220, 220, 220))
    img = Image.new("RGB", (size, size), bg)
    draw = ImageDraw.Draw(img)
    pad = max(2, size // 28)
    if pose is not None:
        horizon_px = int(size / 2 - math.tan(math.radians(pose.horizon)) / math.tan(math.radians(FIELD_OF_VIEW_DEG) / 2)
                         * size / 2)
        if horizon_px < size:
            floor = tuple(max(0, c - 40) for c in bg)
            draw.rectangle((0, max(0, horizon_px), size - 1, size - 1), fill=floor)
        f = size / 2 / math.tan(math.radians(FIELD_OF_VIEW_DEG) / 2)
        for k, u, v, d in receptacles_in_view(world, pose):
            half = (RECEPTACLE_HALF_M * (1.6 if world.objects[k].type in _LARGE else 1.0)) * f / d
            cx, cy = size / 2 * (1 + u), size / 2 * (1 - v)
            box = (int(cx - half), int(cy - half * 0.8), int(cx + half), int(cy + half * 0.8))
            if box[2] - box[0] >= 2 and box[3] - box[1] >= 2:
                _draw_receptacle(world, draw, k, box)
    elif world.at is not None and world.at in world.objects:
        root = world.root(world.at)
        _draw_receptacle(world, draw, root, (size // 8, pad, size - pad, size - pad - size // 10))
    if world.holding is not None:
        h = world.objects[world.holding]
        s = size // 5
        held = (size - pad - s, size - pad - s, size - pad, size - pad)
        draw.rounded_rectangle(held, radius=max(2, s // 6), fill=_colour(h.type), outline=(0, 0, 0), width=2)
        if h.receptacle:
            inner = [c for c in world.contents(world.holding) if not world.objects[c].inactive]
            _draw_items(world, draw, inner, (held[0] + s // 5, held[1] + s // 5, held[2] - s // 5, held[3] - s // 5), 1)
    return np.asarray(img, dtype=np.uint8)


def _draw_tiles(world: World, draw: ImageDraw.ImageDraw, font: ImageFont.ImageFont,
                items: list[str], box: tuple[int, int, int, int], focus: str, name: Namer) -> None:
    """Contents as a grid of coloured, labelled tiles; the faced one outlined in red."""
    if not items:
        return
    x0, y0, x1, y1 = box
    cols = max(1, min(4, len(items)))
    rows = (len(items) + cols - 1) // cols
    w = (x1 - x0 - 4) // cols
    h = max(8, (y1 - y0 - 4) // max(rows, 1))
    for i, k in enumerate(items):
        cx, cy = x0 + 2 + (i % cols) * w, y0 + 2 + (i // cols) * h
        o = world.objects[k]
        outline = (220, 20, 20) if k == focus else (20, 20, 20)
        draw.rectangle((cx + 2, cy + 2, cx + w - 2, cy + h - 2), fill=_colour(o.type), outline=outline, width=2)
        label = name(k)
        while len(label) > 3 and font.getlength(label) > w - 8:
            label = label[:-1]  # cut to the tile; a full name always fits a 500 px render
        draw.text((cx + 4, cy + 3), label, fill=(0, 0, 0), font=font)
        marks = [(o.heated, (230, 60, 30)), (o.cooled, (60, 120, 230)), (o.cleaned, (240, 240, 255))]
        for j, (flag, colour) in enumerate(marks):
            if flag:
                draw.rectangle((cx + 4 + 8 * j, cy + h - 10, cx + 10 + 8 * j, cy + h - 4), fill=colour)
        inner = world.contents(k) if o.receptacle else []
        if inner:
            draw.text((cx + 4, cy + h // 2), f"+{len(inner)}", fill=(0, 0, 0), font=font)
