"""What a video-QA question shows a model (cfg_bench, procobject prompt adapters), per the
``visual`` prompt option, built on :mod:`harness.util.media` (frames sampled at a declared rate with a
cap, by the suite's sampling rule, decoded with PyAV):

- ``video``: the clip ``[start, end)`` as one video part (``{"type": "video", "video": Clip}``),
  which the planner's backend hands to the model (docs/models.md);
- ``frame``: the clip's middle frame as one image part (the single-frame control; found by the
  rule ``times`` whatever the suite's rule, a rule that takes frames in pairs can't take one);
- ``none``: nothing, and nothing decoded (the blind control).

A file that cannot be decoded raises :class:`harness.util.media.VideoError` (one line): the runner
records that question as an error and the run goes on.
"""

from __future__ import annotations

from typing import Any

from harness.util.media import RULES, VideoError, load_clip

VISUAL = ("video", "frame", "none")

__all__ = ["VISUAL", "VideoError", "visual_parts"]


def visual_parts(video: str, start: float, end: float | None, *, visual: str, fps: float,
                 max_frames: int, rule: str = RULES[0]) -> list[dict[str, Any]]:
    if visual == "none":
        return []
    if visual == "video":
        return [{"type": "video", "video": load_clip(video, fps=fps, max_frames=max_frames, start=start, end=end,
                                                     rule=rule)}]
    if visual == "frame":
        window = load_clip(video, fps=fps, max_frames=1, start=start, end=end)  # its bounds
        mid = (window.start + window.end) / 2
        return load_clip(video, fps=fps, max_frames=1, start=mid, end=window.end).image_parts()
    raise ValueError(f"visual must be one of {', '.join(VISUAL)}, got {visual!r}")

