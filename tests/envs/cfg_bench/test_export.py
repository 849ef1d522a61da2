"""The command-line CFG-Bench export carries the store's judge verdicts as the originals' ``eval``
objects (envs/cfg_bench/export.py), so their judge script run with ``--resume`` only summarises.

What their script counts as judged (CFG-Bench/CFG-Bench at b50bb6d, judge/judge_deepseek_r1.py
``is_judged``, lines 195-201) is written out below as :func:`originals_is_judged`; what it skips
altogether (an empty result, lines 170-192) as :func:`originals_candidates`. With
``$CFG_BENCH_SRC`` naming a checkout of that repository, the script itself is run on the export
with no API key: it fails if it has anything left to judge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envs.cfg_bench.export import main as export_main
from harness.cli.entry import main
from tests.envs.loopback_judge import serve


def originals_is_judged(evaluation: dict) -> bool:
    judge = evaluation.get("eval")
    if not isinstance(judge, dict):
        return False
    if judge.get("type") == "close_ended" and isinstance(judge.get("is_correct"), bool):
        return True
    return isinstance(judge.get("correctness"), int) or isinstance(judge.get("detailedness"), int)


def originals_candidates(items: list[dict]) -> list[dict]:
    """The evaluation entries their script looks at: a non-empty ``result`` (multiple choice) or
    ``open_ended_result`` (open-ended)."""
    out = []
    for item in items:
        key = "result" if item.get("options") else "open_ended_result"
        out += [e for e in item["evaluation"] if isinstance(e.get(key), str) and e[key].strip()]
    return out


def _judged_store(cfg_data, tmp_path, reply_of, name="judge-a"):
    srv, url = serve(reply_of)
    out = tmp_path / "store"
    try:
        assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={out}",
                     "progress=false"]) == 0
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.name={name}",
                     f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    return out, url


def _reply(text):
    if "Premise check" in text:
        return '{"premise": "accepted", "correctness": 7, "detailedness": 5, "rationale": "r"}'
    return '{"correctness": 8, "detailedness": 5, "rationale": "r"}'


def test_the_export_carries_every_verdict_so_their_script_only_summarises(cfg_data, tmp_path, capsys):
    out, _ = _judged_store(cfg_data, tmp_path, _reply)
    capsys.readouterr()
    assert export_main([str(out), str(tmp_path / "res.json"), "--data-dir", str(cfg_data), "--model", "m"]) == 0
    err = capsys.readouterr().err
    assert "2 of 2 open answers carry a readable verdict; the originals' script (--resume) only summarises" in err
    items = json.loads((tmp_path / "res.json").read_text())
    evals = {i["task_type"]: i["evaluation"][0].get("eval") for i in items}
    assert evals["CIA"] == {"correctness": 0, "detailedness": 0, "gate": False, "premise": "accepted"}  # gate failed
    assert evals["GI"] == {"correctness": 8, "detailedness": 5, "gate": None, "premise": ""}
    assert evals["FAU"] == {"type": "close_ended", "prediction": "right hand", "correct_answer": "right hand",
                            "is_correct": True, "accuracy": 1.0}
    candidates = originals_candidates(items)
    assert len(candidates) == 5 and all(originals_is_judged(e) for e in candidates)
    src = os.environ.get("CFG_BENCH_SRC")
    if src:  # their script, no API key: it raises if anything is left to judge
        pytest.importorskip("openai", reason="the openai client: the `models` extra")
        (tmp_path / "qa_pairs.json").write_text((Path(cfg_data) / "qa_pairs.json").read_text())
        env = {k: v for k, v in os.environ.items() if k not in ("DASHSCOPE_API_KEY", "OPENAI_BASE_URL")}
        subprocess.run([sys.executable, str(Path(src).expanduser() / "judge" / "judge_deepseek_r1.py"), "--input",
                        "res.json", "--qa-file", "qa_pairs.json", "--output", "judged.json", "--resume"],
                       cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)


def test_an_unreadable_verdict_is_the_originals_judge_error(cfg_data, tmp_path, capsys):
    out, _ = _judged_store(cfg_data, tmp_path, lambda text: "no idea" if "Premise check" in text else _reply(text))
    capsys.readouterr()
    assert export_main([str(out), str(tmp_path / "res.json"), "--data-dir", str(cfg_data)]) == 0
    err = capsys.readouterr().err
    assert ("1 of 2 open answers carry a readable verdict; 1 unreadable (written as a judge error); "
            "the originals' script (--resume) would judge 1 again") in err
    items = {i["task_type"]: i for i in json.loads((tmp_path / "res.json").read_text())}
    cia = items["CIA"]["evaluation"][0]["eval"]
    assert cia["status"] == "error" and cia["correctness"] is None and not originals_is_judged(items["CIA"]["evaluation"][0])


def test_two_judges_need_a_name(cfg_data, tmp_path, capsys):
    out, url = _judged_store(cfg_data, tmp_path, _reply)
    srv, url = serve(lambda text: '{"premise": "rejected", "correctness": 3, "detailedness": 2}'
                     if "Premise check" in text else '{"correctness": 3, "detailedness": 2}')
    try:
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-y", "judge.name=judge-b",
                     f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    capsys.readouterr()
    assert export_main([str(out), str(tmp_path / "res.json"), "--data-dir", str(cfg_data)]) == 2
    assert "2 judges judged this run" in capsys.readouterr().err
    assert export_main([str(out), str(tmp_path / "res.json"), "--data-dir", str(cfg_data), "--judge", "judge-b"]) == 0
    items = {i["task_type"]: i for i in json.loads((tmp_path / "res.json").read_text())}
    assert items["GI"]["evaluation"][0]["eval"]["correctness"] == 3
    assert export_main([str(out), str(tmp_path / "res.json"), "--data-dir", str(cfg_data), "--judge", "nobody"]) == 2
    assert "no verdicts of judge 'nobody'" in capsys.readouterr().err
