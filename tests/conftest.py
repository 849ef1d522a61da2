"""Shared test fixtures.

Real benchmark data is read in place: ``$EB_ALFRED_DATA_DIR`` or
``../shared/data/eb_alfred`` beside the repository. Tests that need it skip
with the reason when it is absent (a user's clone has no ../shared), unless
``REQUIRE_EB_ALFRED_DATA=1`` is set (``.ci/run`` sets it): then they fail, so
CI can never go green with the data tests skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.video_qa_data import cfg_data, po_data  # noqa: F401 - the video-QA suites' generated data, for every test

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Set to 1 to turn a missing-data skip into a failure (CI).
REQUIRE_DATA_ENV = "REQUIRE_EB_ALFRED_DATA"


def eb_alfred_data_or_none() -> Path | None:
    env = os.environ.get("EB_ALFRED_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "eb_alfred"
    return path if (path / "splits" / "splits.json").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    """The EB-ALFRED data folder (EmbodiedBench's ``data/``); skip without it, or
    fail when ``REQUIRE_EB_ALFRED_DATA=1``."""
    path = eb_alfred_data_or_none()
    if path is None:
        reason = ("EB-ALFRED data not found: set EB_ALFRED_DATA_DIR to EmbodiedBench's data folder "
                  "(splits/splits.json) or place it at ../shared/data/eb_alfred")
        if os.environ.get(REQUIRE_DATA_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_DATA_ENV}=1: the data tests must not be skipped)", pytrace=False)
        pytest.skip(reason)
    return path
