"""harness/run/video.py: H.264 yuv420p MP4 that browsers play.

The codec facts are checked by decoding the file with PyAV's own FFmpeg; the
browser test (tests/harness/report/test_report.py) checks that Chromium plays it.
"""

from __future__ import annotations

import numpy as np
import pytest

av = pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")

from harness.run.video import probe, write_mp4  # noqa: E402


def frames(n=30, h=64, w=96):
    """A moving white square on a colour gradient (RGB uint8)."""
    out = []
    for i in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        f[..., 0] = np.linspace(0, 255, w, dtype=np.uint8)[None, :]
        f[..., 2] = 128
        f[10:26, 2 * i % (w - 16):2 * i % (w - 16) + 16] = 255
        out.append(f)
    return out


def test_h264_yuv420p_with_every_frame(tmp_path):
    path = write_mp4(tmp_path / "v" / "ep.mp4", frames(), fps=20)
    info = probe(path)
    assert (info["codec"], info["pix_fmt"], info["frames"]) == ("h264", "yuv420p", 30)
    assert (info["width"], info["height"]) == (96, 64)
    assert info["duration"] == pytest.approx(30 / 20, abs=0.06)
    # faststart: the moov box comes before mdat.
    head = path.read_bytes()
    assert 0 < head.find(b"moov") < head.find(b"mdat")
    # Lossy but faithful: the decoded first frame is close to the input.
    with av.open(str(path)) as c:
        first = next(c.decode(video=0)).to_ndarray(format="rgb24")
    assert np.abs(first.astype(int) - frames()[0].astype(int)).mean() < 6
    assert [p.name for p in path.parent.iterdir()] == ["ep.mp4"]  # no temporary file left


def test_odd_sizes_are_padded_not_refused(tmp_path):
    info = probe(write_mp4(tmp_path / "odd.mp4", frames(4, 33, 51), fps=10))
    assert (info["width"], info["height"], info["frames"]) == (52, 34, 4)


def test_bad_input_fails_and_leaves_no_file(tmp_path):
    with pytest.raises(ValueError, match="at least one frame"):
        write_mp4(tmp_path / "none.mp4", [], fps=20)
    with pytest.raises(ValueError, match="H x W x 3"):
        write_mp4(tmp_path / "gray.mp4", [np.zeros((8, 8), np.uint8)], fps=20)
    with pytest.raises(ValueError, match="the video 96x64"):
        write_mp4(tmp_path / "mixed.mp4", frames(2) + frames(1, 32, 32), fps=20)
    assert list(tmp_path.iterdir()) == []
