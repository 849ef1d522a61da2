"""Shared fixtures: the EmbodiedBench data folder (skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


def data_dir_or_none() -> Path | None:
    """``$EB_ALFRED_DATA_DIR`` or ``../shared/data/eb_alfred`` relative to the repo root."""
    env = os.environ.get("EB_ALFRED_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "eb_alfred"
    return path if (path / "splits" / "splits.json").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    path = data_dir_or_none()
    if path is None:
        pytest.skip("EB-ALFRED data not found: set EB_ALFRED_DATA_DIR to EmbodiedBench's data folder "
                    "(splits/splits.json) or place it at ../shared/data/eb_alfred")
    return path
