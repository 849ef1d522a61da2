"""Runs *in the openpi reference venv*: openpi-client's WebsocketClientPolicy
against a server (``harness serve-policy``). Reads observations from an NPZ
(keys obs{i}/image, obs{i}/wrist_image, obs{i}/state, prompts), writes the
actions it got (NPZ) and the server metadata / errors (JSON).

usage: python openpi_ref_client.py PORT IN.npz OUT.npz OUT.json
"""

import json
import sys

import numpy as np
from openpi_client.websocket_client_policy import WebsocketClientPolicy

port, src, out_npz, out_json = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
data = np.load(src)
prompts = [str(p) for p in data["prompts"]]
client = WebsocketClientPolicy(host="127.0.0.1", port=port)
actions = {}
for i, prompt in enumerate(prompts):
    reply = client.infer({
        "observation/image": data[f"obs{i}/image"],
        "observation/wrist_image": data[f"obs{i}/wrist_image"],
        "observation/state": data[f"obs{i}/state"],
        "prompt": prompt,
    })
    actions[f"actions{i}"] = reply["actions"]
    assert "infer_ms" in reply["server_timing"]
error = None
try:  # a malformed observation: the server must answer with its traceback (text) and close
    client.infer({"observation/image": data["obs0/image"], "prompt": "no wrist image, no state"})
except RuntimeError as exc:
    error = str(exc)
np.savez(out_npz, **actions)
meta = client.get_server_metadata()
json.dump({"metadata": json.loads(json.dumps(meta, default=str)), "error": error}, open(out_json, "w"))
