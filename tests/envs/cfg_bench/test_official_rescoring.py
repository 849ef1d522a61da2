"""Our CFG-Bench scores equal what the originals' own judge script computes on the same
predictions, written in their format (envs/cfg_bench/official.py).

The script is judge/judge_deepseek_r1.py of CFG-Bench/CFG-Bench at
b50bb6dbaa53f80444792e4c4924b4b48365b14d. Run with ``--resume`` on our file it scores the
multiple-choice answers itself (exact match, lines 220-231) and only summarizes the open answers
our judge already scored (``is_judged``, lines 195-201; ``summarize_scores``, lines 274-...), so
no judge model is called.

- With ``$CFG_BENCH_SRC`` naming a checkout of that repository, the test runs the script from it
  in a temporary folder and compares its summary with ours.
- Without it, the test compares ours with the summary that script printed on exactly these
  predictions, recorded below with the command used (run from a copy of the script at that
  commit; its ``CFG_JUDGE.py`` prompt is not read on these paths).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envs.cfg_bench.data import load_questions
from envs.cfg_bench.official import to_official, write_official
from envs.cfg_bench.scoring import extract_choice, mc_correct, parse_judge_reply, summarize_mc, summarize_open

OPTS = ["lifts the lid", "pours the water", "stirs the pot"]

#: (task, question, correct answer, options, model reply, judge reply or None)
CASES = [
    ("TR", "q1", "pours the water", OPTS, '{"result": "pours the water"}', None),
    ("TR", "q2", "stirs the pot", OPTS, '```json\n{"result": "lifts the lid"}\n```', None),
    ("TR", "q3", "lifts the lid", OPTS, '{"result": " lifts the lid "}', None),
    ("TR", "q4", "lifts the lid", OPTS, "I am not sure.", None),                       # unreadable
    ("FAU", "q5", "stirs the pot", OPTS, '{"result": "stirs the pot"}', None),
    ("FAU", "q6", "stirs the pot", OPTS, '{"result": "STIRS THE POT"}', None),        # unreadable
    ("CR", "q7", "pours the water", OPTS, '{"result": "stirs the pot"}', None),
    ("CRS", "q8", "It is the other way round.", [], '{"answer": "No: the lid comes off first."}',
     '{"premise": "corrected", "correctness": 8, "detailedness": 5}'),
    ("CRS", "q9", "It is the other way round.", [], '{"answer": "Because of the heat."}',
     '{"premise": "accepted", "correctness": 6, "detailedness": 7}'),                  # gate: 0 and 0
    ("CIA", "q10", "She never cuts bread.", [], '{"answer": "She slices a tomato, not bread."}',
     '{"premise": "rejected", "correctness": 9, "detailedness": 6}'),
    ("FI", "q11", "To cool it.", [], '{"answer": "To cool the soup."}', '{"correctness": 7, "detailedness": 4}'),
    ("FI", "q12", "To cool it.", [], '{"answer": "To mix it."}', '{"correctness": 2, "detailedness": 3}'),
    ("CEU", "q13", "Slower.", [], '{"answer": "It would be slower."}', '{"correctness": 10, "detailedness": 8}'),
]

# The script's summary CSV on these predictions, recorded with:
#   cd <tmp> && python <CFG-Bench>/judge/judge_deepseek_r1.py --input ours.json --qa-file qa_pairs.json \
#     --output judged.json --resume --save-summary --summary-output summary.csv \
#     --task_type FAU CIA TR CR CRS FI CEU
RECORDED_SUMMARY = """\
task_type,n,accuracy,avg_correctness,avg_detailedness,avg_total_score
FAU,1,1.0,,,
CIA,1,,9.0,6.0,7.5
TR,3,0.6666666666666666,,,
CR,1,0.0,,,
CRS,2,,4.0,2.5,3.25
FI,2,,4.5,3.5,4.0
CEU,1,,10.0,8.0,9.0
"""


def _build(tmp: Path):
    items = []
    for task, q, gold, opts, _, _ in CASES:
        item = {"video_name": f"{q}.mp4", "question": q, "correct_answer": gold, "task_type": task}
        if opts:
            item["options"] = opts
        items.append(item)
    (tmp / "qa_pairs.json").write_text(json.dumps(items))
    qs = load_questions(tmp)
    answers, verdicts, ours = {}, {}, {}
    for q, (task, _, gold, opts, reply, judge) in zip(qs, CASES):
        if q.is_mc:
            answers[q.qid] = a = extract_choice(reply, q.options)
            ours.setdefault(task, []).append(("mc", a, gold))
        else:
            answers[q.qid] = json.loads(reply)["answer"]
            verdicts[q.qid] = v = parse_judge_reply(judge, task)
            ours.setdefault(task, []).append(("open", v, None))
    write_official(tmp / "ours.json", to_official(qs, answers, "tiny-vlm", verdicts))
    return ours


def _our_summary(ours) -> dict[str, dict]:
    out = {}
    for task, rows in ours.items():
        if rows[0][0] == "mc":
            s = summarize_mc((a, gold) for _, a, gold in rows)
            out[task] = {"n": s["n"] - s["unreadable"], "accuracy": s["accuracy_readable"]}
        else:
            s = summarize_open(v for _, v, _ in rows)
            out[task] = {"n": s["judged"], "avg_correctness": s["correctness"],
                         "avg_detailedness": s["detailedness"], "avg_total_score": s["score"]}
    return out


def _read_csv(text: str) -> dict[str, dict]:
    out = {}
    for row in csv.DictReader(text.splitlines()):
        task = row.pop("task_type")
        out[task] = {k: (int(v) if k == "n" else float(v)) for k, v in row.items() if v != ""}
    return out


def test_our_scores_equal_the_originals_script(tmp_path):
    ours = _build(tmp_path)
    mine = _our_summary(ours)
    src = os.environ.get("CFG_BENCH_SRC")
    if src:
        script = Path(src).expanduser() / "judge" / "judge_deepseek_r1.py"
        if not script.is_file():
            pytest.fail(f"$CFG_BENCH_SRC={src} holds no judge/judge_deepseek_r1.py")
        pytest.importorskip("openai", reason="the openai client: the `models` extra")
        env = {k: v for k, v in os.environ.items() if k not in ("DASHSCOPE_API_KEY", "OPENAI_BASE_URL")}
        subprocess.run([sys.executable, str(script), "--input", "ours.json", "--qa-file", "qa_pairs.json",
                        "--output", "judged.json", "--resume", "--save-summary", "--summary-output", "summary.csv",
                        "--task_type", *sorted(mine)], cwd=tmp_path, env=env, check=True, capture_output=True,
                       timeout=120)
        theirs = _read_csv((tmp_path / "summary.csv").read_text())
    else:
        theirs = _read_csv(RECORDED_SUMMARY)
    assert set(theirs) == set(mine)
    for task in theirs:
        assert theirs[task] == pytest.approx(mine[task]), task


def test_where_we_differ_from_the_originals_on_purpose(tmp_path):
    """Unreadable multiple-choice answers: left out of their count, wrong in ours (TR: 2 of 4
    here, 2 of 3 there); the gate: the same S either way (their judge writes 0 and 0)."""
    ours = _build(tmp_path)
    tr = summarize_mc((a, gold) for _, a, gold in ours["TR"])
    assert (tr["accuracy"], tr["accuracy_readable"], tr["unreadable"]) == (0.5, 2 / 3, 1)
    assert sum(mc_correct(a, g) for _, a, g in ours["TR"]) == 2
    crs = summarize_open(v for _, v, _ in ours["CRS"])
    assert (crs["gate_failed"], crs["score"]) == (1, 3.25)  # ((8 + 5) / 2 + 0) / 2
