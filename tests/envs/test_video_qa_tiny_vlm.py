"""cfg_bench and procobject through planner=vlm on the hf backend with a tiny random-weight
Qwen2.5-VL checkpoint (tests/planners/tiny_vlm.py): the clip's sampled frames go through the
real processor and model; whatever the model says is stored and scored (an unreadable reply is
counted, never an error)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")

from harness.cli.entry import main  # noqa: E402
from harness.store import ResultStore  # noqa: E402


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.planners.tiny_vlm import build_base

    return build_base(tmp_path_factory.mktemp("tiny_vlm") / "base")


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("suite", ["cfg_bench", "procobject"])
def test_tiny_vlm_answers_from_frames(suite, tiny_base, cfg_data, po_data, tmp_path):
    data = cfg_data if suite == "cfg_bench" else po_data
    tokens = {}
    for visual in ("video", "none"):
        out = tmp_path / visual
        assert main(["run", f"suite={suite}", "planner=vlm", "limit=2", f"planner.params.model={tiny_base}",
                     "planner.params.max_new_tokens=8", f"suite.params.data_dir={data}", "suite.params.fps=1",
                     "suite.params.max_frames=2", f"planner.params.visual={visual}", "planner.params.video_form=frames", f"out={out}",
                     "progress=false"]) == 0
        with ResultStore(out, readonly=True) as store:
            df, transcripts = store.frame(), store.transcripts()
        assert len(df) == 2 and df["error_kind"].isna().all()
        assert all("unreadable" in v for v in df["values"])  # scored (random text: counted unreadable)
        tokens[visual] = transcripts[0]["prompt_tokens"]
    # the seeing run's prompt holds the two sampled frames (48x32 clips: 4 image tokens each at the
    # tiny processor's 56x56 floor); the blind run's holds none
    assert tokens["video"] - tokens["none"] >= 2 * 4, tokens
