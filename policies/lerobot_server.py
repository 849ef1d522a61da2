"""Serve a LeRobot policy over openpi's websocket protocol, from LeRobot's own
Python environment.

Why a server and not an in-process ``lerobot`` policy: lerobot 0.6.1 needs
Python >= 3.12 (its core modules do not parse on 3.11) and pins torch < 2.12;
the harness's environment is Python 3.11 with torch 2.13. So the policy runs in
LeRobot's environment and the harness reaches it with ``policy=remote``. This
module imports only lerobot, torch, numpy, msgpack, websockets and the
harness-free modules ``policies.wire`` / ``policies.protocols`` /
``policies.server``, and the harness's standard-library-only checkpoint hasher
(``harness.util.checkpoint_identity``) - not the rest of the harness:

    # in LeRobot's environment (Python >= 3.12, pip install lerobot websockets msgpack), from this repo's root:
    python -m policies.lerobot_server --policy lerobot/smolvla_libero --port 8000   # any PreTrainedPolicy dir or hub id
    # in the harness's environment:
    harness run suite=libero split=libero_spatial policy=remote policy.params.resize=0 \\
        policy.params.url=ws://127.0.0.1:8000

What it does per request (LeRobot's own pre/post-processing, loaded from the
checkpoint with ``make_pre_post_processors``): the two images (already
rotated 180 degrees by the harness's LIBERO env, which is what LeRobot's
``LiberoProcessorStep`` does to the raw frames) become
``observation.images.image`` / ``observation.images.image2`` (float CHW in
[0, 1], resized to the policy's input shape if it differs), the 8-D state
``observation.state``, the prompt ``task``; the policy's preprocessor
normalises, ``predict_action_chunk`` runs, the postprocessor un-normalises,
and the first ``n_action_steps`` actions are returned (what LeRobot's
``select_action`` queue would execute). The metadata reports
``replan_steps = n_action_steps``, which the ``remote`` client then uses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from policies import protocols as P

#: LeRobot's LIBERO observation keys (lerobot.envs.libero: cameras "image" / "image2").
LEROBOT_IMAGE, LEROBOT_WRIST, LEROBOT_STATE, LEROBOT_TASK = (
    "observation.images.image", "observation.images.image2", "observation.state", "task")


class LeRobotChunker:
    """A LeRobot ``PreTrainedPolicy`` with its processors: observations -> action chunks."""

    def __init__(self, policy: str, device: str = "cpu", revision: str | None = None):
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        self.torch = torch
        self.source = policy
        cfg = PreTrainedConfig.from_pretrained(policy, revision=revision)
        cfg.device = device
        self.cfg = cfg
        self.policy = get_policy_class(cfg.type).from_pretrained(policy, config=cfg, revision=revision)
        self.policy.eval()
        self.pre, self.post = make_pre_post_processors(
            cfg, pretrained_path=policy, pretrained_revision=revision,
            preprocessor_overrides={"device_processor": {"device": device}})
        self.n_action_steps = int(getattr(cfg, "n_action_steps", 0) or getattr(cfg, "chunk_size", 1))
        self.image_shapes = {k: tuple(f.shape) for k, f in cfg.input_features.items() if k.startswith("observation.images.")}
        local = Path(policy)
        self.identity = {
            "policy": "lerobot", "type": cfg.type,
            "checkpoint": _digest(local) if local.exists() else f"{policy}@{revision or 'main'}",
            "n_action_steps": self.n_action_steps,
        }

    def _image(self, key: str, image: np.ndarray) -> Any:
        from PIL import Image

        img = np.asarray(image, dtype=np.uint8)
        shape = self.image_shapes.get(key)
        if shape is not None and img.shape[:2] != tuple(shape[1:]):
            img = np.asarray(Image.fromarray(img).resize((shape[2], shape[1]), resample=Image.BILINEAR))
        return self.torch.from_numpy(img.copy()).permute(2, 0, 1).float() / 255.0

    def chunks(self, observations: Sequence[Mapping[str, Any]]) -> list[np.ndarray]:
        torch = self.torch
        batch: dict[str, Any] = {
            LEROBOT_STATE: torch.stack([torch.as_tensor(np.asarray(o[P.OBS_STATE], np.float32)) for o in observations]),
            LEROBOT_TASK: [str(o[P.OBS_INSTRUCTION]) for o in observations],
        }
        for key, src in ((LEROBOT_IMAGE, P.OBS_IMAGE), (LEROBOT_WRIST, P.OBS_WRIST)):
            if key in self.image_shapes:
                batch[key] = torch.stack([self._image(key, o[src]) for o in observations])
        with torch.inference_mode():
            self.policy.reset()
            actions = self.policy.predict_action_chunk(self.pre(batch))
            actions = self.post(actions)
        out = actions.detach().float().cpu().numpy()
        if out.ndim == 2:  # a policy without chunks: one action per observation
            out = out[:, None]
        return [a[: self.n_action_steps] for a in out]

    def chunk(self, image: np.ndarray, wrist: np.ndarray, state: np.ndarray, prompt: str) -> np.ndarray:
        return self.chunks([{P.OBS_IMAGE: image, P.OBS_WRIST: wrist, P.OBS_STATE: state, P.OBS_INSTRUCTION: prompt}])[0]


class LeRobotService:
    """What :class:`policies.server.PolicyServer` serves: one chunker, batched."""

    def __init__(self, chunker: LeRobotChunker, max_batch: int = 16):
        self.chunker, self.max_batch = chunker, max(1, int(max_batch))

    def metadata(self) -> dict[str, Any]:
        return {"policy": "lerobot", "policy_identity": self.chunker.identity, "protocols": [P.OPENPI],
                "replan_steps": self.chunker.n_action_steps}

    def act(self, observations: Sequence[Mapping[str, Any]]) -> list[np.ndarray]:
        return self.chunker.chunks(observations)

    def normalize(self, chunk: np.ndarray) -> np.ndarray:
        raise RuntimeError("the LeRobot server speaks openpi's protocol only (LeRobot un-normalises server-side)")


def _digest(path: Path) -> str:
    from harness.util.checkpoint_identity import path_digest

    return path_digest(path)


def main(argv: Sequence[str] | None = None) -> int:
    from policies.server import LOOPBACK, PolicyServer

    ap = argparse.ArgumentParser(prog="python -m policies.lerobot_server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", required=True, help="PreTrainedPolicy directory or hub id")
    ap.add_argument("--revision", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--host", default=LOOPBACK, help="default: loopback only")
    ap.add_argument("--port", type=int, default=8000, help="0: any free port (printed)")
    ap.add_argument("--max-batch", type=int, default=16)
    args = ap.parse_args(argv)
    service = LeRobotService(LeRobotChunker(args.policy, args.device, args.revision), args.max_batch)
    if args.host not in (LOOPBACK, "localhost", "::1"):
        print(f"WARNING: listening on {args.host}, reachable from other machines; no authentication", file=sys.stderr)

    def ready(host: str, port: int) -> None:
        print(f"serving policy lerobot on ws://{host}:{port} (protocol: openpi; health: /healthz)",
              file=sys.stderr, flush=True)

    try:
        PolicyServer(service, host=args.host, port=args.port).serve_forever(on_ready=ready)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
