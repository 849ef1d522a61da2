"""Golden-file checks shared by the tests.

``UPDATE_GOLDEN=1 pytest ...`` rewrites the golden files and then *fails*, so an
update run can never pass: review the diff, then rerun without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def check_golden(path: Path, text: str) -> None:
    """Compare ``text`` with the golden file at ``path`` (see the module doc)."""
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.fail(f"golden files updated ({path.name}); rerun without UPDATE_GOLDEN", pytrace=False)
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 once and review it"
    assert text == path.read_text(encoding="utf-8"), f"differs from the golden file {path}"
