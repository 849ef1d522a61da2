"""envs/video_frames.py: what a video-QA question shows the model per ``visual``, on a generated
clip whose frame i is grey level 8*i (so each frame names its index)."""

from __future__ import annotations

import numpy as np
import pytest

av = pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")

from envs.video_frames import VideoError, visual_parts  # noqa: E402
from harness.run.video import write_mp4  # noqa: E402


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "c.mp4"
    return write_mp4(path, [np.full((32, 48, 3), 8 * i, dtype=np.uint8) for i in range(24)], 4)  # 6 s


def index_of(image) -> int:
    return int(round(np.asarray(image)[..., 0].mean() / 8))


def test_video_frame_and_none(clip):
    (part,) = visual_parts(str(clip), 1.0, 3.0, visual="video", fps=2, max_frames=100)
    assert part["type"] == "video" and [index_of(f) for f in part["video"].frames] == [4, 6, 8, 10]
    (part,) = visual_parts(str(clip), 0.0, None, visual="video", fps=4, max_frames=3)
    assert [index_of(f) for f in part["video"].frames] == [0, 8, 16]
    (image,) = visual_parts(str(clip), 2.0, 4.0, visual="frame", fps=4, max_frames=64)
    assert image["type"] == "image" and index_of(image["image"]) == 12
    (image,) = visual_parts(str(clip), 0.0, None, visual="frame", fps=4, max_frames=64)
    assert index_of(image["image"]) == 12


def test_none_decodes_nothing_and_an_unreadable_clip_is_one_line(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    assert visual_parts(str(bad), 0.0, None, visual="none", fps=4, max_frames=4) == []
    with pytest.raises(VideoError):
        visual_parts(str(bad), 0.0, None, visual="video", fps=4, max_frames=4)
