"""Observations drawn from the state: a text description and a schematic image.

The image is not photo-realistic: it shows the receptacle the agent faces (a
door panel when closed), its visible contents as labelled, type-coloured
tiles, state marks (on / heated / cooled / cleaned) and the held object.
Deterministic, and cheap enough to render every step.
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from envs.household.world import World

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
