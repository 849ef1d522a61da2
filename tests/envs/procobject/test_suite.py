"""The procobject suite end to end on a generated data folder: check_suite, harness run with the
oracle, the vlm planner (scripted backend; spans out of range counted; visual=none decodes no
video), harness table --by task_type, the official predictions file, and bad input."""

from __future__ import annotations

import json
import shutil

import pytest

from envs.procobject.grounding import ground
from harness.cli.entry import main
from harness.store import ResultStore
from harness.check.conformance import SUITE_CHECKS, check_suite
from harness.check.scripted import scripted_replies


def test_check_suite_passes(po_data):
    # every question of its one split (free-text answers: harness.spaces.AnswerText)
    report = check_suite("procobject", suite_params={"data_dir": str(po_data)}, episodes=3)
    assert list(report.passed) == list(SUITE_CHECKS), report


def test_oracle_grounds_perfectly(po_data, tmp_path, capsys):
    out = tmp_path / "oracle"
    assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={po_data}", f"out={out}",
                 "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame()
    assert len(df) == 3 and df["error_kind"].isna().all()
    for v in df["values"]:
        assert v["iou"] == pytest.approx(1.0) and v["iou_at_0_5"] == 1 and v["unreadable"] == 0
    capsys.readouterr()
    assert main(["table", str(out), "--by", "task_type"]) == 0
    text = capsys.readouterr().out
    assert "mistakes" in text and "mIoU" in text


def test_table_by_search_pattern(po_data, tmp_path, capsys):
    out = tmp_path / "pattern"
    assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={po_data}", f"out={out}",
                 "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame().set_index("episode_id")
    assert {k: e["breakdown"] for k, e in df["extra"].items()} == {
        "1": {"pattern": "needle", "reference": "given"}, "2": {"pattern": "multi_hop", "reference": "given"},
        "3": {"pattern": "needle", "reference": "given"}}
    capsys.readouterr()
    assert main(["table", str(out), "--by", "pattern", "--metrics", "miou,reply_unreadable"]) == 0
    rows = [line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines()[2:] if line.startswith("|")]
    assert rows == ["multi_hop", "needle", "all"]
    assert main(["table", str(out), "--by", "domain"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot break down by 'domain'" in err[0] and "pattern" in err[0]


def test_vlm_scripted_counts_bad_spans_and_unreadable(po_data, tmp_path):
    def reply(text, schema, call):
        if "before pouring" in text:
            return '{"answer": "boiled water", "evidence": [[0.5, 3.0], [-1, 2], [5, 4], [1, 50]]}'
        if "went wrong" in text:
            return "the lid"  # no JSON
        return '{"answer": "no", "evidence": []}'

    out = tmp_path / "vlm"
    with scripted_replies(reply, name="po"):
        assert main(["run", "suite=procobject", "planner=vlm", "planner.params.backend=scripted",
                     "planner.params.script=po", "planner.params.model=scripted", f"suite.params.data_dir={po_data}",
                     f"out={out}", "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame().set_index("episode_id")
    v1 = df.loc["1", "values"]
    expected = ground([[0.5, 3.0]], [[0.5, 2.0], [1.5, 3.0]])
    assert v1["iou"] == pytest.approx(expected.iou) == pytest.approx(1.0) and v1["span_problems"] == 3
    assert df.loc["2", "values"]["unreadable"] == 1 and df.loc["2", "values"]["iou"] == 0
    assert df.loc["3", "values"]["iou"] == 0 and df.loc["3", "values"]["iop"] == 0


def test_blind_decodes_no_video(po_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(po_data, data)
    for v in (data / "videos").iterdir():
        v.write_bytes(b"not a video")
    common = ["planner=vlm", "planner.params.backend=scripted", "planner.params.script=poblind",
              "planner.params.model=scripted", f"suite.params.data_dir={data}", "progress=false"]
    with scripted_replies(lambda text, schema, call: '{"answer": "x", "evidence": [[2, 5]]}', name="poblind"):
        assert main(["run", "suite=procobject", "planner.params.visual=none", *common, f"out={tmp_path / 'b'}"]) == 0
        main(["run", "suite=procobject", *common, f"out={tmp_path / 's'}"])
    assert ResultStore(tmp_path / "b", readonly=True).frame()["error_kind"].isna().all()
    assert ResultStore(tmp_path / "s", readonly=True).frame()["error_kind"].notna().all()


def test_official_predictions_from_a_store(po_data, tmp_path):
    from envs.procobject.answer import parse_reply
    from envs.procobject.export import predictions_from_store
    from envs.procobject.official import record

    out = tmp_path / "oracle"
    assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={po_data}", f"out={out}",
                 "progress=false"]) == 0
    path = predictions_from_store(out, tmp_path / "preds.json", data_dir=po_data)
    got = json.loads(path.read_text())
    recs = {str(r["id"]): r for r in json.loads((po_data / "data" / "testing.json").read_text())}
    want = [record(k, parse_reply(json.dumps({"answer": r["answer"], "evidence": r["evidence"]}),
                                  r["clip_end"] - r["clip_start"])) for k, r in sorted(recs.items())]
    assert sorted(got, key=lambda r: str(r["id"])) == want


def test_bad_input_is_one_line_exit_2(po_data, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PROCOBJECT_DATA_DIR", raising=False)
    assert main(["run", "suite=procobject", "planner=oracle", f"out={tmp_path / 'a'}", "progress=false"]) == 2
    assert "PROCOBJECT_DATA_DIR" in capsys.readouterr().err
    assert main(["run", "suite=procobject", "split=train", "planner=oracle", f"suite.params.data_dir={po_data}",
                 f"out={tmp_path / 'b'}", "progress=false"]) == 2
    capsys.readouterr()
    bad = tmp_path / "bad"
    shutil.copytree(po_data, bad)
    recs = json.loads((bad / "data" / "testing.json").read_text())
    recs[2]["clip_end"] = 0.5
    (bad / "data" / "testing.json").write_text(json.dumps(recs))
    assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={bad}",
                 f"out={tmp_path / 'c'}", "progress=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "record 2" in err[0]
    assert not (tmp_path / "c" / "results.sqlite").exists()


def test_harness_judge_gives_j(po_data, tmp_path, capsys):
    from tests.envs.loopback_judge import serve

    def reply_of(text):
        if "dough" in text:
            return "I cannot tell."  # unreadable: counted, no value
        return ('{"contextual_integration": 4, "detail_orientation": 3, "contextual_understanding": 5, '
                '"temporal_understanding": 4}')

    srv, url = serve(reply_of)
    try:
        out = tmp_path / "judged"
        assert main(["run", "suite=procobject", "planner=oracle", f"suite.params.data_dir={po_data}", f"out={out}",
                     "progress=false"]) == 0
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    j = ResultStore(out, readonly=True).judgements().set_index("episode_id")
    assert j.loc["1", "values"]["judge_score"] == pytest.approx(4.0)
    assert j.loc["3", "status"] == "unreadable" and j.loc["3", "values"] == {}
