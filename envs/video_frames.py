"""Frames of a video clip for the video-QA suites' prompt adapters (cfg_bench, procobject).

Frames are sampled at a declared rate (``fps``) between the clip's bounds, at most
``max_frames`` of them (evenly thinned when more would be taken), decoded with PyAV. The
middle frame alone serves the single-frame control. A file that cannot be decoded raises
:class:`ClipError` (one line); the runner records that question as an error, the run goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ClipError(RuntimeError):
    """A clip that cannot be read (missing, not a video, no frames in its bounds)."""


def sample_times(start: float, end: float, fps: float, max_frames: int) -> list[float]:
    """Timestamps (seconds) at ``fps`` from ``start`` to ``end`` (end excluded), at most
    ``max_frames`` (evenly spaced picks from the full list when more)."""
    if fps <= 0 or max_frames < 1:
        raise ValueError(f"fps must be > 0 and max_frames >= 1, got {fps}, {max_frames}")
    span = max(0.0, end - start)
    n = max(1, int(span * fps + 1e-9))
    times = [start + i / fps for i in range(n)]
    if len(times) > max_frames:
        step = len(times) / max_frames
        times = [times[int(i * step)] for i in range(max_frames)]
    return times


def _decode(path: str | Path, start: float, end: float | None) -> list[tuple[float, Any]]:
    try:
        import av
    except ImportError as exc:  # pragma: no cover - av ships with the harness's video extra
        raise ClipError("decoding a clip needs PyAV (pip install av)") from exc
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            out = []
            for frame in container.decode(stream):
                t = float(frame.time if frame.time is not None else 0.0)
                if t + 1e-6 < start:
                    continue
                if end is not None and t >= end:
                    break
                out.append((t, frame.to_image()))
            return out
    except ClipError:
        raise
    except Exception as exc:
        raise ClipError(f"cannot decode video {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc


def clip_frames(path: str | Path, start: float, end: float | None, *, fps: float, max_frames: int) -> list[Any]:
    """PIL images of the clip ``[start, end)`` (``end`` None: to the end) sampled at ``fps``."""
    decoded = _decode(path, start, end)
    if not decoded:
        raise ClipError(f"no frames in {path} between {start:g}s and {end if end is not None else 'the end'}")
    if end is None:  # to the end of the last frame
        last = decoded[-1][0]
        end = last + (last - decoded[-2][0] if len(decoded) > 1 else 1e-3)
    times = sample_times(start, end, fps, max_frames)
    picked, j = [], 0
    for t in times:  # the last decoded frame at or before t
        while j + 1 < len(decoded) and decoded[j + 1][0] <= t + 1e-6:
            j += 1
        picked.append(decoded[j][1])
    return picked


def middle_frame(path: str | Path, start: float, end: float | None) -> Any:
    """The frame at the middle of the clip (the single-frame control)."""
    decoded = _decode(path, start, end)
    if not decoded:
        raise ClipError(f"no frames in {path} between {start:g}s and {end if end is not None else 'the end'}")
    return decoded[len(decoded) // 2][1]
