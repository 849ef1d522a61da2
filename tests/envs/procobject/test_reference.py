"""Reference spans meet the rule predicted spans meet (envs/procobject/answer.py
``usable_reference``): a reference span past the clip is left out of the reference as the same span
is left out of a prediction, so the oracle's identical reply grounds perfectly; a question left with
no usable reference is out of the grounding metrics and counted by ``no_reference`` (NoRef)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli.entry import main
from harness.store import ResultStore
from tests.video_qa_data import RECORDS

EXTRA = [
    # an 8 s clip whose second reference span ends 3 s past it (beyond the 1 s tolerance)
    {"id": 4, "video_path": "k2.mp4", "clip_start": 1.0, "clip_end": 9.0, "question": "When is the dough kneaded?",
     "answer": "Twice.", "evidence": [[2.0, 5.0], [7.0, 11.0]], "qa_type": "Object State Evolution",
     "reasoning": "Multi-hop Reasoning", "source": "gen", "domain": "baking"},
    # every reference span past the clip: no usable reference
    {"id": 5, "video_path": "k2.mp4", "clip_start": 1.0, "clip_end": 9.0, "question": "Is the oven hot?",
     "answer": "Yes.", "evidence": [[9.5, 11.0]], "qa_type": "Readiness Assessment",
     "reasoning": "Needle-in-a-Haystack", "source": "gen", "domain": "baking"},
]


@pytest.fixture()
def data(tmp_path):
    pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")
    from harness.run.video import write_mp4

    root = tmp_path / "po"
    (root / "data").mkdir(parents=True)
    (root / "data" / "testing.json").write_text(json.dumps(RECORDS + EXTRA))
    (root / "videos").mkdir()
    for name in ("k1.mp4", "k2.mp4"):
        write_mp4(root / "videos" / name, [np.full((32, 48, 3), 5 * i, dtype=np.uint8) for i in range(48)], 4)
    return root


def test_the_oracle_and_the_reference_past_the_clip_are_treated_alike(data, tmp_path, capsys):
    out = tmp_path / "oracle"
    assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={data}", f"out={out}",
                 "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame().set_index("episode_id")
    v4 = df.loc["4", "values"]
    assert v4["iou"] == pytest.approx(1.0) and v4["reference_refused"] == 1 and v4["span_problems"] == 1
    assert "iou" not in df.loc["5", "values"]  # no reference left: no grounding
    assert df.loc["5", "extra"]["breakdown"]["reference"] == "none"
    capsys.readouterr()
    assert main(["table", str(out), "--metrics", "miou,no_reference", "--format", "json"]) == 0
    cells = json.loads(capsys.readouterr().out)
    text = json.dumps(cells)
    assert '"no_reference"' in text
    capsys.readouterr()
    assert main(["table", str(out), "--by", "reference", "--metrics", "miou,no_reference"]) == 0
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in capsys.readouterr().out.splitlines() if line.startswith("|") and "---" not in line}
    assert lines["given"][0] == "1.00" and lines["none"][0] == "–"   # the grounding means skip it
    assert lines["all"] == ["1.00", "20.0"]                           # mIoU over 4; 1 of 5 has no reference


def test_a_model_giving_only_the_in_clip_span_grounds_perfectly(data, tmp_path):
    from harness.check.scripted import scripted_replies

    def reply(text, schema, call):
        return '{"answer": "twice", "evidence": [[2.0, 5.0]]}'

    out = tmp_path / "vlm"
    with scripted_replies(reply, name="po_ref"):
        assert main(["run", "suite=procobject", "planner=vlm", "planner.params.backend=scripted",
                     "planner.params.script=po_ref", "planner.params.model=scripted", "planner.params.visual=none",
                     f"suite.params.data_dir={data}", f"out={out}", "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame().set_index("episode_id")
    assert df.loc["4", "values"]["iou"] == pytest.approx(1.0)  # the reference is [[2, 5]] once 11 s is refused
