"""Runs *in the openpi reference venv*: openpi-server's WebsocketPolicyServer
serving a scripted policy (a pure function of the observation, the same
function tests/policies/conftest.py calls ``expected_chunk``).

usage: python openpi_ref_server.py PORT
"""

import sys

import numpy as np
from openpi_client import base_policy
from openpi_server import WebsocketPolicyServer


class Scripted(base_policy.BasePolicy):
    def infer(self, obs):
        if "explode" in obs["prompt"]:
            raise ValueError("scripted failure: the prompt asked for it")
        s = np.asarray(obs["observation/state"], np.float64)
        chunk = np.zeros((6, 7))
        for j in range(6):
            chunk[j, :6] = s[:6] * 0.5 + 0.01 * j
        chunk[:, 4] = np.asarray(obs["observation/image"], np.float64).mean() / 255.0 - 0.5
        chunk[:, 5] = np.asarray(obs["observation/wrist_image"], np.float64).mean() / 255.0 - 0.5
        chunk[:, 6] = 1.0 if s[6] > 0 else -1.0
        return {"actions": chunk.astype(np.float32)}


if __name__ == "__main__":
    meta = {"checkpoint": "scripted-reference", "reset_pose": np.arange(7, dtype=np.float32)}
    WebsocketPolicyServer(Scripted(), host="127.0.0.1", port=int(sys.argv[1]), metadata=meta).serve_forever()
