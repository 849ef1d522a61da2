"""Episode videos that browsers play: H.264 (yuv420p) in MP4, through PyAV.

PyAV's wheels ship their own FFmpeg (with libx264), so no system encoder is
needed. OpenCV's ``mp4v`` fourcc writes MPEG-4 Part 2, which no browser's
``<video>`` decodes; this writer replaces it.

Choices, all for playback in any browser:

* ``libx264``, pixel format ``yuv420p`` (4:4:4 or 4:2:2 H.264 plays in few
  browsers), profile ``high``; yuv420p needs even width and height, so an odd
  frame is padded by one edge pixel (replicated), never scaled.
* ``+faststart``: the index (``moov``) at the front, so a page can start playing
  before the whole file has arrived.
* ``crf`` 23 (FFmpeg's default quality) and ``preset`` ``veryfast``: a few
  hundred frames of 256x128 encode in well under a second.

The file is written to a temporary name in the same folder and renamed, so a
crash never leaves a truncated MP4 under the final name. PyAV is imported only
when a video is written (``harness/`` imports no heavy dependency at module level).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from harness.registry.extras import MODULE_EXTRAS

#: Codec, pixel format and container settings (see the module docstring).
CODEC = "libx264"
PIXEL_FORMAT = "yuv420p"
CRF = 23
PRESET = "veryfast"


def _even(frame: np.ndarray) -> np.ndarray:
    """Pad an odd height/width by one replicated edge pixel (yuv420p needs even sizes)."""
    h, w = frame.shape[:2]
    pad_h, pad_w = h % 2, w % 2
    if pad_h or pad_w:
        frame = np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    return frame


def write_mp4(path: str | Path, frames: Sequence[np.ndarray] | Iterable[np.ndarray], fps: int) -> Path:
    """Encode RGB ``uint8`` frames (H x W x 3, all the same size) as H.264/yuv420p MP4.

    Returns the path. Raises ValueError for no frames or frames of the wrong
    shape, RuntimeError (one line) when PyAV is missing.
    """
    try:
        import av
    except ImportError as exc:  # pragma: no cover - the extra of a suite that writes videos installs it

        extra = MODULE_EXTRAS.get("av")
        has = f" (the '{extra}' extra has it)" if extra else ""
        raise RuntimeError(f"writing episode videos needs PyAV: pip install av{has}") from exc

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    count = 0
    try:
        with av.open(str(tmp), mode="w", format="mp4", options={"movflags": "+faststart"}) as container:
            stream = None
            for frame in frames:
                frame = np.asarray(frame)
                if frame.ndim != 3 or frame.shape[2] != 3:
                    raise ValueError(f"video frames must be H x W x 3 RGB, got shape {frame.shape}")
                frame = _even(np.ascontiguousarray(frame, dtype=np.uint8))
                if stream is None:
                    stream = container.add_stream(CODEC, rate=int(fps),
                                                  options={"crf": str(CRF), "preset": PRESET, "profile": "high"})
                    stream.height, stream.width = frame.shape[:2]
                    stream.pix_fmt = PIXEL_FORMAT
                elif frame.shape[:2] != (stream.height, stream.width):
                    raise ValueError(f"frame {count} is {frame.shape[1]}x{frame.shape[0]}, "
                                     f"the video {stream.width}x{stream.height}")
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    container.mux(packet)
                count += 1
            if stream is None:
                raise ValueError("a video needs at least one frame")
            for packet in stream.encode():  # flush the encoder
                container.mux(packet)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def probe(path: str | Path) -> dict[str, object]:
    """Codec name, pixel format, profile, size, frame count and duration (s) of a video file."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        ctx = stream.codec_context
        duration = float(stream.duration * stream.time_base) if stream.duration is not None else None
        return {"codec": ctx.name, "pix_fmt": ctx.pix_fmt, "profile": ctx.profile, "width": ctx.width,
                "height": ctx.height, "frames": frames, "duration": duration}
