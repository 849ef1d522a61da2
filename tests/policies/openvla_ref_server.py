"""A loopback stand-in for the OpenVLA / OpenVLA-OFT ``vla-scripts/deploy.py`` servers.

Written from those scripts (openvla/openvla c8f03f48af69, moojink/openvla-oft 213c5ff8d6e9):
``json_numpy.patch()`` before anything else (deploy.py:33-35 / :10-12), a FastAPI app with
``POST /act`` taking ``payload: Dict[str, Any]`` (deploy.py:91, :122 / :78, :106), the
"double-encoded" ``{"encoded": ...}`` form (deploy.py:93-96 / :80-83), ``JSONResponse(action)``
and the plain string ``"error"`` for any failure (deploy.py:105-118 / :88-102). Only the model
is scripted (tests/policies/openvla_ref_model.py), a pure function of what it receives, so the test
can recompute every reply:

* ``openvla``: reads ``image``, ``instruction``, ``unnorm_key`` (deploy.py:99-100); a key the
  checkpoint lacks fails as ``predict_action``'s check would (here: not in ``--keys``); replies one
  7-vector, gripper in [0, 1] (1 open).
* ``openvla_oft``: reads the observation dict (deploy.py:85-86): ``full_image``, every key
  containing ``wrist`` (openvla_utils.py:746-748; ``--num-images 2``), ``state``; replies a list
  of 8 actions (openvla_utils.py:798).

Every decoded payload is appended to ``--log`` (json-numpy lines) for the test to inspect.

    python tests/policies/openvla_ref_server.py --mode openvla_oft --port P --log FILE
"""

import json_numpy

json_numpy.patch()

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Dict  # noqa: E402

import numpy as np  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.policies.openvla_ref_model import oft_chunk, openvla_action  # noqa: E402


class Server:
    def __init__(self, mode: str, keys: list, num_images: int, log_path: str):
        self.mode, self.keys, self.num_images, self.log_path = mode, set(keys), num_images, log_path

    def act(self, payload: Dict[str, Any]):
        try:
            if double_encode := "encoded" in payload:
                assert len(payload.keys()) == 1, "Only uses encoded payload!"
                payload = json.loads(payload["encoded"])
            with open(self.log_path, "a") as f:
                f.write(json.dumps(payload) + "\n")
            if self.mode == "openvla":
                image, instruction = payload["image"], payload["instruction"]
                unnorm_key = payload.get("unnorm_key", None)
                assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3
                assert unnorm_key in self.keys, f"Action un-norm key {unnorm_key} not found"
                action = openvla_action(image, instruction, unnorm_key)
            else:
                obs = payload
                images = [obs["full_image"]]
                if self.num_images > 1:
                    images.extend([obs[k] for k in obs.keys() if "wrist" in k])
                for im in images:  # openvla_utils.py:629-646 check_image_format
                    assert isinstance(im, np.ndarray) and im.ndim == 3 and im.shape[-1] == 3 and im.dtype == np.uint8
                assert len(images) == self.num_images
                action = oft_chunk(images[0], images[1:], np.asarray(obs["state"]), obs["instruction"])
            return JSONResponse(json_numpy.dumps(action)) if double_encode else JSONResponse(action)
        except:  # noqa: E722 - as deploy.py: any failure is the string "error"
            logging.error(traceback.format_exc())
            return "error"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("openvla", "openvla_oft"), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--keys", nargs="*", default=["libero_spatial_no_noops"])
    ap.add_argument("--num-images", type=int, default=2)
    a = ap.parse_args()
    server = Server(a.mode, a.keys, a.num_images, a.log)
    app = FastAPI()
    app.post("/act")(server.act)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
