"""One load per checkpoint per process (planners/vlm/backends.py ``LOADED``): an experiment's many
runs of one checkpoint load it once; different weights or loading settings load their own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the hf backend needs the `models` extra")
pytest.importorskip("peft", reason="the tiny VLM checkpoints need the `models` extra")

from planners.vlm import backends  # noqa: E402
from planners.vlm.backends import LOADED, HFBackend, LoadedModels  # noqa: E402

CONV = [{"role": "user", "content": [{"type": "text", "text": "pick up the apple"}]}]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> LoadedModels:
    """An empty cache of this process's kind (keep 1) for the test."""
    cache = LoadedModels(keep=1)
    monkeypatch.setattr(backends, "LOADED", cache)
    return cache


def test_backends_of_one_checkpoint_share_one_load(tiny_ckpts: dict[str, Path], fresh: LoadedModels) -> None:
    a = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=3)
    b = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=5, batch_size=2, json_schema=False)
    assert fresh.loads == 1 and a.model is b.model and a.processor is b.processor
    # What only shapes decoding (token limit, batch size) is the backend's own, not the load's.
    assert (a.max_new_tokens, b.max_new_tokens) == (3, 5)


def test_a_copy_of_the_checkpoint_elsewhere_is_the_same_checkpoint(tiny_ckpts: dict[str, Path], tmp_path: Path,
                                                                   fresh: LoadedModels) -> None:
    import shutil

    copy = shutil.copytree(tiny_ckpts["base"], tmp_path / "copy")
    HFBackend(str(tiny_ckpts["base"]), max_new_tokens=2)
    HFBackend(str(copy), max_new_tokens=2)
    assert fresh.loads == 1  # keyed by the checkpoint's identity (its hash), not by its path


def test_other_weights_or_loading_settings_load_their_own(tiny_ckpts: dict[str, Path], fresh: LoadedModels) -> None:
    base = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=2)
    cfg = HFBackend(str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["cfg"]), max_new_tokens=2)
    merged = HFBackend(str(tiny_ckpts["base"]), adapter=str(tiny_ckpts["cfg"]), merge_adapter=True, max_new_tokens=2)
    bf16 = HFBackend(str(tiny_ckpts["base"]), dtype="bfloat16", max_new_tokens=2)
    assert fresh.loads == 4 and len({id(x.model) for x in (base, cfg, merged, bf16)}) == 4
    # keep 1: only the last is held; the base loads again after them (an experiment runs a variant's
    # runs together, so this order costs one load per variant).
    assert len(fresh) == 1
    HFBackend(str(tiny_ckpts["base"]), max_new_tokens=2)
    assert fresh.loads == 5


def test_a_shared_model_answers_as_a_model_of_its_own(tiny_ckpts: dict[str, Path], fresh: LoadedModels,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    first = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=6)
    shared = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=6)
    assert shared.model is first.model
    first.generate([CONV])  # a call in between leaves nothing behind
    monkeypatch.setattr(backends, "LOADED", LoadedModels(keep=0))  # before: every backend loads its own
    own = HFBackend(str(tiny_ckpts["base"]), max_new_tokens=6)
    assert own.model is not first.model
    assert shared.generate([CONV]) == own.generate([CONV])


def test_keep_zero_is_the_loading_of_before(tiny_ckpts: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = LoadedModels(keep=0)
    monkeypatch.setattr(backends, "LOADED", cache)
    for _ in range(3):
        HFBackend(str(tiny_ckpts["base"]), max_new_tokens=2)
    assert cache.loads == 3 and len(cache) == 0


@pytest.mark.slow
@pytest.mark.ci
def test_an_experiment_of_many_runs_loads_each_checkpoint_once(tiny_ckpts: dict[str, Path], tmp_path: Path,
                                                               data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``harness run -m`` over 2 variants x 3 splits in one process: 6 runs, 2 loads (one per checkpoint)."""
    from harness.cli.entry import main
    from harness.store import ResultStore

    monkeypatch.setattr(backends, "LOADED", LoadedModels(keep=1))
    monkeypatch.setenv("CFG_SFT_ADAPTER", str(tiny_ckpts["cfg"]))
    for name in ("BASE_MODEL", "CFG_SFT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "out"
    status = main(["run", "-m", "variant=base,cfg_sft", "suite=eb_alfred", "split=base,common_sense,spatial",
                   "limit=1", f"variant.params.model={tiny_ckpts['base']}", "planner.params.max_new_tokens=4",
                   "planner.params.num_examples=0", "planner.params.image_size=112", f"out={out}",
                   "progress=false"])
    assert status == 0
    assert backends.LOADED.loads == 2
    store = ResultStore(out)
    try:
        df = store.frame()
    finally:
        store.close()
    assert len(df) == 6 and df["run_id"].nunique() == 6
    assert LOADED is not backends.LOADED  # the process-wide cache was left alone
