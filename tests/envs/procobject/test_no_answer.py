"""An empty, absent or unreadable answer is *missing* (docs/procobject.md, "What an answer counts
as"): the env delivers None for each judged value, ``harness judge`` never sends it to the judge
and says so, and J counts it 0 -- the same J as an agent whose episodes errored, never a J over
the readable answers only."""

from __future__ import annotations

import json

import pytest

from harness.cli.entry import main
from harness.store import ResultStore
from harness.check.scripted import scripted_replies

GOOD = '{"answer": "boiled water", "evidence": [[0.5, 3.0]]}'
VERDICT = ('{"contextual_integration": 4, "detail_orientation": 4, "contextual_understanding": 4, '
           '"temporal_understanding": 4}')


@pytest.mark.parametrize("bad", ['{"answer": "", "evidence": [[0, 1]]}', '{"evidence": [[0, 1]]}', "the lid"],
                         ids=["empty answer", "no answer field", "not JSON"])
def test_an_answer_without_text_counts_zero_and_is_never_judged(po_data, tmp_path, capsys, bad):
    from tests.envs.loopback_judge import serve

    prompts: list[str] = []
    srv, url = serve(lambda text: prompts.append(text) or VERDICT)
    out = tmp_path / "out"
    try:
        with scripted_replies(lambda text, schema, call: GOOD if "before pouring" in text else bad, name="po-na"):
            assert main(["run", "suite=procobject", "planner=vlm", "planner.params.backend=scripted",
                         "planner.params.script=po-na", "planner.params.model=scripted",
                         f"suite.params.data_dir={po_data}", f"out={out}", "progress=false"]) == 0
        capsys.readouterr()
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
        said = capsys.readouterr().err
        # A rerun judges nothing more: the two answers are not the judge's to fill.
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    assert len(prompts) == 1 and "boiled water" in prompts[0]  # the readable answer only
    assert "2 answer(s) empty, absent or unreadable: nothing to judge" in said
    values = ResultStore(out, readonly=True).frame().set_index("episode_id")["values"]
    assert "judge_score" not in values["1"]  # a readable answer: the judge's to score
    assert [values[q].get("judge_score", "absent") for q in ("2", "3")] == [None, None]
    capsys.readouterr()
    assert main(["table", str(out), "--metrics", "procobject_j", "--format", "json"]) == 0
    cell = json.loads(capsys.readouterr().out)["rows"][0]["cells"]["procobject/test"]["procobject_j"]
    assert cell["value"] == pytest.approx(4.0 / 3)  # 4, 0, 0: counted, not left out
    assert cell["coverage"] == {"n": 3, "valued": 1, "missing": 2, "unscored": 0, "missing_value": 0.0}
    capsys.readouterr()
    assert main(["table", str(out), "--metrics", "procobject_j"]) == 0
    md = capsys.readouterr().out
    assert "| 1.33 |" in md and "not judged yet" not in md and "2 without an answer" in md
