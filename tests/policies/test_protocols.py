import json

import numpy as np
import pytest

from policies import protocols as P

STATS = {"libero_spatial": {"action": {
    "min": [-1.0, -0.5, 0.0, -0.2, -0.3, -0.4, 0.0], "max": [1.0, 0.5, 2.0, 0.2, 0.3, 0.4, 1.0],
    "q01": [-0.8, -0.4, 0.2, -0.1, -0.2, -0.3, 0.0], "q99": [0.8, 0.4, 1.8, 0.1, 0.2, 0.3, 1.0],
    "mask": [True] * 6 + [False]}}, "libero_goal": {"action": {"min": [0] * 7, "max": [1] * 7}}}


@pytest.fixture
def stats_dir(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / P.STARVLA_STATS_FILE).write_text(json.dumps(STATS))
    return run


def test_unnormalize_min_max_by_hand(stats_dir):
    s = P.load_action_stats(stats_dir / "checkpoints", "libero_spatial")  # found in the parent (run dir)
    norm = np.array([[-1.0, 0.0, 0.5, 2.0, -3.0, 0.25, 0.49], [1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.5]])
    out = P.unnormalize(norm, s, "min_max")
    # 0.5 (a + 1)(max - min) + min; inputs clipped to [-1, 1]; gripper binarised at 0.5 and unmasked
    np.testing.assert_allclose(out[0], [-1.0, 0.0, 1.5, 0.2, -0.3, 0.1, 0.0])
    np.testing.assert_allclose(out[1], [1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 1.0])


def test_unnormalize_q99_uses_quantiles(stats_dir):
    s = P.load_action_stats(stats_dir / P.STARVLA_STATS_FILE, "libero_spatial")
    out = P.unnormalize(np.array([1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.9]), s, "q99")
    np.testing.assert_allclose(out, [0.8, -0.4, 1.0, 0.0, 0.0, 0.0, 1.0])


def test_normalize_inverts_unnormalize_on_masked_dims(stats_dir):
    s = P.load_action_stats(stats_dir, "libero_spatial")
    a = np.array([[0.3, -0.2, 1.1, 0.05, -0.1, 0.2, 1.0]])
    np.testing.assert_allclose(P.unnormalize(P.normalize(a, s), s), a, atol=1e-12)


def test_gripper_mapping_libero_roundtrip():
    libero = np.array([-1.0, 1.0, -0.3, 0.7])
    np.testing.assert_array_equal(P.gripper_from_libero(libero), [1, 0, 1, 0])  # 1 = open
    np.testing.assert_array_equal(P.gripper_to_libero(P.gripper_from_libero(libero)), [-1, 1, -1, 1])


def test_stats_key_selection_errors(stats_dir, tmp_path):
    with pytest.raises(ValueError, match="unnorm_key"):
        P.load_action_stats(stats_dir)  # two datasets, none chosen
    with pytest.raises(ValueError, match="libero_10"):
        P.load_action_stats(stats_dir, "libero_10")
    with pytest.raises(FileNotFoundError):
        P.load_action_stats(tmp_path / "nowhere")
    s = P.load_action_stats(stats_dir, "libero_goal")
    with pytest.raises(ValueError, match="q01"):
        s.bounds("q99")
    with pytest.raises(ValueError, match="norm mode"):
        s.bounds("mean_std")


def test_resize_with_pad_keeps_aspect_and_pads():
    img = np.full((128, 256, 3), 200, np.uint8)
    out = P.resize_with_pad(img, 224)
    assert out.shape == (224, 224, 3) and out.dtype == np.uint8
    assert (out[:56] == 0).all() and (out[-56:] == 0).all() and (out[56:168] == 200).all()


def test_openpi_request_shapes_and_keys():
    obs = {"agentview_image": np.zeros((256, 256, 3), np.uint8), "wrist_image": np.ones((256, 256, 3), np.uint8),
           "state": np.arange(8, dtype=np.float64), "instruction": "x"}
    req = P.openpi_request(obs, "open the drawer")
    assert set(req) == {"observation/image", "observation/wrist_image", "observation/state", "prompt"}
    assert req["observation/image"].shape == (224, 224, 3) and req["observation/state"].dtype == np.float32
    assert req["prompt"] == "open the drawer"
    back = P.observation_from_openpi(req)
    assert back["instruction"] == "open the drawer" and back["state"].shape == (8,)
    with pytest.raises(ValueError, match="prompt"):
        P.observation_from_openpi({k: v for k, v in req.items() if k != "prompt"})
