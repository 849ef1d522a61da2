"""The two websocket policy protocols' message shapes and the LIBERO-side
conversions around them, written once for the client (:mod:`policies.remote`)
and the server (:mod:`policies.server`).

Sources (facts only, no code copied): openpi's
``examples/libero/main.py`` and ``openpi-client`` / ``openpi-server``;
StarVLA's websocket policy server / client and its LIBERO eval client.

The policy observation every LIBERO agent sees (from ``envs/libero``) is a dict
``{"agentview_image": uint8 HxWx3, "wrist_image": uint8 HxWx3, "state": float[8],
"instruction": str}``; images are already rotated 180 degrees.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

OPENPI = "openpi"
STARVLA = "starvla"
PROTOCOLS = (OPENPI, STARVLA)

# --- policy observation keys (the LIBERO env's contract) ---------------------
OBS_IMAGE = "agentview_image"
OBS_WRIST = "wrist_image"
OBS_STATE = "state"
OBS_INSTRUCTION = "instruction"

# --- openpi ---------------------------------------------------------------------
#: Request keys of openpi's LIBERO example client -> reply key "actions" [chunk, dim].
OPENPI_IMAGE, OPENPI_WRIST, OPENPI_STATE, OPENPI_PROMPT = (
    "observation/image", "observation/wrist_image", "observation/state", "prompt")
OPENPI_ACTIONS = "actions"
#: openpi's LIBERO client resizes both images with padding to 224x224 before sending.
OPENPI_RESIZE = 224
#: openpi's LIBERO client executes 5 actions of each returned chunk (``replan_steps``).
OPENPI_REPLAN_STEPS = 5

# --- StarVLA --------------------------------------------------------------------
#: StarVLA's LIBERO client resizes to 224x224 (cv2 INTER_AREA, no padding).
STARVLA_RESIZE = 224
#: Default sampling fields StarVLA's LIBERO client sends with every request.
STARVLA_SAMPLING = {"do_sample": False, "use_ddim": True, "num_ddim_steps": 10}
#: StarVLA's statistics file in a checkpoint's run directory.
STARVLA_STATS_FILE = "dataset_statistics.json"
NORM_MODES = ("min_max", "q99")

#: The two StarVLA reply forms: ``normalized`` (``data.normalized_actions`` in [-1, 1], un-normalised
#: by the client with the checkpoint's statistics) and ``unnormalized`` (``data.actions``, un-normalised
#: by the server: StarVLA's "model server v3", starVLA/starVLA 8904c0684e3f3f9781682febea4c6aeaede85df6).
STARVLA_REPLY_FORMS = ("normalized", "unnormalized")
#: What a v3 server announces at handshake (deployment/model_server/policy_wrapper.py:139-147 at
#: 0ed0aad2c83f587714f6167ef60cf7218b786590: ``action_chunk_size``, ``available_unnorm_keys``, ...).
STARVLA_V3_METADATA = ("action_chunk_size", "available_unnorm_keys")
#: Current StarVLA's LIBERO client resizes each image with PIL's bilinear filter to 224 x 224
#: (examples/simBenchmarks/LIBERO/eval_files/model2libero_interface.py:115-128 at 0ed0aad2).
STARVLA_V3_RESIZE_METHOD = "PIL.BILINEAR"

#: LIBERO's no-op action (gripper -1 = open).
LIBERO_DUMMY_ACTION = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)
ACTION_DIM = 7


# --- images -----------------------------------------------------------------------
def resize_with_pad(image: np.ndarray, size: int) -> np.ndarray:
    """Aspect-preserving bilinear resize into ``size`` x ``size``, zero padded
    (openpi's ``image_tools.resize_with_pad`` behaviour; uint8 in and out)."""
    from PIL import Image

    img = np.asarray(image)
    h, w = img.shape[:2]
    if (h, w) == (size, size):
        return np.ascontiguousarray(img, dtype=np.uint8)
    scale = max(w / size, h / size)
    nh, nw = int(h / scale), int(w / scale)
    resized = np.asarray(Image.fromarray(img.astype(np.uint8)).resize((nw, nh), resample=Image.BILINEAR))
    out = np.zeros((size, size, img.shape[2]), dtype=np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    out[top:top + nh, left:left + nw] = resized
    return out


def resize_area(image: np.ndarray, size: int) -> tuple[np.ndarray, str]:
    """Resize to ``size`` x ``size`` with area averaging; returns the image and
    the method used (cv2's INTER_AREA, StarVLA's choice, else PIL's BOX filter,
    which differs from it slightly - the method goes into the agent identity)."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.shape[:2] == (size, size):
        return img, resize_method()
    try:
        import cv2

        return cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA), "cv2.INTER_AREA"
    except ImportError:
        from PIL import Image

        return np.asarray(Image.fromarray(img).resize((size, size), resample=Image.BOX)), "PIL.BOX"


def resize_bilinear(image: np.ndarray, size: int) -> np.ndarray:
    """``size`` x ``size`` with PIL's bilinear filter (no padding), left as is when already that size."""
    from PIL import Image

    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.shape[:2] == (size, size):
        return img
    return np.asarray(Image.fromarray(img).resize((size, size), resample=Image.BILINEAR))


def starvla_reply_form(metadata: Mapping[str, Any]) -> str:
    """The reply form a StarVLA server speaks, from its handshake metadata (v3 announces its chunk
    size and normalisation keys because it un-normalises itself)."""
    return "unnormalized" if all(k in metadata for k in STARVLA_V3_METADATA) else "normalized"


def resize_method() -> str:
    try:
        import cv2  # noqa: F401

        return "cv2.INTER_AREA"
    except ImportError:
        return "PIL.BOX"


# --- openpi messages ------------------------------------------------------------
def openpi_request(obs: Mapping[str, Any], instruction: str, resize: int | None = OPENPI_RESIZE) -> dict[str, Any]:
    """The openpi LIBERO request for one policy observation."""
    image, wrist = np.asarray(obs[OBS_IMAGE]), np.asarray(obs[OBS_WRIST])
    if resize:
        image, wrist = resize_with_pad(image, resize), resize_with_pad(wrist, resize)
    return {
        OPENPI_IMAGE: np.ascontiguousarray(image, dtype=np.uint8),
        OPENPI_WRIST: np.ascontiguousarray(wrist, dtype=np.uint8),
        OPENPI_STATE: np.asarray(obs[OBS_STATE], dtype=np.float32).reshape(-1),
        OPENPI_PROMPT: str(instruction),
    }


def observation_from_openpi(msg: Mapping[str, Any]) -> dict[str, Any]:
    """The policy observation an openpi request describes (server side)."""
    missing = [k for k in (OPENPI_IMAGE, OPENPI_WRIST, OPENPI_STATE, OPENPI_PROMPT) if k not in msg]
    if missing:
        raise ValueError(f"openpi request lacks {', '.join(missing)}")
    return {
        OBS_IMAGE: np.asarray(msg[OPENPI_IMAGE], dtype=np.uint8),
        OBS_WRIST: np.asarray(msg[OPENPI_WRIST], dtype=np.uint8),
        OBS_STATE: np.asarray(msg[OPENPI_STATE], dtype=np.float32).reshape(-1),
        OBS_INSTRUCTION: str(msg[OPENPI_PROMPT]),
    }


# --- StarVLA messages -------------------------------------------------------------
def starvla_example(obs: Mapping[str, Any], instruction: str, resize: int | None = STARVLA_RESIZE,
                    send_state: bool = False) -> dict[str, Any]:
    """One entry of a StarVLA ``examples`` list: ``{"image": [primary, wrist], "lang": str}``
    (plus ``"state"`` when asked: StarVLA's LIBERO client sends none)."""
    image, wrist = np.asarray(obs[OBS_IMAGE]), np.asarray(obs[OBS_WRIST])
    if resize:
        image, wrist = resize_area(image, resize)[0], resize_area(wrist, resize)[0]
    example: dict[str, Any] = {
        "image": [np.ascontiguousarray(image, dtype=np.uint8), np.ascontiguousarray(wrist, dtype=np.uint8)],
        "lang": str(instruction)}
    if send_state:
        example["state"] = np.asarray(obs[OBS_STATE], dtype=np.float32).reshape(-1)
    return example


def starvla_v3_request(examples: Sequence[Mapping[str, Any]], unnorm_key: str | None,
                       sampling: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The request of current StarVLA's LIBERO client (model2libero_interface.py:130-138 at 0ed0aad2):
    ``examples``, ``unnorm_key`` and the sampling fields; no ``type`` (the server's default is infer,
    deployment/model_server/tools/websocket_policy_server.py:98)."""
    return {"examples": list(examples), "unnorm_key": unnorm_key, **dict(sampling or STARVLA_SAMPLING)}


def starvla_request(examples: Sequence[Mapping[str, Any]], sampling: Mapping[str, Any] | None = None,
                    request_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "infer", "examples": list(examples), **dict(sampling or STARVLA_SAMPLING)}
    if request_id is not None:
        msg["request_id"] = request_id
    return msg


def observation_from_starvla(example: Mapping[str, Any]) -> dict[str, Any]:
    images = example.get("image")
    if not isinstance(images, (list, tuple)) or not images:
        raise ValueError("StarVLA example needs 'image': [primary, wrist]")
    primary = np.asarray(images[0], dtype=np.uint8)
    wrist = np.asarray(images[1], dtype=np.uint8) if len(images) > 1 else np.zeros_like(primary)
    state = example.get("state")
    return {
        OBS_IMAGE: primary,
        OBS_WRIST: wrist,
        OBS_STATE: np.zeros(8, np.float32) if state is None else np.asarray(state, np.float32).reshape(-1),
        OBS_INSTRUCTION: str(example.get("lang", "")),
    }


def starvla_ok(normalized_actions: np.ndarray, request_id: Any = None) -> dict[str, Any]:
    return {"status": "ok", "ok": True, "type": "inference_result", "request_id": request_id,
            "data": {"normalized_actions": np.asarray(normalized_actions, dtype=np.float32)}}


def starvla_error(message: str, request_id: Any = None) -> dict[str, Any]:
    return {"status": "error", "ok": False, "type": "error", "request_id": request_id, "error": {"message": message}}


# --- normalisation statistics ---------------------------------------------------
class ActionStats:
    """One dataset's action statistics (StarVLA / OpenVLA ``dataset_statistics.json``
    entry ``{"action": {"min", "max", "q01", "q99", "mask", ...}}``)."""

    def __init__(self, action: Mapping[str, Any], key: str | None = None):
        self.key = key
        self.raw = {k: np.asarray(v, dtype=np.float64).tolist() if k != "mask" else [bool(b) for b in v]
                    for k, v in action.items() if k in ("min", "max", "q01", "q99", "mean", "std", "mask")}
        dim = len(self.raw.get("min") or self.raw.get("q01") or [])
        if not dim:
            raise ValueError("action statistics need 'min'/'max' or 'q01'/'q99'")
        self.mask = np.asarray(self.raw.get("mask", [True] * dim), dtype=bool)

    def bounds(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = {"min_max": ("min", "max"), "q99": ("q01", "q99")}[_check_mode(mode)]
        if lo not in self.raw or hi not in self.raw:
            raise ValueError(f"statistics lack {lo!r}/{hi!r} needed by norm mode {mode!r}")
        return np.asarray(self.raw[lo]), np.asarray(self.raw[hi])

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()[:16]


def _check_mode(mode: str) -> str:
    if mode not in NORM_MODES:
        raise ValueError(f"unknown norm mode {mode!r} (known: {', '.join(NORM_MODES)})")
    return mode


def load_action_stats(path: str | Path, unnorm_key: str | None = None) -> ActionStats:
    """Statistics from a ``dataset_statistics.json`` file, or a checkpoint
    directory holding one (itself or up to two parents: StarVLA keeps it in the
    run directory above ``checkpoints/``). ``unnorm_key`` picks the dataset; it
    may be omitted when the file holds exactly one."""
    p = Path(path).expanduser()
    if p.is_dir():
        for cand in (p, p.parent, p.parent.parent):
            if (cand / STARVLA_STATS_FILE).is_file():
                p = cand / STARVLA_STATS_FILE
                break
        else:
            raise FileNotFoundError(f"no {STARVLA_STATS_FILE} in {path} or its two parents")
    if not p.is_file():
        raise FileNotFoundError(f"statistics file not found: {p}")
    data = json.loads(p.read_text())
    if "action" in data and isinstance(data["action"], Mapping):  # a single entry, unkeyed
        return ActionStats(data["action"], unnorm_key)
    keys = sorted(data)
    if unnorm_key is None:
        if len(keys) != 1:
            raise ValueError(f"{p} holds statistics for {keys}: choose one with unnorm_key=")
        unnorm_key = keys[0]
    if unnorm_key not in data:
        raise ValueError(f"unnorm_key {unnorm_key!r} not in {p} (keys: {', '.join(keys)})")
    return ActionStats(data[unnorm_key]["action"], unnorm_key)


def unnormalize(normalized: np.ndarray, stats: ActionStats, mode: str = "min_max",
                gripper_index: int = ACTION_DIM - 1) -> np.ndarray:
    """StarVLA's client-side un-normalisation of ``[..., dim]`` actions in [-1, 1]:
    clip to [-1, 1], binarise the gripper column at 0.5 to {0, 1}, then
    ``0.5 * (a + 1) * (high - low) + low`` on the dimensions the mask selects."""
    low, high = stats.bounds(mode)
    a = np.clip(np.asarray(normalized, dtype=np.float64), -1.0, 1.0)
    if a.shape[-1] != low.shape[0]:
        raise ValueError(f"actions have {a.shape[-1]} dims, statistics {low.shape[0]}")
    a[..., gripper_index] = (a[..., gripper_index] >= 0.5).astype(np.float64)
    return np.where(stats.mask, 0.5 * (a + 1.0) * (high - low) + low, a)


def normalize(actions: np.ndarray, stats: ActionStats, mode: str = "min_max") -> np.ndarray:
    """Inverse of :func:`unnormalize` on the masked dimensions (server side)."""
    low, high = stats.bounds(mode)
    a = np.asarray(actions, dtype=np.float64)
    span = np.where(high - low == 0, 1.0, high - low)
    return np.where(stats.mask, np.clip(2.0 * (a - low) / span - 1.0, -1.0, 1.0), a)


def gripper_to_libero(open_value: np.ndarray) -> np.ndarray:
    """StarVLA's LIBERO client: gripper {0 close, 1 open} -> LIBERO {+1 close, -1 open}."""
    return 1.0 - 2.0 * (np.asarray(open_value) > 0.5)


def gripper_from_libero(libero_value: np.ndarray) -> np.ndarray:
    """LIBERO gripper (-1 open, +1 close) -> the {0 close, 1 open} column StarVLA models predict."""
    return (np.asarray(libero_value) < 0).astype(np.float64)


def stable_digest(obj: Any) -> str:
    """A short hash of JSON-able data with numpy arrays (server metadata)."""
    return hashlib.sha256(json.dumps(_jsonable(obj), sort_keys=True).encode()).hexdigest()[:16]


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k.decode() if isinstance(k, bytes) else k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return {"dtype": obj.dtype.str, "shape": list(obj.shape), "sha256": hashlib.sha256(obj.tobytes()).hexdigest()}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, bytes):
        return obj.hex()
    return obj
