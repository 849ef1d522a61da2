"""Video clips (harness/util/media.py): the frames a declared sampling picks, read from videos whose
frames code their own index."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("av", reason="reading videos needs PyAV (the `video` / `models` extra)")

from harness.util.media import Clip, VideoError, load_clip, sample_times, sampling_identity  # noqa: E402
from tests.media_helpers import counting_video, frame_index  # noqa: E402


def expected_indices(frames: int, src_fps: float, fps: float, max_frames: int, start: float = 0.0,
                     end: float | None = None) -> list[int]:
    """The rule written out independently: times at `fps` over [start, end) (evenly `max_frames`
    when more), each taking the frame on screen then (frame i shows on [i/src, (i+1)/src))."""
    duration = frames / src_fps
    hi = duration if end is None else min(end, duration)
    span = hi - start
    n = math.ceil(span * fps - 1e-9)
    times = [start + k / fps for k in range(n)] if n <= max_frames else \
        [start + k * span / max_frames for k in range(max_frames)]
    return [min(frames - 1, math.floor(t * src_fps + 1e-9)) for t in times]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s at 10 fps: 30 frames."""
    return counting_video(tmp_path_factory.mktemp("media") / "count.mp4", frames=30, fps=10)


@pytest.fixture(scope="module")
def video25(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 s at 25 fps: 100 frames (indices past 31 use the second channel)."""
    return counting_video(tmp_path_factory.mktemp("media") / "count25.mp4", frames=100, fps=25)


@pytest.mark.parametrize("fps,max_frames,start,end", [
    (4.0, 32, None, None),      # 4 fps over 3 s: 12 frames
    (4.0, 5, None, None),       # capped: 5 frames evenly over 3 s
    (2.0, 32, 1.05, 2.6),       # a window
    (30.0, 200, None, 1.0),     # faster than the source: frames repeat
    (1.0, 1, None, None),       # one frame
])
def test_the_frames_are_the_ones_the_sampling_picks(video: Path, fps: float, max_frames: int,
                                                    start: float | None, end: float | None) -> None:
    clip = load_clip(video, fps=fps, max_frames=max_frames, start=start, end=end)
    want = expected_indices(30, 10.0, fps, max_frames, start or 0.0, end)
    assert [frame_index(f) for f in clip.frames] == want  # the pixels: which frame was decoded
    assert list(clip.indices) == want                     # what the clip says it holds
    assert clip.timestamps == pytest.approx([i / 10.0 for i in want], abs=1e-6)
    assert len(clip) <= max_frames and clip.source_fps == pytest.approx(10.0) and clip.duration == pytest.approx(3.0)
    assert clip.sampling == sampling_identity(fps, max_frames, start, end)


def test_a_longer_video_at_another_rate(video25: Path) -> None:
    clip = load_clip(video25, fps=4.0, max_frames=8, start=0.5)
    want = expected_indices(100, 25.0, 4.0, 8, 0.5)
    assert [frame_index(f) for f in clip.frames] == want == list(clip.indices)
    assert clip.rate == pytest.approx(8 / 3.5)  # the cap lowered the rate evenly over the window
    meta = clip.metadata()
    # numbered from the frame on screen at the window's start (12, shown from 0.48 s): a processor
    # that writes index / fps writes seconds from the clip's start (Qwen3-VL), not of the source
    assert clip.first_index == 12 and meta["frames_indices"] == [i - 12 for i in want]
    assert meta["fps"] == pytest.approx(25.0)
    assert meta["duration"] == pytest.approx(3.5) and meta["total_num_frames"] == round(3.5 * 25)


def test_sample_times_rule() -> None:
    assert sample_times(3.0, 4.0, 32) == pytest.approx([k / 4 for k in range(12)])
    assert sample_times(3.0, 4.0, 6) == pytest.approx([k * 0.5 for k in range(6)])
    assert sample_times(3.0, 4.0, 32, start=1.0, end=2.0) == pytest.approx([1.0, 1.25, 1.5, 1.75])
    assert sample_times(3.0, 4.0, 32, start=2.9) == pytest.approx([2.9])
    assert sample_times(3.0, 4.0, 32, end=10.0) == sample_times(3.0, 4.0, 32)  # the end is the video's at most


def test_the_sampling_identity_changes_with_each_setting() -> None:
    base = sampling_identity(4.0, 32)
    assert base == {"rule": "1", "decoder": "pyav", "fps": 4.0, "max_frames": 32}
    others = [sampling_identity(2.0, 32), sampling_identity(4.0, 16), sampling_identity(4.0, 32, start=1.0),
              sampling_identity(4.0, 32, end=2.0)]
    assert all(o != base for o in others)


@pytest.mark.parametrize("kwargs,words", [
    (dict(fps=0), "fps must be"), (dict(fps=float("nan")), "fps must be"), (dict(max_frames=0), "max_frames"),
    (dict(start=-1.0), "start must be"), (dict(start=2.0, end=1.0), "must be after start"),
    (dict(start=5.0), "at or after the video's end"),
])
def test_bad_settings_are_one_clear_error(video: Path, kwargs: dict, words: str) -> None:
    with pytest.raises(VideoError, match=words) as info:
        load_clip(video, **kwargs)
    assert "\n" not in str(info.value)


def test_unreadable_videos_are_one_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mp4"
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"not a video at all" * 100)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    for path, words in ((missing, "no such video file"), (garbage, "not a readable video"),
                        (empty, "not a readable video")):
        with pytest.raises(VideoError, match=words) as info:
            load_clip(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_no_video_stream(tmp_path: Path) -> None:
    import av
    import numpy as np

    path = tmp_path / "tone.wav"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with pytest.raises(VideoError, match="no video stream"):
        load_clip(path)


def test_image_parts_are_the_frames_in_order(video: Path) -> None:
    clip = load_clip(video, fps=2.0, max_frames=4)
    parts = clip.image_parts()
    assert [p["type"] for p in parts] == ["image"] * 4
    assert [frame_index(p["image"]) for p in parts] == list(clip.indices)
    assert isinstance(clip, Clip) and clip.size == (48, 32)


# --- the qwen_vl_utils rule ------------------------------------------------------------------------


def qwen_reference(total_frames: int, video_fps: float, fps: float, max_frames: int | None = None) -> list[int]:
    """qwen_vl_utils' own expression (QwenLM/Qwen2.5-VL at f0af299, qwen-vl-utils/src/qwen_vl_utils/
    vision_process.py:170-177 and :250), written out here with torch as there."""
    torch = pytest.importorskip("torch", reason="torch: the `models` extra")
    factor = 2
    min_frames = math.ceil(4 / factor) * factor
    cap = min(768, total_frames) if max_frames is None else max_frames
    high = math.floor(cap / factor) * factor
    n = min(min(max(total_frames / video_fps * fps, min_frames), high), total_frames)
    n = math.floor(n / factor) * factor
    return torch.linspace(0, total_frames - 1, n).round().long().tolist()


@pytest.mark.parametrize("total_frames,video_fps", [
    (55, 30.0), (789, 30.0), (658, 25.0), (3234, 30.0), (2695, 25.0), (1297, 29.97), (100, 25.0), (30, 10.0)])
def test_the_qwen_rule_is_qwen_vl_utils(total_frames: int, video_fps: float) -> None:
    from harness.util.media import qwen_frame_indices

    assert qwen_frame_indices(total_frames, video_fps, 4.0) == qwen_reference(total_frames, video_fps, 4.0)
    assert qwen_frame_indices(total_frames, video_fps, 4.0, 64) == qwen_reference(total_frames, video_fps, 4.0, 64)


@pytest.mark.parametrize("seconds", [1.83, 26.3, 107.8])
def test_the_qwen_rule_keeps_4_fps_for_every_clip_length_in_the_release(seconds: float) -> None:
    """CFG-Bench's clips last 1.83 to 107.8 s (26.3 s on average); at 30 fps and the default cap
    (768) the rule takes about 4 frames a second for each (a pair at most short of it)."""
    from harness.util.media import qwen_frame_indices

    total = round(seconds * 30)
    picked = qwen_frame_indices(total, 30.0, 4.0)
    assert len(picked) == math.floor(total / 30 * 4 / 2) * 2
    assert len(picked) / seconds == pytest.approx(4.0, abs=2 / seconds)
    # the old default of this suite (64 frames) would have lowered the rate below 4 fps past 16 s
    assert len(qwen_frame_indices(total, 30.0, 4.0, 64)) / seconds < 3.0 or seconds < 16


def test_a_clip_by_the_qwen_rule(video25: Path) -> None:
    clip = load_clip(video25, fps=4.0, max_frames=768, rule="qwen_vl_utils")
    want = qwen_reference(100, 25.0, 4.0, 768)  # 4 s at 25 fps: 16 frames from 0 to 99
    assert len(want) == 16 and want[0] == 0 and want[-1] == 99
    assert [frame_index(f) for f in clip.frames] == want == list(clip.indices)
    assert clip.rate == pytest.approx(16 / 100 * 25.0)  # qwen_vl_utils' sample_fps
    assert clip.sampling == {"rule": "qwen_vl_utils/1", "decoder": "pyav", "fps": 4.0, "max_frames": 768}


def test_a_window_by_the_qwen_rule(video25: Path) -> None:
    clip = load_clip(video25, fps=4.0, max_frames=768, start=1.0, end=3.0, rule="qwen_vl_utils")
    want = [25 + i for i in qwen_reference(50, 25.0, 4.0, 768)]  # the window's 50 frames, 25..74
    assert [frame_index(f) for f in clip.frames] == want == list(clip.indices)
    assert clip.metadata()["frames_indices"] == [i - 25 for i in want]  # from the clip's start


def test_the_rule_enters_the_identity_and_an_unknown_one_is_refused() -> None:
    assert sampling_identity(4.0, 768, rule="qwen_vl_utils") != sampling_identity(4.0, 768)
    with pytest.raises(VideoError, match="unknown sampling rule 'linspace'"):
        sampling_identity(4.0, 768, rule="linspace")
