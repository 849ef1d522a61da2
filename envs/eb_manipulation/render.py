"""Camera images of the twin: the front view (with the original's numbered object markers and
axis overlay, switchable) and the wrist view.

The overlay follows the original's layout (EmbodiedBench b247936
``envs/eb_manipulation/eb_man_utils.py:51-91`` ``draw_xyz_coordinate``): red boxes numbered like
the coordinate dictionary around each object, and the origin of the coordinate grid marked with
a filled red dot labelled "(0, 0)" from which three 30-px (at 500 px) arrows leave: y green,
z blue, x red. The original pins the origin at a hand-tuned pixel ((62, 239) at 500 px, "adjust
based on the table's position"); the twin projects the grid's origin (bins X = 0, Y = 0 on the
table top) into its own camera, which lands at the same place of the table. Boxes come from
projecting each object's centre and size (ground truth), not from a detector, so they are never
missing or misnumbered.

Each box is sized to its object as the original's detector box is
(``eb_man_utils.py:204-237``: the detected box around the object, widened 1.2 times about its
centre, drawn 1 px wide, its number 20 px right of and 10 px above the box's top-left corner):
the twin takes the pixel extent of the object's visible surface in a segmentation render of the
same camera (the box a perfect detector would give). An object the front camera does not see gets
no box, and keeps its number in the dictionary.
"""

from __future__ import annotations

import math
from typing import Sequence

import mujoco
import numpy as np

from envs.eb_manipulation import sim as S

#: Axis arrow length as a fraction of the image side (the original: 30 px at 500 px).
AXIS_LEN_FRAC = 30 / 500
#: The origin dot's radius (px at 500) and the "(0, 0)" label's offset below it (the original's 3 and 16).
ORIGIN_DOT_PX, ORIGIN_LABEL_DY_PX = 3, 16
#: The original widens each detected box 1.2 times about its centre (``increase_bbox(..., 1.2)``).
BOX_SCALE = 1.2
#: The number's offset from the box's top-left corner (px at 500), the original's (+20, -10).
LABEL_DX_PX, LABEL_DY_PX = 20, -10


class SceneRenderer:
    def __init__(self, model: "mujoco.MjModel", size: int) -> None:
        self.size = size
        self.model = model
        self._r = mujoco.Renderer(model, size, size)
        self._cam = model.camera("front").id
        self._opt = mujoco.MjvOption()
        self._opt.sitegroup[:] = 0  # robosuite's marker sites (grip-site cylinder) are not drawn
        self._opt.geomgroup[S.DIRT_GEOM_GROUP] = 0  # the dirt spots are invisible (renderable=False)

    def close(self) -> None:
        self._r.close()

    def _project(self, data, pts: np.ndarray) -> np.ndarray:
        m = self.model
        c = data.cam_xpos[self._cam]
        R = data.cam_xmat[self._cam].reshape(3, 3)
        v = (pts - c) @ R
        f = self.size / 2 / math.tan(math.radians(m.cam_fovy[self._cam]) / 2)
        u = f * v[:, 0] / -v[:, 2] + self.size / 2
        w = self.size / 2 - f * v[:, 1] / -v[:, 2]
        return np.stack([u, w], axis=1)

    def boxes(self, world: S.PandaTable, names: Sequence[str]) -> list[tuple[float, float, float, float] | None]:
        """Per object (in ``names`` order): its box (u0, v0, u1, v1) in pixels, the extent of its
        visible pixels widened :data:`BOX_SCALE` times about the centre, or None when unseen."""
        if not names:
            return []
        self._r.update_scene(world.data, camera=self._cam, scene_option=self._opt)
        self._r.enable_segmentation_rendering()
        try:
            seg = self._r.render()
        finally:
            self._r.disable_segmentation_rendering()
        m = self.model
        geom_body = np.where(seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM), m.geom_bodyid[np.clip(seg[..., 0], 0, m.ngeom - 1)], -1)
        out: list[tuple[float, float, float, float] | None] = []
        for name in names:
            vs, us = np.nonzero(geom_body == m.body(name).id)
            if not len(us):
                out.append(None)
                continue
            cu, cv = (us.min() + us.max() + 1) / 2, (vs.min() + vs.max() + 1) / 2
            hu, hv = (us.max() + 1 - us.min()) / 2 * BOX_SCALE, (vs.max() + 1 - vs.min()) / 2 * BOX_SCALE
            out.append((cu - hu, cv - hv, cu + hu, cv + hv))
        return out

    def front(self, world: S.PandaTable, names: Sequence[str] | None, annotate: bool = True) -> np.ndarray:
        self._r.update_scene(world.data, camera=self._cam, scene_option=self._opt)
        img = self._r.render().copy()
        if not annotate:
            return img
        from PIL import Image, ImageDraw

        im = Image.fromarray(img)
        draw = ImageDraw.Draw(im)
        k = self.size / 500
        for i, box in enumerate(self.boxes(world, names or [])):
            if box is None:
                continue
            u0, v0, u1, v1 = box
            draw.rectangle([u0, v0, u1, v1], outline=(255, 0, 0), width=1)
            draw.text((u0 + LABEL_DX_PX * k, v0 + LABEL_DY_PX * k - 4), str(i + 1), fill=(255, 0, 0))
        # the grid's origin (bins X = 0, Y = 0 on the table) with the three axis arrows
        o = np.array([S.SCENE_X_MIN, S.SCENE_Y_MIN, S.TABLE_Z])
        uv = self._project(world.data, np.array([o, o + [0.1, 0, 0], o + [0, 0.1, 0], o + [0, 0, 0.1]]))
        base = uv[0]
        k = self.size / 500
        for i, (color, label) in enumerate((((255, 0, 0), "x"), ((0, 200, 0), "y"), ((0, 0, 255), "z"))):
            d = uv[i + 1] - base
            d = d / (np.linalg.norm(d) + 1e-9) * AXIS_LEN_FRAC * self.size
            end = base + d
            draw.line([tuple(base), tuple(end)], fill=color, width=2)
            draw.text(tuple(end + 2), label, fill=color)
        r = ORIGIN_DOT_PX * k
        draw.ellipse([base[0] - r, base[1] - r, base[0] + r, base[1] + r], fill=(255, 0, 0))
        draw.text((base[0], base[1] + ORIGIN_LABEL_DY_PX * k - 8), "(0, 0)", fill=(255, 0, 0))
        return np.asarray(im)

    def wrist(self, world: S.PandaTable) -> np.ndarray:
        self._r.update_scene(world.data, camera=self.model.camera("robot0_eye_in_hand").id, scene_option=self._opt)
        return self._r.render().copy()
