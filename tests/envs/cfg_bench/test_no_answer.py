"""An open answer whose JSON holds no answer text (the field empty, absent or not text) is *no
answer* (docs/cfg_bench.md, "What an answer counts as"): never sent to the judge, counted 0 in S;
a reply that is not JSON is judged as text (the originals' rule)."""

from __future__ import annotations

import json

import pytest

from envs.cfg_bench.prompt import open_answer
from harness.cli.entry import main
from harness.store import ResultStore
from harness.check.scripted import scripted_replies


@pytest.mark.parametrize("reply, answer", [
    ('{"answer": ""}', ""), ('{"answer": "   "}', ""), ('{"reason": "the video is dark"}', ""), ('{"answer": 5}', ""),
    ('```json\n{"answer": ""}\n```', ""), ("", ""), ('{"answer": " He stirs. "}', "He stirs."),
    ('{"open_ended_result": "He stirs."}', "He stirs."), ("He stirs the tea.", "He stirs the tea."),
    ("[1, 2]", "[1, 2]"),
])
def test_open_answer_reads_a_json_shell_without_text_as_no_answer(reply, answer):
    assert open_answer(reply) == answer


@pytest.mark.parametrize("bad", ['{"answer": ""}', '{"reason": "dark"}'], ids=["empty answer", "no answer field"])
def test_an_open_reply_without_an_answer_counts_zero_and_is_never_judged(cfg_data, tmp_path, capsys, bad):
    from tests.envs.loopback_judge import serve

    def reply(text, schema, call):
        if "Options:" in text:
            return '{"result": "right hand"}'
        return '{"answer": "He cuts it with a knife, not a spoon."}' if "spoon" in text else bad

    asked: list[str] = []
    srv, url = serve(lambda text: asked.append(text) or
                     '{"premise": "corrected", "correctness": 6, "detailedness": 4, "rationale": "r"}')
    out = tmp_path / "out"
    try:
        with scripted_replies(reply, name="cfg-na"):
            assert main(["run", "suite=cfg_bench", "planner=vlm", "planner.params.backend=scripted",
                         "planner.params.script=cfg-na", "planner.params.model=scripted",
                         f"suite.params.data_dir={cfg_data}", f"out={out}", "progress=false"]) == 0
        capsys.readouterr()
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    assert len(asked) == 1 and "knife" in asked[0]  # the GI reply without an answer was not sent
    assert "1 answer(s) empty, absent or unreadable: nothing to judge" in capsys.readouterr().err
    gi = ResultStore(out, readonly=True).frame().set_index("task_type").loc["GI"]
    assert gi["extra"]["answer"] == "" and gi["values"]["judge_score"] is None
    assert main(["table", str(out), "--metrics", "cfg_s", "--format", "json"]) == 0
    cell = json.loads(capsys.readouterr().out)["rows"][0]["cells"]["cfg_bench/all"]["cfg_s"]
    assert cell["value"] == pytest.approx(5.0 / 2)  # CIA 5, GI 0: counted, never left out
    assert cell["coverage"]["missing"] == 1 and cell["coverage"]["unscored"] == 0
