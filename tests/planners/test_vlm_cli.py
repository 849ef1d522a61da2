"""End to end: ``harness run -m variant=base,favor_sft,cfg_sft`` with the tiny checkpoints, then ``harness table``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.config import compose
from harness.run.spec import to_run_spec
from tests.conftest import REPO_ROOT


def test_variants_choose_the_vlm_planner_and_their_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASE_MODEL", "/ckpt/base")
    monkeypatch.setenv("CFG_SFT_ADAPTER", "/ckpt/cfg")
    monkeypatch.delenv("FAVOR_SFT_ADAPTER", raising=False)
    monkeypatch.setenv("FAVOR_SFT_MODEL", "/ckpt/favor_full")
    monkeypatch.delenv("CFG_SFT_MODEL", raising=False)
    specs = {v: to_run_spec(compose([f"variant={v}", "split=base"])) for v in ("base", "favor_sft", "cfg_sft")}
    assert {s.agent for s in specs.values()} == {"vlm"}
    assert {v: s.variant for v, s in specs.items()} == {"base": "base", "favor_sft": "favor_sft", "cfg_sft": "cfg_sft"}
    assert (specs["base"].agent_params["model"], specs["base"].agent_params["adapter"]) == ("/ckpt/base", None)
    assert (specs["favor_sft"].agent_params["model"], specs["favor_sft"].agent_params["adapter"]) == (
        "/ckpt/favor_full", None)
    assert (specs["cfg_sft"].agent_params["model"], specs["cfg_sft"].agent_params["adapter"]) == (
        "/ckpt/base", "/ckpt/cfg")
    # Command-line overrides win; planner defaults stay visible.
    spec = to_run_spec(compose(["variant=base", "variant.params.model=/other", "planner.params.parser=lenient"]))
    assert spec.agent_params["model"] == "/other" and spec.agent_params["parser"] == "lenient"
    assert spec.agent_params["max_new_tokens"] == 2048


@pytest.mark.slow
@pytest.mark.ci
def test_multirun_of_three_variants_prints_a_three_row_table(
        tiny_ckpts: dict[str, Path], tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "EB_ALFRED_DATA_DIR": str(data_dir),
           "FAVOR_SFT_ADAPTER": str(tiny_ckpts["favor"]), "CFG_SFT_ADAPTER": str(tiny_ckpts["cfg"])}
    for name in ("BASE_MODEL", "FAVOR_SFT_MODEL", "CFG_SFT_MODEL"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "harness.cli", "run", "-m", "variant=base,favor_sft,cfg_sft", "suite=eb_alfred",
           "split=base", "limit=1", f"variant.params.model={tiny_ckpts['base']}",
           "planner.params.max_new_tokens=4", "planner.params.num_examples=0", "planner.params.image_size=112",
           f"out={out}", "progress=false"]
    run = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    table = subprocess.run([sys.executable, "-m", "harness.cli", "table", str(out)], cwd=REPO_ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("| ") and not line.startswith("| variant")]
    assert [r.split("|")[1].strip() for r in rows] == ["base", "cfg_sft", "favor_sft"], table.stdout
    assert "eb_alfred/base SR" in table.stdout
    # Same episodes for every variant, three distinct run identities (the adapters differ).
    import sqlite3

    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT variant, episode_id, run_id FROM episodes").fetchall()
    con.close()
    assert sorted({(v, e) for v, e, _ in rows}) == [("base", "base/00"), ("cfg_sft", "base/00"),
                                                    ("favor_sft", "base/00")]
    assert len({r for _, _, r in rows}) == 3
