"""envs/video_frames.py: frames sampled at a declared rate between a clip's bounds, capped, from a
generated clip whose frame i is grey level 8*i (so each sampled frame names its index)."""

from __future__ import annotations

import numpy as np
import pytest

av = pytest.importorskip("av")

from envs.video_frames import ClipError, clip_frames, middle_frame, sample_times  # noqa: E402
from harness.video import write_mp4  # noqa: E402


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "c.mp4"
    return write_mp4(path, [np.full((32, 48, 3), 8 * i, dtype=np.uint8) for i in range(24)], 4)  # 6 s


def index_of(image) -> int:
    return int(round(np.asarray(image)[..., 0].mean() / 8))


def test_sampling_rate_bounds_and_cap(clip):
    assert [index_of(im) for im in clip_frames(clip, 0.0, None, fps=2, max_frames=100)] == list(range(0, 24, 2))
    assert [index_of(im) for im in clip_frames(clip, 1.0, 3.0, fps=4, max_frames=100)] == [4, 5, 6, 7, 8, 9, 10, 11]
    assert [index_of(im) for im in clip_frames(clip, 0.0, 6.0, fps=4, max_frames=3)] == [0, 8, 16]
    assert index_of(middle_frame(clip, 2.0, 4.0)) == 12
    assert sample_times(0.0, 1.0, 4, 100) == [0.0, 0.25, 0.5, 0.75]


def test_an_unreadable_clip_is_one_line(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(ClipError, match="cannot decode video"):
        clip_frames(bad, 0.0, None, fps=4, max_frames=4)
