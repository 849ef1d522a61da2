"""Shared test fixtures.

Real benchmark data is read in place: ``$EB_ALFRED_DATA_DIR`` or
``../shared/data/eb_alfred`` beside the repository. Tests that need it skip
with the reason when it is absent (a user's clone has no ../shared).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def eb_alfred_data_or_none() -> Path | None:
    env = os.environ.get("EB_ALFRED_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "eb_alfred"
    return path if (path / "splits" / "splits.json").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    """The EB-ALFRED data folder (EmbodiedBench's ``data/``), or skip."""
    path = eb_alfred_data_or_none()
    if path is None:
        pytest.skip("EB-ALFRED data not found: set EB_ALFRED_DATA_DIR to EmbodiedBench's data folder "
                    "(splits/splits.json) or place it at ../shared/data/eb_alfred")
    return path
