from __future__ import annotations

import pytest

pytest.importorskip("mujoco", reason="the EB-Manipulation twin needs mujoco + robosuite (pip install -e .[eb_manipulation])")
pytest.importorskip("robosuite", reason="the EB-Manipulation twin needs robosuite 1.4 (pip install -e .[eb_manipulation])")
