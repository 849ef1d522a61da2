"""``harness run --dry-run`` lists every missing prerequisite of the requested runs in one
message (checkpoints, data folders of every suite, optional extras of suites, agents and
model backends, servers, variants that would run another variant's weights) and exits 2;
with everything set it prints the runs without reading a checkpoint. ``limit=0`` is refused
before anything is written. Real subprocesses of the CLI, with an environment where nothing
is set (no checkpoint variables, no data folder, an empty cache); an install without an extra
is one whose modules are blocked (``sys.modules[name] = None``: the import fails as if absent)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from tests.helpers import require_extras

REPO = Path(__file__).resolve().parents[3]
#: Variables that would point the runs at a checkpoint or a data folder.
UNSET = ("EB_ALFRED_DATA_DIR", "BASE_MODEL", "FAVOR_SFT_MODEL", "FAVOR_SFT_ADAPTER", "CFG_SFT_MODEL",
         "CFG_SFT_ADAPTER", "BASE_SERVED_CHECKPOINT", "FAVOR_SFT_SERVED_CHECKPOINT", "CFG_SFT_SERVED_CHECKPOINT",
         "HARNESS_DATA_DIR", "CFG_BENCH_DATA_DIR", "PROCOBJECT_DATA_DIR", "ALFRED_DATA_DIR", "VLA_SERVE_COMMAND",
         "BASE_VLA", "FAVOR_SFT_VLA", "CFG_SFT_VLA", "BASE_VLA_URL", "FAVOR_SFT_VLA_URL", "CFG_SFT_VLA_URL")
#: The modules of each extra a test installs without (blocked).
EXTRA_MODULES = {"eb_manipulation": ("mujoco", "robosuite"), "models": ("torch", "transformers", "openai"),
                 "libero": ("libero", "robosuite", "mujoco", "cv2", "bddl", "av")}


def harness(tmp_path: Path, *args: str, block: bool | tuple[str, ...] = False, **env: str) -> subprocess.CompletedProcess:
    """``harness ARGS`` in a fresh process; ``block``: the extras it runs without (True: eb_manipulation)."""
    base = {k: v for k, v in os.environ.items() if k not in UNSET}
    base.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "cache"), **env)
    extras = ("eb_manipulation",) if block is True else block or ()
    modules = sorted({m for extra in extras for m in EXTRA_MODULES[extra]})
    code = (f"import sys; sys.modules.update(dict.fromkeys({modules!r})); "
            "from harness.cli.entry import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=base,
                          capture_output=True, text=True, timeout=300)


def items(err: str) -> list[str]:
    """The missing items of a dry run's message (its '  - ' lines), each without its run count."""
    import re

    assert err.startswith("harness: error: ") and "Traceback" not in err, err
    return [re.sub(r" \((job [^)]*|\d+ of the \d+ runs)\)$", "", line[4:]) for line in err.splitlines()
            if line.startswith("  - ")]


def free_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_readme_dry_run_with_nothing_set_lists_every_missing_prerequisite(tmp_path):
    require_extras("models")
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
    require_extras("models")
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
    require_extras("models")
    port = free_port()
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


def test_diagnostics_and_transfer_with_nothing_set_lists_every_missing_item_once(tmp_path):
    """Six suites' worth of prerequisites in one message: the three variants' checkpoints, the
    data folders of cfg_bench, procobject and eb_alfred (each once, whatever its number of
    splits), and the eb_manipulation extra; nothing else, nothing twice, nothing written."""
    require_extras("models", "eb_manipulation", "video")
    res = harness(tmp_path, "run", "+experiment=diagnostics_and_transfer", "out=o", "--dry-run", block=True)
    assert res.returncode == 2 and res.stdout == "", res.stderr
    got = items(res.stderr)
    assert res.stderr.startswith(f"harness: error: {len(got)} prerequisites of the requested runs are missing")
    assert len(got) == len(set(got)) == 7, got
    expected = {  # needle -> the runs that need it (48 runs: 3 variants x 16 suite/splits)
        "variant base has no checkpoint: set $BASE_MODEL": 16,
        "variant favor_sft has no checkpoint: set $FAVOR_SFT_MODEL": 16,
        "variant cfg_sft has no checkpoint: set $CFG_SFT_MODEL": 16,
        "cfg_bench needs its data: set suite.params.data_dir=FOLDER or $CFG_BENCH_DATA_DIR": 12,
        "procobject needs its data: set suite.params.data_dir=FOLDER or $PROCOBJECT_DATA_DIR": 3,
        "no EB-ALFRED data folder is set": 18,
        "suite 'eb_manipulation' needs the package 'mujoco'": 15,
    }
    lines = res.stderr.splitlines()
    for needle, runs in expected.items():
        hits = [line for line in lines if needle in line]
        assert len(hits) == 1 and hits[0].endswith(f"({runs} of the 48 runs)"), (needle, res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the dry run wrote something"


def test_data_folders_given_but_empty_are_listed_with_the_rest(tmp_path):
    """A data folder that is set but holds nothing is missing data too (listed, not a first error)."""
    require_extras("models", "eb_manipulation", "video")
    empty = tmp_path / "empty"
    empty.mkdir()
    res = harness(tmp_path, "run", "+experiment=diagnostics_and_transfer", "out=o", "--dry-run", block=True,
                  CFG_BENCH_DATA_DIR=str(empty), PROCOBJECT_DATA_DIR=str(empty))
    assert res.returncode == 2, res.stderr
    got = items(res.stderr)
    assert f"cfg_bench data folder {empty} has no qa_pairs.json (harness fetch cfg_bench lays it out)" in got
    assert f"{empty / 'data' / 'testing.json'}: no such file" in got
    assert len(got) == 7 and not (tmp_path / "o").exists()


def test_a_core_install_without_the_models_extra_is_listed_not_counted_as_runs(tmp_path):
    """Every checkpoint set, no `models` extra: the dry run names the extra (the vlm planner's
    hf backend imports torch only when it is built) instead of "6 runs"; so does a run."""
    env = {name: str(tmp_path) for name in ("BASE_MODEL", "FAVOR_SFT_ADAPTER", "CFG_SFT_ADAPTER")}
    res = harness(tmp_path, "run", "+experiment=procobject_table5", "out=o", "--dry-run", block=("models",), **env)
    assert res.returncode == 2 and res.stdout == "" and "runs, " not in res.stderr, res.stderr
    assert res.stderr.strip() == ("harness: error: planner vlm (backend hf) needs the package 'torch' from the "
                                  "'models' extra, which is not installed: pip install -e '.[models]' "
                                  "(6 of the 6 runs)")
    # the openai backend needs the openai client of the same extra, not torch
    res = harness(tmp_path, "run", "variant=base", "split=seen", "planner.params.backend=openai",
                  "planner.params.base_url=http://127.0.0.1:9/v1", "limit=1", "out=o", block=("models",), **env)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "planner vlm (backend openai) needs the package 'openai' from the 'models' extra" in res.stderr
    assert not (tmp_path / "o").exists()
    # ... and with the extra there, the same dry run lists the runs
    require_extras("models")
    res = harness(tmp_path, "run", "+experiment=procobject_table5", "out=o", "--dry-run", **env)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 6, res.stderr


def test_libero_without_its_extra_still_names_every_server(tmp_path):
    """No libero extra and no server running: the extra and the three variants' servers, at once."""
    require_extras("models")
    ports = {name: free_port() for name in ("BASE_VLA_URL", "FAVOR_SFT_VLA_URL", "CFG_SFT_VLA_URL")}
    urls = {name: f"ws://127.0.0.1:{port}" for name, port in ports.items()}
    res = harness(tmp_path, "run", "+experiment=libero_four_suites", "out=o", "--dry-run", block=("libero",), **urls)
    assert res.returncode == 2 and res.stdout == "", res.stderr
    got = items(res.stderr)
    assert got[0] == ("suite 'libero' needs the package 'libero' from the 'libero' extra, which is not installed: "
                      "pip install -e '.[libero]'"), got
    for url in urls.values():
        assert sum(f"no server answers at {url} (policy.params.url)" in g for g in got) == 1, (url, got)
    assert len(got) == 4 and not (tmp_path / "o").exists()


def test_a_variant_never_falls_back_to_the_base_weights_in_silence(tmp_path):
    """Only $BASE_MODEL set: FAVOR-SFT and CFG-SFT would be the base model under their own names.
    The dry run and a run refuse them, naming their variables; with an adapter each, they run."""
    require_extras("models")
    (tmp_path / "base").mkdir()
    env = {"BASE_MODEL": str(tmp_path / "base")}
    res = harness(tmp_path, "run", "+experiment=procobject_table5", "out=o", "--dry-run", **env)
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert items(res.stderr) == [
        f"variant {v} would run $BASE_MODEL's weights unchanged under its own name: set ${V}_SFT_ADAPTER (its LoRA "
        f"adapter on $BASE_MODEL) or ${V}_SFT_MODEL (its own checkpoint, or served model name), or give "
        "variant.params.adapter=PATH or variant.params.model=PATH" for v, V in (("favor_sft", "FAVOR"), ("cfg_sft", "CFG"))]
    res = harness(tmp_path, "run", "variant=cfg_sft", "split=seen", "limit=1", "out=o", **env)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "variant cfg_sft would run $BASE_MODEL's weights" in res.stderr and not (tmp_path / "o").exists()
    # a model or an adapter given on the command line is the user's choice
    for given in (f"variant.params.model={tmp_path / 'base'}", f"variant.params.adapter={tmp_path / 'base'}"):
        res = harness(tmp_path, "run", "variant=cfg_sft", "split=seen", "limit=1", "out=o", given, "--dry-run", **env)
        assert res.returncode == 0, (given, res.stderr)
    for name in ("FAVOR_SFT_ADAPTER", "CFG_SFT_ADAPTER"):
        (tmp_path / name).mkdir()
        env[name] = str(tmp_path / name)
    res = harness(tmp_path, "run", "+experiment=procobject_table5", "out=o", "--dry-run", **env)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 6, res.stderr


def test_limit_0_is_one_line_and_writes_nothing(tmp_path):
    res = harness(tmp_path, "run", "limit=0")
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert res.stderr.strip() == "harness: error: limit must be >= 1 (null: every episode), got 0"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "something was written"
