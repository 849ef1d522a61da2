"""Records what OpenVLA's and OpenVLA-OFT's own LIBERO evaluation code makes of real LIBERO frames.

Their client-side preprocessing needs TensorFlow (``tf.image.encode_jpeg`` / ``resize`` lanczos3 /
``crop_and_resize``), which this project does not install. So this script is run once, outside the
project's environment, with the versions those repositories pin (tensorflow 2.15.0, their
pyproject.toml), and its output is kept as ``tests/policies/data/openvla_preprocess.npz``;
tests/policies/test_openvla.py compares the client's numpy reproduction with it.

It runs the upstream functions themselves: their source is read from checkouts of
openvla/openvla (c8f03f48af692657d3060c19588038c7220e9af9) and moojink/openvla-oft
(213c5ff8d6e9673885d7e4dd6f2ce73b5d8a45db), the named functions are compiled out of those
files (their modules import LIBERO, torch and prismatic, which are not needed for these
functions) and called on the frames. Only ``processor``, ``vla`` and ``torch`` are stand-ins, in
OpenVLA's ``get_vla_action``: the processor records the image it is given, which is the image
the model would see.

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.15.0 pillow
    /tmp/tfvenv/bin/python tests/policies/openvla_goldens.py FRAMES.npz OPENVLA_CHECKOUT OFT_CHECKOUT OUT.npz

``FRAMES.npz`` holds real LIBERO observations as the ``libero`` suite gives them to a policy
(``protocol=openvla``: 256 px, rotated 180 degrees) plus the raw robosuite end-effector values
(``agentview_<i>``, ``wrist_<i>``, ``robot0_eef_pos_<i>``, ``robot0_eef_quat_<i>``,
``robot0_gripper_qpos_<i>``).
"""

from __future__ import annotations

import ast
import sys
import types
from collections import deque
from pathlib import Path

import numpy as np


def functions(path: Path, names: list[str], namespace: dict) -> dict:
    """Compile the named top-level functions (and constants) of ``path`` into ``namespace``."""
    tree = ast.parse(path.read_text())
    body = [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name in names)
            or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) in names for t in n.targets))]
    found = {getattr(n, "name", None) or n.targets[0].id for n in body}
    missing = set(names) - found
    if missing:
        raise SystemExit(f"{path}: no {sorted(missing)}")
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def main(frames_path: str, openvla: str, oft: str, out: str) -> None:
    import tensorflow as tf
    from PIL import Image

    frames = dict(np.load(frames_path))
    base = {"tf": tf, "np": np, "Image": Image, "math": __import__("math")}
    ov = Path(openvla) / "experiments/robot"
    ft = Path(oft) / "experiments/robot"

    # OpenVLA: get_libero_image (resize_image inside), then get_vla_action's center crop
    ov_ns = functions(ov / "libero/libero_utils.py", ["resize_image", "get_libero_image"], dict(base))
    seen: list = []

    class Inputs(dict):
        def to(self, *a, **k):
            return self

    def processor(prompt, image):
        seen.append((prompt, np.asarray(image)))
        return Inputs()

    vla = types.SimpleNamespace(predict_action=lambda **k: np.zeros(7))
    ov_ns2 = functions(ov / "openvla_utils.py", ["crop_and_resize", "get_vla_action", "OPENVLA_V01_SYSTEM_PROMPT"],
                       {**base, "DEVICE": "cpu", "torch": types.SimpleNamespace(bfloat16=None)})
    ov_grip = functions(ov / "robot_utils.py", ["normalize_gripper_action", "invert_gripper_action"], dict(base))

    # OFT: prepare_observation (run_libero_eval.py) with its helpers; process_action
    ft_ns = functions(ft / "openvla_utils.py", ["resize_image_for_policy", "crop_and_resize", "center_crop_image",
                                                "OPENVLA_IMAGE_SIZE"], dict(base))
    functions(ft / "libero/libero_utils.py", ["get_libero_image", "get_libero_wrist_image", "quat2axisangle"], ft_ns)
    functions(ft / "robot_utils.py", ["normalize_gripper_action", "invert_gripper_action"], ft_ns)
    functions(ft / "libero/run_libero_eval.py", ["prepare_observation", "process_action"], ft_ns)

    result: dict[str, np.ndarray] = {}
    i = 0
    while f"agentview_{i}" in frames:
        av, wr = frames[f"agentview_{i}"], frames[f"wrist_{i}"]
        result[f"in_agentview_{i}"], result[f"in_wrist_{i}"] = av, wr
        result[f"in_state_{i}"] = frames[f"state_{i}"]  # the suite's state of the same observation
        # the suite's frames are rotated already; the scripts rotate the raw ones
        raw = {"agentview_image": np.ascontiguousarray(av[::-1, ::-1]),
               "robot0_eye_in_hand_image": np.ascontiguousarray(wr[::-1, ::-1]),
               **{k: frames[f"{k}_{i}"].copy() for k in ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos")}}
        img = ov_ns["get_libero_image"](raw, 224)
        result[f"openvla_resized_{i}"] = img
        for crop in (False, True):
            seen.clear()
            ov_ns2["get_vla_action"](vla, processor, "openvla/openvla-7b-finetuned-libero-spatial",
                                     {"full_image": img}, "Pick Up The Bowl", "libero_spatial", center_crop=crop)
            (prompt, seen_img), = seen
            if crop:
                result[f"openvla_model_image_{i}_crop1"] = seen_img
            else:  # without the crop the model sees the resized image itself
                result[f"openvla_uncropped_is_resized_{i}"] = np.array(np.array_equal(seen_img, img))
        result["openvla_prompt"] = np.array(prompt)
        obs, _ = ft_ns["prepare_observation"](raw, 224)
        # OFT resizes as OpenVLA does (the same function body): kept once, the equality recorded
        result[f"oft_full_is_openvla_resized_{i}"] = np.array(np.array_equal(obs["full_image"], img))
        result[f"oft_wrist_image_{i}"] = obs["wrist_image"]
        result[f"oft_state_{i}"] = obs["state"]
        # what OFT's deploy server then feeds the model with center_crop=True (server side)
        server_crop = np.asarray(ft_ns["center_crop_image"](Image.fromarray(obs["full_image"])))
        result[f"oft_server_crop_is_openvla_crop_{i}"] = np.array(
            np.array_equal(server_crop, result[f"openvla_model_image_{i}_crop1"]))
        i += 1

    raw_actions = np.array([[0.1, -0.2, 0.3, 0.01, -0.02, 0.03, g] for g in (0.0, 0.2, 0.5, 0.7, 1.0, 0.49, 0.51)])
    result["gripper_in"] = raw_actions
    result["openvla_gripper_out"] = np.stack([
        ov_grip["invert_gripper_action"](ov_grip["normalize_gripper_action"](a.copy(), binarize=True))
        for a in raw_actions])
    result["oft_gripper_out"] = np.stack([ft_ns["process_action"](a.copy(), "openvla") for a in raw_actions])
    # OFT's action queue: deque(maxlen=num_open_loop_steps).extend(chunk) then popleft per step
    chunk = list(np.arange(8 * 7, dtype=np.float64).reshape(8, 7))
    for n in (8, 5, 10):
        q: deque = deque(maxlen=n)
        q.extend(chunk)
        result[f"oft_queue_{n}"] = np.stack([q.popleft() for _ in range(len(q))])
    np.savez_compressed(out, **result)
    print(f"{out}: {len(result)} arrays, tensorflow {tf.__version__}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
