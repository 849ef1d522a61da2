"""Runs *in a LeRobot environment*: writes a tiny randomly initialised ACT policy
with LeRobot's own ``save_pretrained`` (policy + pre/post-processors with
LIBERO-like statistics), then, given observations in an NPZ, writes the
chunks LeRobot itself predicts for them (the reference for the server test).

usage: python lerobot_tiny.py build DIR
       python lerobot_tiny.py predict DIR IN.npz OUT.npz
"""

import sys

import numpy as np
import torch


def build(out: str) -> None:
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    torch.manual_seed(0)
    cfg = ACTConfig(
        input_features={
            "observation.images.image": PolicyFeature(type=FeatureType.VISUAL, shape=(3, 256, 256)),
            "observation.images.image2": PolicyFeature(type=FeatureType.VISUAL, shape=(3, 256, 256)),
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(8,)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(7,))},
        chunk_size=10, n_action_steps=10, dim_model=32, n_heads=2, dim_feedforward=64, n_encoder_layers=1,
        n_decoder_layers=1, use_vae=False, vision_backbone="resnet18", pretrained_backbone_weights=None,
        device="cpu",
    )
    policy = ACTPolicy(cfg)
    stats = {
        "observation.state": {"mean": torch.zeros(8), "std": torch.ones(8) * 0.5,
                              "min": -torch.ones(8), "max": torch.ones(8)},
        "action": {"mean": torch.zeros(7), "std": torch.ones(7) * 0.3, "min": -torch.ones(7), "max": torch.ones(7)},
        "observation.images.image": {"mean": torch.full((3, 1, 1), 0.5), "std": torch.full((3, 1, 1), 0.25),
                                     "min": torch.zeros(3, 1, 1), "max": torch.ones(3, 1, 1)},
        "observation.images.image2": {"mean": torch.full((3, 1, 1), 0.5), "std": torch.full((3, 1, 1), 0.25),
                                      "min": torch.zeros(3, 1, 1), "max": torch.ones(3, 1, 1)},
    }
    pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
    policy.save_pretrained(out)
    pre.save_pretrained(out)
    post.save_pretrained(out)


def predict(path: str, src: str, dst: str) -> None:
    """LeRobot's own evaluation path, independent of policies/lerobot_server.py:
    ``preprocess_observation`` (its env -> policy conversion), the saved
    preprocessor, ``select_action`` n_action_steps times, the postprocessor."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.utils import preprocess_observation
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    cfg = PreTrainedConfig.from_pretrained(path)
    policy = get_policy_class(cfg.type).from_pretrained(path, config=cfg).eval()
    pre, post = make_pre_post_processors(cfg, pretrained_path=path)
    data = np.load(src)
    out = {}
    for i, prompt in enumerate(data["prompts"]):
        obs = preprocess_observation({"pixels": {"image": data[f"obs{i}/image"], "image2": data[f"obs{i}/wrist_image"]},
                                      "agent_pos": data[f"obs{i}/state"].astype(np.float32)})
        obs["task"] = [str(prompt)]
        policy.reset()
        batch = pre(obs)
        with torch.inference_mode():
            steps = [post(policy.select_action(batch)).cpu().numpy()[0] for _ in range(cfg.n_action_steps)]
        out[f"actions{i}"] = np.stack(steps)
    np.savez(dst, **out)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        predict(*sys.argv[2:5])
