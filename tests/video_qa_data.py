"""Generated data of the one-step video-QA suites, shared by every test that runs them (their own
tests, the all-suites contract and scripted-backend checks): a small CFG-Bench folder
(qa_pairs.json with MC and open-ended items of several tasks, caption.json, and videos/ with
clips whose frame i is filled with grey level 8*i) and a small ProcObject-10K folder
(data/testing.json and videos/ with clips whose frame i is filled with grey level 5*i, 4 fps,
12 s). The fixtures skip without PyAV (the `video` extra)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest


def write_clip(path: Path, n: int = 8, fps: int = 4) -> Path:
    from harness.run.video import write_mp4

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
def cfg_data(tmp_path_factory) -> Path:
    """A CFG-Bench data folder (:data:`ITEMS`, two captions, two clips)."""
    pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")
    root = tmp_path_factory.mktemp("cfg_bench_data")
    (root / "qa_pairs.json").write_text(json.dumps(ITEMS))
    (root / "caption.json").write_text(json.dumps([{"video_name": "v1.mp4", "caption": "A person makes tea."},
                                                    {"video_name": "v2.mp4", "caption": "A person cuts bread with a knife."}]))
    (root / "videos").mkdir()
    write_clip(root / "videos" / "v1.mp4")
    write_clip(root / "videos" / "v2.mp4")
    return root


@pytest.fixture(scope="session")
def po_data(tmp_path_factory) -> Path:
    """A ProcObject-10K data folder (:data:`RECORDS`, two clips)."""
    pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")
    from harness.run.video import write_mp4

    root = tmp_path_factory.mktemp("procobject_data")
    (root / "data").mkdir()
    (root / "data" / "testing.json").write_text(json.dumps(RECORDS))
    (root / "videos").mkdir()
    for name in ("k1.mp4", "k2.mp4"):
        write_mp4(root / "videos" / name, [np.full((32, 48, 3), 5 * i, dtype=np.uint8) for i in range(48)], 4)
    return root
