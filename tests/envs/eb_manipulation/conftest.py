"""The twin needs robosuite 1.4 + mujoco (``pip install -e .[eb_manipulation]``): without them
these tests skip saying so, or fail when ``REQUIRE_EB_MANIPULATION=1`` (as in CI)."""

from __future__ import annotations

import importlib
import os

import pytest

for _module in ("mujoco", "robosuite"):
    try:
        importlib.import_module(_module)
    except ImportError as _e:
        _reason = f"the EB-Manipulation twin needs {_module} (pip install -e .[eb_manipulation]): {_e}"
        if os.environ.get("REQUIRE_EB_MANIPULATION") == "1":
            raise RuntimeError(f"{_reason}; REQUIRE_EB_MANIPULATION=1") from _e
        pytest.skip(_reason, allow_module_level=True)
