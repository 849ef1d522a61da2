"""Small videos whose frames encode their own index, written with PyAV (harness/run/video.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: Intensity step per index unit: survives H.264's (lossy, yuv420p) round trip on flat frames.
STEP = 8
BASE = 256 // STEP


def index_frame(i: int, size: tuple[int, int] = (48, 32)) -> np.ndarray:
    """A flat RGB frame (width, height = size) coding ``i`` in red (low digit) and green (high)."""
    w, h = size
    frame = np.zeros((h, w, 3), np.uint8)
    frame[..., 0] = (i % BASE) * STEP
    frame[..., 1] = (i // BASE) * STEP
    frame[..., 2] = 128
    return frame


def frame_index(image: Any) -> int:
    """The index a decoded frame (PIL image or array) codes."""
    a = np.asarray(image, dtype=np.float64)
    return int(round(a[..., 0].mean() / STEP)) + BASE * int(round(a[..., 1].mean() / STEP))


def counting_video(path: Path, frames: int, fps: int, size: tuple[int, int] = (48, 32)) -> Path:
    """An H.264 MP4 of ``frames`` frames at ``fps``, frame i coding i."""
    from harness.run.video import write_mp4

    return write_mp4(path, [index_frame(i, size) for i in range(frames)], fps)
