"""Video clips for model prompts: frames sampled from a video file at a declared rate, with a cap.

A prompt adapter puts a clip into a conversation as one content part,
``{"type": "video", "video": clip}`` (the processor convention of
:data:`harness.interfaces.Conversation`), or its frames as image parts
(:meth:`Clip.image_parts`). How the clip reaches a model is the backend's business
(docs/models.md: the ``hf`` backend hands it to the checkpoint's own video processor; the
``openai`` backend sends it in a form vLLM / SGLang read).

The sampling rule (:data:`SAMPLING_VERSION`), for a window ``[start, end)`` of the video
(``start`` 0 and ``end`` the video's duration unless given), at ``fps`` with at most
``max_frames`` frames:

* the sample times are ``start + k / rate`` for ``k = 0, 1, ...`` while below ``end``, where
  ``rate`` is ``fps``, or ``max_frames / (end - start)`` where ``fps`` would give more than
  ``max_frames`` times (the cap lowers the rate evenly over the window instead of cutting it
  short);
* each time takes the frame on screen at that time: the last frame whose presentation time
  is at or before it (the first frame of the window for a time before any frame);
* a frame is taken once per time, so a video slower than ``fps`` repeats frames, as a
  player would show them.

That is the rule ``times``. The rule ``qwen_vl_utils`` (:data:`QWEN_RULE`) picks frames as
the Qwen-VL models' own helper does (QwenLM/Qwen2.5-VL at
f0af2996e843cf46aa5f778c38d6694500c2ca81, qwen-vl-utils/src/qwen_vl_utils/vision_process.py,
qwen-vl-utils 0.0.10; the same code in QwenLM/Qwen3-VL at
96588727e44c78b25ba03ea03b8e12f7e64fd0da, qwen-vl-utils 0.0.14, lines 31-34 and 144-181), the
helper CFG-Bench's released evaluator hands its ``fps`` to (:func:`qwen_frame_indices`):

* over the window's ``N`` frames (those whose presentation time lies in ``[start, end)``; the
  whole video by default) at the source's average rate ``r``, the number of frames is
  ``n = N / r * fps`` clamped to at least 4 (``FPS_MIN_FRAMES``) and at most
  ``min(max_frames, N)``, then rounded down to an even number (``FRAME_FACTOR`` 2;
  ``smart_nframes``, vision_process.py:170-177 of 0.0.10); its default cap is 768
  (``FPS_MAX_FRAMES``, :32-35), so 4 fps holds for any clip up to 192 s;
* the frames taken are ``round(linspace(0, N - 1, n))`` of the window (round half to even, as
  ``torch.round``; :214 and :250), so the first and last frames are always in, and the rate in
  force is ``n / N * r`` (``sample_fps``, :253), which is ``fps`` only up to that rounding.

The rule, its version and the decoder (:func:`sampling_identity`) go into the run identity
through the suite's protocol; what a clip holds (frames, their source timestamps and frame
numbers) follows from them and the file. Decoding is PyAV's (FFmpeg in the wheel; the
originals decode with decord or torchvision, which read the same frames of a file whose
frames all have presentation times); a file that is missing, unreadable or has no video
stream raises :class:`VideoError` (one line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

#: Bump when the sampling rule above changes which frames a setting picks.
SAMPLING_VERSION = "1"
#: The rules (module docstring), the default first.
RULES = ("times", "qwen_vl_utils")
#: The ``qwen_vl_utils`` rule's version as it enters the identity (bump when it changes).
QWEN_RULE = "qwen_vl_utils/1"
#: qwen_vl_utils' constants (vision_process.py:32-35 of 0.0.10): frames come in pairs, at least
#: 4, at most 768 where no cap is given.
QWEN_FRAME_FACTOR, QWEN_MIN_FRAMES, QWEN_MAX_FRAMES = 2, 4, 768
#: The decoder (the library; its FFmpeg version is in the run's provenance with the package's).
DECODER = "pyav"
#: Presentation times this close count as equal (seconds): rounding in container time bases.
_EPS = 1e-6


class VideoError(ValueError):
    """A video that cannot be read or sampled as asked; ``str()`` is one line naming the file."""


def sample_times(duration: float, fps: float, max_frames: int, start: float | None = None,
                 end: float | None = None) -> list[float]:
    """The sample times (seconds) of the window ``[start, end)`` of a video lasting ``duration``
    seconds, at ``fps`` with at most ``max_frames`` (the rule of the module docstring)."""
    return _plan(duration, fps, max_frames, start, end)[0]


def qwen_frame_indices(total_frames: int, video_fps: float, fps: float,
                       max_frames: int = QWEN_MAX_FRAMES) -> list[int]:
    """The frames (0-based, of ``total_frames``) qwen_vl_utils takes at ``fps`` (module docstring):
    ``smart_nframes`` then ``round(linspace(0, total_frames - 1, n))``."""
    import numpy as np

    def floor_even(x: float) -> int:
        return math.floor(x / QWEN_FRAME_FACTOR) * QWEN_FRAME_FACTOR

    low = math.ceil(QWEN_MIN_FRAMES / QWEN_FRAME_FACTOR) * QWEN_FRAME_FACTOR
    high = floor_even(min(max_frames, total_frames))
    n = floor_even(min(max(total_frames / video_fps * fps, low), high, total_frames))
    if not QWEN_FRAME_FACTOR <= n <= total_frames:
        raise VideoError(f"the window holds {total_frames} frame(s): the qwen_vl_utils rule needs at least "
                         f"{QWEN_FRAME_FACTOR}")
    return [int(i) for i in np.round(np.linspace(0, total_frames - 1, n))]


def _window(duration: float, start: float | None, end: float | None) -> tuple[float, float]:
    """The window ``[lo, hi)`` in seconds, checked."""
    lo = 0.0 if start is None else float(start)
    hi = float(duration) if end is None else min(float(end), float(duration))
    if lo < 0 or not math.isfinite(lo):
        raise VideoError(f"start must be a time >= 0, got {start!r}")
    if end is not None and float(end) <= lo:
        raise VideoError(f"end ({end}) must be after start ({lo:g})")
    if hi <= lo:
        raise VideoError(f"the window starts at {lo:g}s, at or after the video's end ({duration:g}s)")
    return lo, hi


def _plan(duration: float, fps: float, max_frames: int, start: float | None,
          end: float | None) -> tuple[list[float], float, float]:
    """(sample times, the rate in force, the window's end) of the rule ``times``."""
    _check_settings(fps, max_frames)
    lo, hi = _window(duration, start, end)
    span = hi - lo
    # Times start + k / fps below hi: k < span * fps (a time equal to hi is outside the window).
    count = max(1, math.ceil(span * fps - _EPS))
    rate = float(fps)
    if count > max_frames:
        count, rate = int(max_frames), max_frames / span
    return [lo + k / rate for k in range(count)], rate, hi


def sampling_identity(fps: float, max_frames: int, start: float | None = None,
                      end: float | None = None, rule: str = RULES[0]) -> dict[str, Any]:
    """The declared sampling settings as they enter a run identity (JSON values): the rule and
    its version (``times``: :data:`SAMPLING_VERSION`; ``qwen_vl_utils``: :data:`QWEN_RULE`), the
    decoder, the rate and the cap."""
    _check_settings(fps, max_frames, rule)
    out: dict[str, Any] = {"rule": SAMPLING_VERSION if rule == "times" else QWEN_RULE, "decoder": DECODER,
                           "fps": float(fps), "max_frames": int(max_frames)}
    if start is not None:
        out["start"] = float(start)
    if end is not None:
        out["end"] = float(end)
    return out


def _check_settings(fps: float, max_frames: int, rule: str = RULES[0]) -> None:
    if rule not in RULES:
        raise VideoError(f"unknown sampling rule {rule!r} (one of: {', '.join(RULES)})")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) or fps <= 0:
        raise VideoError(f"fps must be a number > 0, got {fps!r}")
    if isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 1:
        raise VideoError(f"max_frames must be a whole number >= 1, got {max_frames!r}")


@dataclass(frozen=True)
class Clip:
    """Frames sampled from one video, with where they come from.

    ``timestamps[i]`` is the presentation time (seconds from the video's start) of
    ``frames[i]``, ``indices[i]`` its frame number in the source (presentation time x
    ``source_fps``, rounded). ``sampling`` is :func:`sampling_identity` of the settings used.
    """

    frames: tuple[Any, ...]  # PIL.Image.Image, RGB
    timestamps: tuple[float, ...]
    indices: tuple[int, ...]
    source_fps: float
    #: The source video's duration (seconds).
    duration: float
    #: The sampled window [start, end) in seconds.
    start: float
    end: float
    #: The sampling rate in force (``fps``, or lower under the ``max_frames`` cap).
    rate: float
    sampling: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the frames."""
        return self.frames[0].size

    def metadata(self) -> dict[str, Any]:
        """The clip as transformers' ``VideoMetadata`` fields describe a video whose frames were
        sampled already (``do_sample_frames=False``), the window being the video:
        ``frames_indices`` are the frames' numbers counted from the one on screen at the window's
        start (:attr:`first_index`) and ``fps`` the
        source's rate, so a processor that writes timestamps (Qwen3-VL: index / fps) writes
        seconds from the clip's start, the times a question about the clip speaks of (the
        source's own numbers stay in :attr:`indices`); ``duration`` and ``total_num_frames`` are
        the window's. A processor that derives the sampled rate from these (Qwen2.5-VL:
        ``len(indices) / total_num_frames * fps``) gets it only up to rounding: the ``hf``
        backend hands it :attr:`rate` itself (planners/vlm/video.py)."""
        width, height = self.size
        return {"total_num_frames": max(1, round((self.end - self.start) * self.source_fps)),
                "fps": self.source_fps, "width": width, "height": height,
                "duration": self.end - self.start, "video_backend": DECODER,
                "frames_indices": [i - self.first_index for i in self.indices]}

    @property
    def first_index(self) -> int:
        """The source's number of the frame on screen at the window's start."""
        return int(math.floor(self.start * self.source_fps + _EPS))

    def image_parts(self) -> list[dict[str, Any]]:
        """The frames as image content parts, in order (a multi-image prompt)."""
        return [{"type": "image", "image": frame} for frame in self.frames]


def load_clip(path: str | Path, fps: float = 4.0, max_frames: int = 32, start: float | None = None,
              end: float | None = None, rule: str = RULES[0]) -> Clip:
    """Decode ``path`` with PyAV and sample it by ``rule`` (module docstring). Raises :class:`VideoError`."""
    _check_settings(fps, max_frames, rule)
    try:
        import av
    except ImportError as exc:
        raise ImportError("reading videos needs PyAV: install the `video` (or `models`) extra") from exc
    p = Path(path)
    if not p.is_file():
        raise VideoError(f"{p}: no such video file")
    try:
        with av.open(str(p)) as container:
            if not container.streams.video:
                raise VideoError(f"{p}: no video stream")
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate or stream.base_rate
            if not rate or float(rate) <= 0:
                raise VideoError(f"{p}: the video stream declares no frame rate")
            source_fps = float(rate)
            base = stream.time_base
            origin = float(stream.start_time * base) if stream.start_time is not None else 0.0
            duration = _duration(container, stream, source_fps, origin, p)
            if rule == "times":
                times, rate_in_force, hi = _plan(duration, fps, max_frames, start, end)
            else:
                times, rate_in_force, hi = _qwen_plan(p, duration, source_fps, fps, max_frames, start, end)
            lo = times[0]
            if lo > 0:  # to the key frame at or before the window's start
                container.seek(int((lo + origin) / float(base)), stream=stream, backward=True, any_frame=False)
            picked: list[tuple[float, Any]] = []  # (presentation time, decoded frame) per sample time
            previous: tuple[float, Any] | None = None
            k = 0
            for frame in container.decode(stream):
                if frame.pts is None:
                    continue
                t = float(frame.pts * base) - origin
                # Each time before this frame takes the frame on screen then: the previous one (none
                # yet: a time before the first frame takes the first).
                while k < len(times) and times[k] < t - _EPS:
                    picked.append(previous or (t, frame))
                    k += 1
                previous = (t, frame)
                if k >= len(times):
                    break
            while k < len(times) and previous is not None:  # times at or after the last frame
                picked.append(previous)
                k += 1
            images: dict[int, Any] = {}  # one conversion per decoded frame, however often it is taken
            frames = [images.setdefault(id(f), f.to_image().convert("RGB")) if id(f) not in images else images[id(f)]
                      for _, f in picked]
    except VideoError:
        raise
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"{p}: not a readable video ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") \
            from None
    if not picked:
        raise VideoError(f"{p}: no frame decoded in the window [{times[0]:g}s, {hi:g}s)")
    stamps = [t for t, _ in picked]
    return Clip(frames=tuple(frames), timestamps=tuple(stamps),
                indices=tuple(int(round(t * source_fps)) for t in stamps), source_fps=source_fps,
                duration=duration, start=0.0 if start is None else float(start), end=hi,
                rate=rate_in_force,
                sampling=sampling_identity(fps, max_frames, start, end, rule), source=str(p))


def _qwen_plan(p: Path, duration: float, source_fps: float, fps: float, max_frames: int, start: float | None,
               end: float | None) -> tuple[list[float], float, float]:
    """(sample times, the rate in force, the window's end) of the rule ``qwen_vl_utils``: the
    presentation times of the window's frames (read from the packets, nothing decoded) that
    :func:`qwen_frame_indices` picks."""
    import av

    lo, hi = _window(duration, start, end)
    with av.open(str(p)) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        origin = float(stream.start_time * base) if stream.start_time is not None else 0.0
        every = sorted(float(packet.pts * base) - origin for packet in container.demux(stream)
                       if packet.pts is not None and packet.size)
    frames = [t for t in every if lo - _EPS <= t < hi - _EPS]
    if not frames:
        raise VideoError(f"{p}: no frame in the window [{lo:g}s, {hi:g}s)")
    picked = qwen_frame_indices(len(frames), source_fps, fps, max_frames)
    return [frames[i] for i in picked], len(picked) / len(frames) * source_fps, hi


def _duration(container: Any, stream: Any, source_fps: float, origin: float, p: Path) -> float:
    """The video stream's duration in seconds: the stream's, else the container's, else the frame count's."""
    if stream.duration is not None and stream.duration > 0:
        return float(stream.duration * stream.time_base)
    if container.duration is not None and container.duration > 0:
        import av

        return float(container.duration / av.time_base) - origin
    if stream.frames:
        return stream.frames / source_fps
    raise VideoError(f"{p}: the video declares no duration")


def frames_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two frame sequences hold the same pixels (PIL images)."""
    import numpy as np

    return len(a) == len(b) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))
