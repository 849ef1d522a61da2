"""``harness run --dry-run`` lists every missing prerequisite of the requested runs in one
message (checkpoints, data folders, optional extras, servers) and exits 2; with everything
set it prints the runs without reading a checkpoint. Real subprocesses of the CLI, with an
environment where nothing is set (no checkpoint variables, no data folder, an empty cache)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Variables that would point the runs at a checkpoint or a data folder.
UNSET = ("EB_ALFRED_DATA_DIR", "BASE_MODEL", "FAVOR_SFT_MODEL", "FAVOR_SFT_ADAPTER", "CFG_SFT_MODEL",
         "CFG_SFT_ADAPTER", "BASE_SERVED_CHECKPOINT", "FAVOR_SFT_SERVED_CHECKPOINT", "CFG_SFT_SERVED_CHECKPOINT",
         "HARNESS_DATA_DIR")
#: Blocks the EB-Manipulation extra's modules, as on an install without it.
BLOCK = "import sys; sys.modules['mujoco'] = None; sys.modules['robosuite'] = None; "


def harness(tmp_path: Path, *args: str, block: bool = False, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in UNSET}
    base.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "cache"), **env)
    code = (BLOCK if block else "import sys; ") + "from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=base,
                          capture_output=True, text=True, timeout=300)


def test_readme_dry_run_with_nothing_set_lists_every_missing_prerequisite(tmp_path):
    res = harness(tmp_path, "run", "+experiment=cfg_bench_table4", "out=o", "--dry-run", block=True)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    err = res.stderr
    assert err.startswith("harness: error: 5 prerequisites of the requested runs are missing"), err
    for needle in ("variant base has no checkpoint: set $BASE_MODEL", "variant favor_sft has no checkpoint",
                   "variant cfg_sft has no checkpoint", "no EB-ALFRED data folder is set",
                   "suite 'eb_manipulation' needs"):
        assert sum(needle in line for line in err.splitlines()) == 1, (needle, err)
    assert "(18 of the 33 runs)" in err and "(15 of the 33 runs)" in err
    assert not (tmp_path / "o").exists()


def test_dry_run_with_everything_set_prints_the_runs_without_reading_a_checkpoint(tmp_path, data_dir):
    # Empty folders: a run would fail to load them; the dry run never opens them.
    env = {"EB_ALFRED_DATA_DIR": str(data_dir)}
    for name in ("BASE_MODEL", "FAVOR_SFT_MODEL", "CFG_SFT_MODEL"):
        (tmp_path / name).mkdir()
        env[name] = str(tmp_path / name)
    res = harness(tmp_path, "run", "+experiment=cfg_bench_table4", "out=o", "--dry-run", **env)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 33 and not (tmp_path / "o").exists()
    # ... and a checkpoint path that is not there is missing
    env["CFG_SFT_MODEL"] = str(tmp_path / "gone")
    res = harness(tmp_path, "run", "+experiment=cfg_bench_table4", "out=o", "--dry-run", **env)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == (f"harness: error: variant cfg_sft: planner.params.model={tmp_path / 'gone'} "
                                  "does not exist (11 of the 33 runs)")


def test_dry_run_names_a_server_that_does_not_answer(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["run", "--dry-run", "planner=vlm", "planner.params.backend=openai", "planner.params.model=m",
            "split=seen", "limit=1", "out=o"]
    res = harness(tmp_path, *args, f"planner.params.base_url=http://127.0.0.1:{port}/v1")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert f"no server answers at http://127.0.0.1:{port}/v1 (planner.params.base_url)" in res.stderr
    with socket.socket() as s:  # ... and one that does is not
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = harness(tmp_path, *args, f"planner.params.base_url=http://127.0.0.1:{port}/v1")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "o").exists()
