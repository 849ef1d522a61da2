"""LIBERO-PRO as its runner runs it: the BDDL file's own instruction, its step budget, every
variant the installed wheel ships, a one-line refusal for one it registers without its files.

The expected instruction is read here from each BDDL file's text with a parser of this test's
own (``(:language ...)``, lower-cased, whitespace joined: what LIBERO's ``bddl_utils.
get_problem_info`` makes of it and ``env.language_instruction`` holds), not from the suite's
code path. No simulator is built (fast)."""

from __future__ import annotations

import os
import re

import pytest

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero import protocol as P  # noqa: E402
from envs.libero.suite import LiberoSuite  # noqa: E402

BASES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
TYPES = ("lan", "task", "object", "swap")


def _bddl_language(path: str) -> str:
    text = open(path, encoding="utf-8").read()
    found = re.findall(r"^\s*\(:language\s+(.*?)\)\s*$", text, re.M)
    assert len(found) == 1, path
    return " ".join(found[0].lower().split())


@pytest.fixture(scope="module")
def suite():
    return LiberoSuite()


@pytest.mark.parametrize("kind", TYPES)
def test_perturbation_splits_send_the_bddls_instruction(suite, kind):
    """40 tasks per perturbation type (4 suites x 10): the episode's instruction, which the env puts
    in every observation the policy gets, is the BDDL file's own, under every preset."""
    seen = differ = 0
    for preset in ("openpi", "libero_pro", "lerobot"):
        s = suite if preset == "openpi" else LiberoSuite(protocol=preset)
        for base in BASES:
            split = f"{base}_{kind}"
            bench = s.provider.suite(split)
            eps = s.episodes(split)
            assert len(eps) == 10 * s.trials
            for e in eps[:: s.trials]:
                task = bench.get_task(e.metadata["task_index"])
                expected = _bddl_language(s.provider.bddl_path(task))
                assert e.instruction == expected == e.metadata["bddl_language"], (split, e.episode_id)
                assert e.metadata["language"] == task.language
                seen += 1
                differ += expected != task.language.lower()
            assert s.protocol(split)["instruction"] == "bddl"
    assert seen == 3 * 40
    if kind in ("lan", "task"):  # the perturbation is in the wording / the goal: the base instruction hides it
        assert differ >= 3 * 30, differ


def test_the_two_measured_examples(suite):
    """libero_goal_lan task 0 rewords the base task; libero_goal_task task 0 asks for another drawer."""
    lan, task = suite.episodes("libero_goal_lan")[0], suite.episodes("libero_goal_task")[0]
    assert lan.metadata["language"] == task.metadata["language"] == "open the middle drawer of the cabinet"
    assert lan.instruction == "open the cabinet\u2019s middle drawer"
    assert task.instruction == "open the bottom drawer of the cabinet"


def test_every_shipped_variant_is_a_split_and_every_unshipped_one_is_refused(suite):
    """Enumerated from the wheel: every suite it registers as ``<base>_<variant>`` is a split when all
    of its BDDL and init files are installed, else refused in one line naming the missing files."""
    from libero.libero.benchmark.libero_suite_task_map import libero_task_map

    bddl_root = suite.provider.get_libero_path("bddl_files")
    init_root = suite.provider.get_libero_path("init_states")
    splits, shipped, unshipped = set(suite.splits()), [], []
    for name, tasks in libero_task_map.items():
        if not any(name.startswith(b + "_") for b in BASES) or name in P.BASE_SPLITS:
            continue
        ok = all(os.path.exists(os.path.join(bddl_root, name, t + ".bddl"))
                 and os.path.exists(os.path.join(init_root, name, t + ".pruned_init.npz")) for t in tasks)
        (shipped if ok else unshipped).append(name)
    assert set(shipped) <= splits and not set(unshipped) & splits
    assert {f"{b}_with_mug" for b in BASES} <= splits and {f"{b}_{k}" for b in BASES for k in TYPES} <= splits
    for name in unshipped:
        msg = suite.unavailable(name)
        assert msg and "\n" not in msg and f"registers split {name} but does not ship" in msg, name
        with pytest.raises(ValueError, match="does not ship"):
            suite.episodes(name)
    assert {f"{b}_env" for b in BASES} <= set(unshipped)  # registered, not shipped
    assert {f"{b}_temp" for b in BASES} | {f"{b}_object_ood" for b in BASES} <= set(unshipped)
    env = suite.unavailable("libero_goal_env")
    assert "bddl_files/libero_goal_env/open_the_middle_drawer_of_the_cabinet.bddl" in env
    assert suite.unavailable("libero_goal") is None and suite.unavailable("libero_goal_lan") is None
    assert suite.unavailable("libero_nope") is None  # unknown, not unavailable: the runner's "unknown split"
    # a shipped variant runs with its base suite's budget and the BDDL's instruction
    mug = suite.episodes("libero_goal_with_mug")
    assert suite.max_steps("libero_goal_with_mug") == 300 and len(mug) == 10 * 50
    task = suite.provider.suite("libero_goal_with_mug").get_task(0)
    assert mug[0].instruction == _bddl_language(suite.provider.bddl_path(task))


def test_libero_pro_preset():
    """Zxy-MLlab/LIBERO-PRO 8af465d0484b527efc320e4cdeb57890742394be libero/evaluation/configs/eval.yaml:
    :7 ``episodes_per_task: 1``, :9 ``seed: 7``, :12 ``warmup_steps: 10``, :13 ``max_steps: 300`` (every
    suite), :14 ``episode_timeout_seconds: 50``, :20-21 256 px;
    runner.py:67/:84 ``np.random.seed(seed)`` and ``env.seed(seed)`` once per task after the build,
    :156-159 reset, ``set_init_state``, warm-up steps ``[0, 0, 0, 0, 0, 0, -1]``, :161 the prompt
    ``env.language_instruction``; clients/openpi_client.py:127-128 rotates both images 180 degrees."""
    p = P.preset("libero_pro")
    assert [p["max_steps"][s] for s in P.BASE_SPLITS] == [300] * 5
    assert (p["seed"], p["fixture_rng"], p["num_steps_wait"], p["camera_size"]) == (7, "sequence", 10, 256)
    assert p["dummy_action"] == [0, 0, 0, 0, 0, 0, -1] and p["rotate_180"] is True
    assert p["first_observation"] == "after_wait" and p["instruction"] == "bddl"
    assert (p["trials"], p["episode_timeout_s"]) == (1, 50.0)
    s = LiberoSuite(protocol="libero_pro")
    assert [s.max_steps(x) for x in ("libero_spatial", "libero_10", "libero_10_lan", "libero_90")] == [300] * 4
    e = s.episodes("libero_spatial")[0]  # on a base suite too: the BDDL's own wording
    task = s.provider.suite("libero_spatial").get_task(0)
    assert e.instruction == _bddl_language(s.provider.bddl_path(task)) != task.language
    assert s.protocol("libero_spatial")["instruction"] == "bddl"
    assert LiberoSuite().protocol("libero_spatial")["instruction"] == "task.language"


def test_harness_run_refuses_an_unshipped_split_in_one_line(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "harness.cli", "run", "suite=libero", "split=libero_10_env",
                          "policy=zero", f"out={tmp_path / 'out'}", "progress=false"], capture_output=True, text=True,
                         env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.strip().splitlines() if "WARNING" not in ln and ln.strip()]
    assert len(lines) == 1 and "registers split libero_10_env but does not ship 20 of its files" in lines[0], lines
    assert not (tmp_path / "out").exists()
