"""The cfg_bench suite end to end on a generated data folder: check_suite, harness run with the
oracle and random agents, the vlm planner (scripted backend; visual=none decodes no video),
harness table --by task_type, and bad input (unknown split, malformed file, missing data)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.cli.entry import main
from harness.store import ResultStore
from harness.check.conformance import SUITE_CHECKS, check_suite
from harness.check.scripted import scripted_replies


def run(args, capsys=None):
    code = main(args)
    return code


def test_check_suite_passes(cfg_data):
    # the default split (all), every question: multiple-choice and open-ended (gated) alike
    report = check_suite("cfg_bench", suite_params={"data_dir": str(cfg_data)}, episodes=5)
    assert list(report.passed) == list(SUITE_CHECKS), report


def test_check_suite_passes_on_every_split(cfg_data):
    """Open-ended splits too: a free-text answer (harness.spaces.AnswerText) need not refuse an
    unknown text, and an empty one is refused."""
    from envs.cfg_bench.suite import CFGBenchSuite

    suite = CFGBenchSuite(data_dir=str(cfg_data))
    splits = [s for s in suite.splits() if len(suite.episodes(s))]
    assert {"gi", "cia", "fau"} <= set(splits)
    for split in splits:
        report = check_suite("cfg_bench", suite_params={"data_dir": str(cfg_data)}, split=split, episodes=5,
                             checks=["contract", "probe", "determinism"])
        assert report.passed == ["contract", "probe", "determinism"], (split, report)


def test_oracle_scores_every_mc_question_and_keeps_open_answers(cfg_data, tmp_path):
    out = tmp_path / "oracle"
    assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={out}",
                 "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame()
    assert len(df) == 5 and df["error_kind"].isna().all()
    mc = df[df["task_type"].isin(["FAU", "TR", "CR"])]
    assert [v["correct"] for v in mc["values"]] == [1, 1, 1]
    assert [v["unreadable"] for v in mc["values"]] == [0, 0, 0]
    gi = df[df["task_type"] == "GI"].iloc[0]
    assert gi["extra"]["answer"] == "To make tea." and gi["values"] == {}


def test_random_is_seeded_and_table_breaks_down_by_task(cfg_data, tmp_path, capsys):
    out = tmp_path / "random"
    for _ in range(2):  # the second run resumes: nothing new
        assert main(["run", "suite=cfg_bench", "planner=random", f"suite.params.data_dir={cfg_data}", f"out={out}",
                     "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame()
    assert len(df) == 5
    capsys.readouterr()
    assert main(["table", str(out), "--by", "task_type"]) == 0
    text = capsys.readouterr().out
    assert "FAU" in text and "TR" in text and "Acc" in text


def test_vlm_scripted_reads_mc_replies_strictly(cfg_data, tmp_path):
    def reply(text, schema, call):
        if "Which hand" in text:
            return '{"result": "right hand"}'
        if "What happens first" in text:
            return "pour"  # not JSON: unreadable, counted
        return '{"answer": "a scripted answer"}'

    out = tmp_path / "vlm"
    with scripted_replies(reply, name="cfg"):
        assert main(["run", "suite=cfg_bench", "planner=vlm", "planner.params.backend=scripted",
                     "planner.params.script=cfg", "planner.params.model=scripted", f"suite.params.data_dir={cfg_data}",
                     f"out={out}", "progress=false"]) == 0
    df = ResultStore(out, readonly=True).frame().set_index("task_type")
    assert df.loc["FAU", "values"] == {"correct": 1, "unreadable": 0}
    assert df.loc["TR", "values"] == {"correct": 0, "unreadable": 1}
    assert df.loc["GI", "extra"]["answer"] == "a scripted answer"


def test_blind_decodes_no_video(cfg_data, tmp_path):
    """visual=none: the videos are replaced by bytes no decoder reads, and the run still answers;
    with visual=video the same data fails those questions' records, not the run."""
    data = tmp_path / "data"
    shutil.copytree(cfg_data, data)
    for v in (data / "videos").iterdir():
        v.write_bytes(b"not a video")
    seen = []

    def reply(text, schema, call):
        seen.append(text)
        return '{"result": "pour"}'

    common = ["planner=vlm", "planner.params.backend=scripted", "planner.params.script=blind",
              "planner.params.model=scripted", f"suite.params.data_dir={data}", "progress=false"]
    with scripted_replies(reply, name="blind"):
        assert main(["run", "suite=cfg_bench", "planner.params.visual=none", *common,
                     f"out={tmp_path / 'blind'}"]) == 0
        df = ResultStore(tmp_path / "blind", readonly=True).frame().set_index("task_type")
        assert df["error_kind"].isna().all() and df.loc["TR", "values"]["correct"] == 1
        main(["run", "suite=cfg_bench", *common, f"out={tmp_path / 'seeing'}"])
    df = ResultStore(tmp_path / "seeing", readonly=True).frame()
    assert len(df) == 5 and df["error_kind"].notna().all()
    assert "not a readable video" in df["error_message"].iloc[0]


def test_bad_input_is_one_line_exit_2(cfg_data, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CFG_BENCH_DATA_DIR", raising=False)
    assert main(["run", "suite=cfg_bench", "planner=oracle", f"out={tmp_path / 'a'}", "progress=false"]) == 2
    assert "CFG_BENCH_DATA_DIR" in capsys.readouterr().err
    assert main(["run", "suite=cfg_bench", "split=temporal", "planner=oracle", f"suite.params.data_dir={cfg_data}",
                 f"out={tmp_path / 'b'}", "progress=false"]) == 2
    assert "did you mean 'temporal_causal'" in capsys.readouterr().err
    bad = tmp_path / "bad"
    shutil.copytree(cfg_data, bad)
    items = json.loads((bad / "qa_pairs.json").read_text())
    items[1]["task_type"] = "XYZ"
    (bad / "qa_pairs.json").write_text(json.dumps(items))
    assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={bad}",
                 f"out={tmp_path / 'c'}", "progress=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "item 1" in err[0]
    assert not (tmp_path / "c" / "results.sqlite").exists()


def test_harness_judge_fills_s_c_d_and_the_gate(cfg_data, tmp_path, capsys):
    """Open-ended answers judged by a loopback judge: the gated CIA answer that accepts the premise
    gets S = 0 and gate 0 (scoring.open_score); GI gets S = (C + D) / 2; MC questions are not judged."""
    from tests.envs.loopback_judge import serve

    def reply_of(text):
        if "Premise check" in text:
            return '{"premise": "accepted", "correctness": 7, "detailedness": 5, "rationale": "r"}'
        return '{"correctness": 8, "detailedness": 5, "rationale": "r"}'

    srv, url = serve(reply_of)
    try:
        out = tmp_path / "judged"
        assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={out}",
                     "progress=false"]) == 0
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    j = ResultStore(out, readonly=True).judgements().set_index("episode_id")
    assert len(j) == 2 and set(j.status) == {"ok"}
    by_task = {ResultStore(out, readonly=True).frame().set_index("episode_id").loc[e, "task_type"]: v
               for e, v in j["values"].items()}
    assert by_task["CIA"] == {"correctness": 0.0, "detailedness": 0.0, "judge_score": 0.0, "gate": 0.0}
    assert by_task["GI"] == {"correctness": 8.0, "detailedness": 5.0, "judge_score": 6.5}
    capsys.readouterr()
    assert main(["table", str(out), "--by", "task_type", "--metrics", "accuracy,cfg_s,cfg_gate"]) == 0
    text = capsys.readouterr().out
    assert "| CIA |" in text and "S" in text and "Gate" in text


def test_official_results_from_a_store(cfg_data, tmp_path):
    """The store's answers written in the originals' format equal what official.py makes of the same
    answers (MC read by the strict rule; open-ended as given)."""
    from envs.cfg_bench.data import load_questions
    from envs.cfg_bench.export import official_from_store
    from envs.cfg_bench.official import to_official
    from envs.cfg_bench.scoring import extract_choice

    out = tmp_path / "random"
    assert main(["run", "suite=cfg_bench", "planner=random", "planner.params.seed=3",
                 f"suite.params.data_dir={cfg_data}", f"out={out}", "progress=false"]) == 0
    got = json.loads(official_from_store(out, tmp_path / "res.json", data_dir=cfg_data, model="m").read_text())
    df = ResultStore(out, readonly=True).frame().set_index("episode_id")
    qs = load_questions(cfg_data)
    answers = {q.qid: extract_choice(df.loc[q.qid, "extra"]["answer"], q.options) if q.is_mc
               else df.loc[q.qid, "extra"]["answer"] for q in qs}
    assert got == to_official(qs, answers, "m")
    mc = [g for g in got if "options" in g]
    assert len(mc) == 3 and all(g["evaluation"][0]["result"] in g["options"] for g in mc)
    from envs.cfg_bench.export import main as export_main
    assert export_main([str(tmp_path / "nothing"), str(tmp_path / "x.json"), "--data-dir", str(cfg_data)]) == 2


def test_empty_open_answers_are_not_sent_to_the_judge(cfg_data, tmp_path, capsys):
    from tests.envs.loopback_judge import serve

    asked = []
    srv, url = serve(lambda text: asked.append(text) or '{"correctness": 1, "detailedness": 1}')
    try:
        out = tmp_path / "random"
        assert main(["run", "suite=cfg_bench", "planner=random", f"suite.params.data_dir={cfg_data}", f"out={out}",
                     "progress=false"]) == 0
        capsys.readouterr()
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 2
    finally:
        srv.shutdown()
        srv.server_close()
    assert "no stored answers to judge" in capsys.readouterr().err and asked == []


def test_probe_refuses_an_empty_answer_scored_as_right(cfg_data, monkeypatch):
    """The planted bug: a multiple-choice question takes an empty answer as a valid, right one."""
    from envs import video_qa
    from envs.cfg_bench.suite import CFGBenchEnv
    from harness.check.conformance import ConformanceError

    original = CFGBenchEnv.answer

    def answer(self, episode, action):
        if video_qa.text_of(action).strip():
            return original(self, episode, action)
        return video_qa.Answered({"correct": 1, "unreadable": 0}, True, False, "answered", "")

    monkeypatch.setattr(CFGBenchEnv, "answer", answer)
    with pytest.raises(ConformanceError, match=r"probe: episode \S+: the empty answer '' succeeded"):
        check_suite("cfg_bench", suite_params={"data_dir": str(cfg_data)}, split="fau", checks=["probe"])
