"""One real local Ray cluster (num_cpus=2) for every Ray test of this folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def cluster():
    ray = pytest.importorskip("ray", reason="executor=ray needs the ray extra: pip install -e '.[ray]'")
    os.environ.setdefault("PYTHONPATH", str(REPO))  # the actors import the repo's packages
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
