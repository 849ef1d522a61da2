"""Camera images of the twin: the front view (with the original's numbered object markers and
axis overlay, switchable) and the wrist view.

The overlay follows the original's layout (``eb_man_utils.py``): red boxes numbered like the
coordinate dictionary around each object, and an XYZ axis glyph at a fixed pixel (x red,
y green, z blue). Boxes come from projecting each object's centre and size (ground truth),
not from a detector, so they are never missing or misnumbered.
"""

from __future__ import annotations

import math
from typing import Sequence

import mujoco
import numpy as np

from envs.eb_manipulation import sim as S

AXIS_ORIGIN_PX = (0.12, 0.88)  # fraction of (width, height)
AXIS_LEN_M = 0.12
BOX_HALF_M = 0.045


class SceneRenderer:
    def __init__(self, model: "mujoco.MjModel", size: int) -> None:
        self.size = size
        self.model = model
        self._r = mujoco.Renderer(model, size, size)
        self._cam = model.camera("front").id
        self._opt = mujoco.MjvOption()
        self._opt.sitegroup[:] = 0  # robosuite's marker sites (grip-site cylinder) are not drawn

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

    def front(self, world: S.PandaTable, centres: Sequence[np.ndarray] | None, annotate: bool = True) -> np.ndarray:
        self._r.update_scene(world.data, camera=self._cam, scene_option=self._opt)
        img = self._r.render().copy()
        if not annotate:
            return img
        from PIL import Image, ImageDraw

        im = Image.fromarray(img)
        draw = ImageDraw.Draw(im)
        for i, p in enumerate(centres or []):
            corners = np.array([p + np.array([dx, dy, dz]) for dx in (-BOX_HALF_M, BOX_HALF_M)
                                for dy in (-BOX_HALF_M, BOX_HALF_M) for dz in (-0.02, 0.03)])
            uv = self._project(world.data, corners)
            (u0, v0), (u1, v1) = uv.min(axis=0), uv.max(axis=0)
            draw.rectangle([u0, v0, u1, v1], outline=(255, 0, 0), width=2)
            draw.text((u0 + 2, v0 + 1), str(i + 1), fill=(255, 0, 0))
        # axis glyph: project world axes at the table centre, draw them from a fixed pixel
        o = np.array([0.2, 0.0, S.TABLE_Z])
        uv = self._project(world.data, np.array([o, o + [AXIS_LEN_M, 0, 0], o + [0, AXIS_LEN_M, 0], o + [0, 0, AXIS_LEN_M]]))
        base = np.array([AXIS_ORIGIN_PX[0] * self.size, AXIS_ORIGIN_PX[1] * self.size])
        for k, (color, label) in enumerate((((255, 0, 0), "x"), ((0, 200, 0), "y"), ((0, 0, 255), "z"))):
            d = uv[k + 1] - uv[0]
            d = d / (np.linalg.norm(d) + 1e-9) * 0.08 * self.size
            end = base + d
            draw.line([tuple(base), tuple(end)], fill=color, width=3)
            draw.text(tuple(end + 2), label, fill=color)
        return np.asarray(im)

    def wrist(self, world: S.PandaTable) -> np.ndarray:
        self._r.update_scene(world.data, camera=self.model.camera("robot0_eye_in_hand").id, scene_option=self._opt)
        return self._r.render().copy()
