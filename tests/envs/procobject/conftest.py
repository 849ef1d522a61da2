"""procobject's tests: the generated ProcObject-10K folder (the ``po_data`` fixture,
tests/video_qa_data.py, registered for every test by tests/conftest.py)."""

from __future__ import annotations

import pytest

av = pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")

from tests.video_qa_data import RECORDS  # noqa: E402,F401 - names these tests import
