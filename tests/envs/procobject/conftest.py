"""A small generated ProcObject-10K data folder: data/testing.json and videos/ with clips whose
frame i is filled with grey level 5*i (4 fps, 12 s)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")

from harness.video import write_mp4  # noqa: E402

RECORDS = [
    {"id": 1, "video_path": "k1.mp4", "clip_start": 2.0, "clip_end": 10.0, "question": "What must be true before pouring?",
     "answer": "The kettle must have boiled.", "evidence": [[0.5, 2.0], [1.5, 3.0]],
     "qa_type": "Precondition Grounding", "reasoning": "Needle-in-a-Haystack", "source": "gen", "domain": "cooking"},
    {"id": 2, "video_path": "k1.mp4", "clip_start": 0.0, "clip_end": 12.0, "question": "What went wrong?",
     "answer": "The lid was left open.", "evidence": [[4.0, 6.0], [8.0, 9.0]],
     "qa_type": "Mistake Recognition", "reasoning": "Multi-hop Reasoning", "source": "gen", "domain": "cooking"},
    {"id": 3, "video_path": "k2.mp4", "clip_start": 1.0, "clip_end": 9.0, "question": "Is the dough ready?",
     "answer": "Not yet, it is still sticky.", "evidence": [[2.0, 5.0]],
     "qa_type": "Readiness Assessment", "reasoning": "Needle-in-a-Haystack", "source": "gen", "domain": "baking"},
]


@pytest.fixture(scope="session")
def po_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("procobject_data")
    (root / "data").mkdir()
    (root / "data" / "testing.json").write_text(json.dumps(RECORDS))
    (root / "videos").mkdir()
    for name in ("k1.mp4", "k2.mp4"):
        write_mp4(root / "videos" / name, [np.full((32, 48, 3), 5 * i, dtype=np.uint8) for i in range(48)], 4)
    return root
