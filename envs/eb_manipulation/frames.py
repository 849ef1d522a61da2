"""Colour statistics of a front-camera frame in two fixed regions (table, wall), for comparing
the twin's look with EmbodiedBench's own example frames (benchmarks/eb_manipulation_frames.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: (rows, columns) slices of the two regions at 500 px.
TABLE_REGION = ((slice(300, 490), slice(10, 490)),)
WALL_REGION = ((slice(20, 190), slice(0, 170)), (slice(20, 190), slice(330, 500)))
ICL_FRAMES = "embodiedbench/evaluator/config/visual_icl_examples/eb_manipulation"


def region_pixels(image: np.ndarray, region) -> np.ndarray:
    return np.concatenate([image[r, c].reshape(-1, 3) for r, c in region]).astype(float)


def stats(image: np.ndarray) -> dict[str, list[float]]:
    t, w = region_pixels(image, TABLE_REGION), region_pixels(image, WALL_REGION)
    return {"table_mean": t.mean(0).round(1).tolist(), "table_median": np.median(t, 0).round(1).tolist(),
            "wall_mean": w.mean(0).round(1).tolist(), "wall_median": np.median(w, 0).round(1).tolist()}


def original_frames(root: Path) -> dict[str, np.ndarray]:
    from PIL import Image

    frames = {}
    for path in sorted((root / ICL_FRAMES).glob("*/*.png")):
        frames[f"{path.parent.name}/{path.stem.split('_step')[0]}"] = np.asarray(Image.open(path).convert("RGB"))
    return frames
