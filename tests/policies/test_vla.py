"""The in-process ``vla`` policy on a tiny random checkpoint (Qwen2-VL
architecture, hidden 64, PIL image processor: no torchvision)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch: the `models` extra")
pytest.importorskip("transformers")

from policies import protocols as P  # noqa: E402
from policies.vla import VLAPolicy, build_tiny_checkpoint  # noqa: E402
from tests.policies.conftest import libero_obs, request  # noqa: E402


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return build_tiny_checkpoint(tmp_path_factory.mktemp("vla") / "ckpt", seed=0, chunk_size=8, lora=True)


@pytest.fixture(scope="module")
def policy(ckpt):
    return VLAPolicy(checkpoint=str(ckpt), allow_untrained_head=True)


def test_chunks_are_libero_actions_within_the_statistics(policy, ckpt):
    obs = [libero_obs(i, instruction=f"pick up the black bowl {i}") for i in range(3)]
    chunks = policy.act([request(o) for o in obs])
    stats = json.loads((ckpt / "dataset_statistics.json").read_text())["libero_spatial"]["action"]
    for c in chunks:
        assert c.shape == (8, 7) and c.dtype == np.float32 and np.isfinite(c).all()
        assert (c[:, :6] >= np.array(stats["min"][:6]) - 1e-6).all() and (c[:, :6] <= np.array(stats["max"][:6]) + 1e-6).all()
        assert set(np.unique(c[:, 6])) <= {-1.0, 1.0}
    assert not np.allclose(chunks[0], chunks[1])  # the observation matters


def test_batched_equals_one_by_one(policy):
    obs = [libero_obs(i, instruction=t) for i, t in enumerate(["open the drawer", "put the bowl on the plate", "go"])]
    batch = policy.act([request(o) for o in obs])  # different prompt lengths: left padding
    for o, b in zip(obs, batch):
        np.testing.assert_allclose(policy.act([request(o)])[0], b, atol=1e-4)
    norm = policy.predict_normalized(obs, [o["instruction"] for o in obs])
    single = policy.predict_normalized(obs[:1], [obs[0]["instruction"]])
    np.testing.assert_allclose(norm[0], single[0], atol=1e-5)


def test_instruction_and_state_reach_the_model(policy):
    o = libero_obs(0)
    a = policy.predict_normalized([o], ["open the drawer"])
    b = policy.predict_normalized([o], ["close the drawer"])
    c = policy.predict_normalized([{**o, "state": o["state"] + 1.0}], ["open the drawer"])
    assert not np.allclose(a, b) and not np.allclose(a, c)


def test_adapter_changes_actions_and_identity(policy, ckpt):
    base = VLAPolicy(checkpoint=str(ckpt), allow_untrained_head=True, adapter="none")
    o = libero_obs(4)
    assert not np.allclose(base.predict_normalized([o], ["x"]), policy.predict_normalized([o], ["x"]))
    assert base.identity()["adapter"] is None and policy.identity()["adapter"]
    assert base.identity()["backbone"] == policy.identity()["backbone"]
    json.dumps(policy.identity())


def test_identity_tracks_every_file_that_changes_results(ckpt, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(ckpt, other)
    ident = VLAPolicy(checkpoint=str(other), allow_untrained_head=True).identity()
    assert ident == VLAPolicy(checkpoint=str(ckpt), allow_untrained_head=True).identity()  # content, not location
    from safetensors.torch import load_file, save_file

    head = load_file(str(other / "action_head.safetensors"))
    head["fc2.bias"][0] += 0.5  # same header, different weights
    save_file(head, str(other / "action_head.safetensors"))
    ident2 = VLAPolicy(checkpoint=str(other), allow_untrained_head=True).identity()
    assert ident2["head"] != ident["head"]
    stats = json.loads((other / "dataset_statistics.json").read_text())
    stats["libero_spatial"]["action"]["max"][0] = 0.5
    (other / "dataset_statistics.json").write_text(json.dumps(stats))
    assert VLAPolicy(checkpoint=str(other), allow_untrained_head=True).identity()["action_stats"] != ident["action_stats"]


def test_backbone_swap_keeps_the_head(ckpt, tmp_path):
    """The base-vs-SFT comparison: the same head on another backbone of the same shape."""
    other = build_tiny_checkpoint(tmp_path / "sft", seed=11, chunk_size=8)
    swapped = VLAPolicy(checkpoint=str(ckpt), allow_untrained_head=True, backbone=str(other / "backbone"), adapter="none")
    original = VLAPolicy(checkpoint=str(ckpt), allow_untrained_head=True, adapter="none")
    assert swapped.identity()["backbone"] != original.identity()["backbone"]
    assert swapped.identity()["head"] == original.identity()["head"]
    o = libero_obs(2)
    assert not np.allclose(swapped.predict_normalized([o], ["x"]), original.predict_normalized([o], ["x"]))


def test_bad_checkpoints_fail_with_a_clear_message(ckpt, tmp_path):
    with pytest.raises(FileNotFoundError, match="vla_config.json"):
        VLAPolicy(checkpoint=str(tmp_path), allow_untrained_head=True)
    bad = tmp_path / "bad"
    shutil.copytree(ckpt, bad)
    cfg = json.loads((bad / "vla_config.json").read_text())
    cfg["chunk_size"] = 4  # the head predicts 8
    (bad / "vla_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="does not fit"):
        VLAPolicy(checkpoint=str(bad), allow_untrained_head=True)


def test_normalized_output_unnormalises_like_a_starvla_client(policy, ckpt):
    o = libero_obs(9)
    norm = policy.predict_normalized([o], [o["instruction"]])[0]
    stats = P.load_action_stats(ckpt, "libero_spatial")
    want = P.unnormalize(norm, stats)
    want[:, 6] = P.gripper_to_libero(want[:, 6])
    np.testing.assert_allclose(policy.act([request(o)])[0], want, atol=1e-6)


def test_an_untrained_head_is_refused_unless_allowed(ckpt, tmp_path, capsys):
    from harness.cli.entry import main

    with pytest.raises(ValueError, match="never trained.*marks it untrained") as info:
        VLAPolicy(checkpoint=str(ckpt))
    assert "\n" not in str(info.value) and "allow_untrained_head=true" in str(info.value)
    # the CLI: one line, exit status 2 (serve-policy builds the policy before listening)
    assert main(["serve-policy", "policy=vla", f"policy.params.checkpoint={ckpt}", "port=0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "never trained" in err[0], err
    # no marker but no training record either: still untrained
    unmarked = tmp_path / "unmarked"
    shutil.copytree(ckpt, unmarked)
    cfg = json.loads((unmarked / "vla_config.json").read_text())
    del cfg["untrained_head"]
    (unmarked / "vla_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="no head_training record"):
        VLAPolicy(checkpoint=str(unmarked))
    # a head with a training record loads without the flag
    cfg["head_training"] = {"framework": "example", "steps": 1000, "dataset": "libero_spatial_no_noops"}
    (unmarked / "vla_config.json").write_text(json.dumps(cfg))
    assert VLAPolicy(checkpoint=str(unmarked)).identity()["head"] == VLAPolicy(
        checkpoint=str(ckpt), allow_untrained_head=True).identity()["head"]
