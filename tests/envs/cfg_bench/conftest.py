"""cfg_bench's tests: the generated CFG-Bench folder (the ``cfg_data`` fixture, tests/video_qa_data.py,
registered for every test by tests/conftest.py)."""

from __future__ import annotations

import pytest

av = pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")  # the clips are written and read with PyAV

