"""A small generated CFG-Bench data folder: qa_pairs.json (MC and open-ended items of several
tasks), caption.json and videos/ with clips whose frame i is filled with grey level 8*i."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")

from harness.video import write_mp4  # noqa: E402


def write_clip(path: Path, n: int = 8, fps: int = 4) -> Path:
    frames = [np.full((32, 48, 3), 8 * i, dtype=np.uint8) for i in range(n)]
    return write_mp4(path, frames, fps)


ITEMS = [
    {"video_name": "v1.mp4", "question": "Which hand grips the cup?", "task_type": "FAU",
     "options": ["left hand", "right hand", "both hands"], "correct_answer": "right hand"},
    {"video_name": "v2.mp4", "question": "What happens first?", "task_type": "TR",
     "options": ["pour", "stir"], "correct_answer": "pour"},
    {"video_name": "v1.mp4", "question": "What comes after the lid opens?", "task_type": "CR",
     "options": ["the pour", "the stir", "nothing"], "correct_answer": "the pour"},
    {"video_name": "v2.mp4", "question": "Why does the person cut the bread with a spoon?", "task_type": "CIA",
     "correct_answer": "They do not use a spoon; they cut it with a knife."},
    {"video_name": "v1.mp4", "question": "What is the goal of the person?", "task_type": "GI",
     "correct_answer": "To make tea."},
]


@pytest.fixture(scope="session")
def cfg_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cfg_bench_data")
    (root / "qa_pairs.json").write_text(json.dumps(ITEMS))
    (root / "caption.json").write_text(json.dumps([{"video_name": "v1.mp4", "caption": "A person makes tea."},
                                                    {"video_name": "v2.mp4", "caption": "A person cuts bread with a knife."}]))
    (root / "videos").mkdir()
    write_clip(root / "videos" / "v1.mp4")
    write_clip(root / "videos" / "v2.mp4")
    return root
