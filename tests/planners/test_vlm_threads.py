"""Intra-op threads of the in-process (``hf``) model: chosen from the cores the run has
(planners/vlm/threads.py), overridable by ``num_threads``, recorded in provenance."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from planners.vlm import threads


@pytest.mark.parametrize(("cores", "env_workers", "expected"), [
    (2, 0, 2),    # local executor: envs step in the model's process between its calls
    (2, 1, 1),    # one worker process keeps one of the two cores
    (2, 4, 1),    # more workers than cores: still one thread, never zero
    (16, 4, 12),
    (1, 0, 1),
])
def test_threads_are_the_cores_left_by_env_workers(cores: int, env_workers: int, expected: int) -> None:
    assert threads.intra_op_threads(cores, env_workers) == expected


def test_available_cores_follow_affinity_and_cgroup_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not the machine's core count: the process's affinity mask, capped by a container's quota."""
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(threads, "CGROUP", tmp_path)
    assert threads.available_cores() == 4                   # no cgroup files: affinity alone
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.available_cores() == 4                   # v2, unlimited
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.available_cores() == 2                   # v2, 1.5 CPUs -> 2
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.available_cores() == 1                   # v1, 1 CPU
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert threads.available_cores() == 4                   # v1, unlimited


@pytest.mark.parametrize("bad", [0, -2, "two", 1.5, True])
def test_num_threads_override_is_validated(bad: object) -> None:
    assert threads.resolve_num_threads(3, env_workers=5, cores=2) == 3  # an override is used as given
    assert threads.resolve_num_threads("auto", env_workers=1, cores=4) == 3
    with pytest.raises(ValueError, match="num_threads"):
        threads.resolve_num_threads(bad)


@pytest.fixture
def restore_torch_threads():
    torch = pytest.importorskip("torch", reason="torch: the `models` extra")
    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


def test_hf_backend_sets_threads_and_the_cli_records_them(
        tiny_ckpts: dict[str, Path], tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
        restore_torch_threads) -> None:
    """The backend sets torch's threads at load and when the run says how many env workers share
    the cores; ``num_threads`` fixes them; a run through the CLI records the count in force in its
    provenance. Mutations guarded: the count not applied, the workers not passed by the CLI, the
    override ignored, provenance not recording it."""
    torch = restore_torch_threads
    from harness.cli.entry import main
    from planners.vlm.planner import VLMPlanner

    monkeypatch.setattr(threads, "available_cores", lambda: 3)
    planner = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), max_new_tokens=2, num_examples=0,
                         image_size=112)
    assert torch.get_num_threads() == 3
    assert planner.share_cores(2) == 1 and torch.get_num_threads() == 1
    fixed = VLMPlanner(suite="eb_alfred", model=str(tiny_ckpts["base"]), max_new_tokens=2, num_examples=0,
                       image_size=112, num_threads=2)
    assert fixed.share_cores(2) == 2 and torch.get_num_threads() == 2

    monkeypatch.setenv("EB_ALFRED_DATA_DIR", str(data_dir))
    out = tmp_path / "out"
    common = ["run", "suite=eb_alfred", "split=base", "limit=1", "planner=vlm",
              f"planner.params.model={tiny_ckpts['base']}", "planner.params.max_new_tokens=2",
              "planner.params.num_examples=0", "planner.params.image_size=112", f"out={out}", "progress=false"]
    assert main([*common, "executor=process", "executor.num_workers=2", "seed=1"]) == 0
    assert main([*common, "planner.params.num_threads=2", "seed=2"]) == 0
    with sqlite3.connect(out / "results.sqlite") as con:
        recorded = [json.loads(p)["intra_op_threads"]
                    for (p,) in con.execute("SELECT provenance FROM sessions ORDER BY session_id")]
    assert recorded == [1, 2]
