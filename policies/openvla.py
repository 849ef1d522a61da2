"""``openvla``: OpenVLA and OpenVLA-OFT checkpoints behind their repositories' REST deploy servers.

Both repositories serve a checkpoint with ``vla-scripts/deploy.py`` (FastAPI, ``POST /act``,
JSON bodies whose numpy arrays are written the json-numpy way: ``{"__numpy__": base64 bytes,
"dtype": descr, "shape": [...]}``) and leave the LIBERO-side steps to the client. This client
does those steps exactly as each repository's LIBERO evaluation script does them; every step
below names its source line. Sources: openvla/openvla at
c8f03f48af692657d3060c19588038c7220e9af9 ("OV") and moojink/openvla-oft at
213c5ff8d6e9673885d7e4dd6f2ce73b5d8a45db ("OFT"); paths under ``experiments/robot/``
unless they start with ``vla-scripts/``.

``protocol=openvla`` (OV ``libero/run_libero_eval.py``, one action per query):

1. the suite's agentview frame, 256 px (run_libero_eval.py:156) rotated 180 degrees
   (libero/libero_utils.py:56): the ``libero`` suite's ``protocol=openvla`` preset gives it so;
2. JPEG encode + decode, then ``tf.image.resize(..., 224, "lanczos3", antialias=True)``,
   rounded and clipped to uint8 (libero_utils.py:33-47 ``resize_image``; 224 from
   robot_utils.py:50-60);
3. with ``center_crop`` (default true, run_libero_eval.py:66): a centre crop of 0.9 of the
   area resized back to 224 with ``tf.image.crop_and_resize`` (openvla_utils.py:81-124,
   :135-155);
4. ``POST /act {"image", "instruction", "unnorm_key"}`` (vla-scripts/deploy.py:99-100), the
   instruction being ``task.language`` (libero_utils.py:20); the server builds the prompt
   (deploy.py:58-62, :103) and replies with the un-normalised action itself (deploy.py:105-109);
   ``unnorm_key`` is the task suite's name, or ``<name>_no_noops`` when the checkpoint has
   only that (run_libero_eval.py:101, :110-112): the server's statistics are not visible over
   REST, so when the first key is refused (deploy.py:110-118 answers ``"error"``) the
   ``_no_noops`` one is tried once and kept for the suite;
5. the gripper mapped from [0, 1] to [-1, +1] and binarised with ``np.sign``
   (robot_utils.py:75-92, called at run_libero_eval.py:220; 0.5 becomes 0), then its sign
   flipped (robot_utils.py:95-102, run_libero_eval.py:224-225).

``protocol=openvla_oft`` (OFT ``libero/run_libero_eval.py``, an action chunk per query):

1. both frames, 256 px (run_libero_eval.py:116, :384), rotated 180 degrees
   (libero/libero_utils.py:33-44);
2. each JPEG round trip + lanczos3 resize to 224 (run_libero_eval.py:249-251,
   openvla_utils.py:520-543, the same steps as OV's);
3. ``state`` = end-effector position, axis-angle of its quaternion and the two gripper joint
   positions, 8 values (run_libero_eval.py:257-259): the suite's ``state``, built the same way;
4. ``POST /act {"full_image", "wrist_image", "state", "instruction"}``: the observation dict
   plus the instruction, as OFT's own server client sends it (aloha/run_aloha_eval.py:195,
   :205; openvla_utils.py:801-818); the server reads ``full_image``, every key containing
   ``wrist`` and ``state`` (openvla_utils.py:746-748, :775) and replies with the list of the
   chunk's actions (openvla_utils.py:798, deploy.py:95). The centre crop, the proprioception
   normalisation and ``unnorm_key`` are the *server's* flags (vla-scripts/deploy.py:132, :136;
   openvla_utils.py:707-708, :776-777), so this client refuses them: start deploy.py with
   ``--center_crop True --unnorm_key <suite>[_no_noops] --num_images_in_input 2`` (its default
   is 3, deploy.py:129) for LIBERO;
5. the chunk goes into ``deque(maxlen=num_open_loop_steps)`` (default 8, run_libero_eval.py:100,
   :306, :341) and is executed one ``popleft`` per step before the next query (:328, :344): with
   a chunk longer than ``num_open_loop_steps`` that keeps its *last* ``num_open_loop_steps``
   actions, reproduced here;
6. each action's gripper normalised, binarised and flipped as OV's step 5
   (run_libero_eval.py:265-275, :347; robot_utils.py:149-199).

Image steps 2-3 are TensorFlow ops in the scripts; this project does not install TensorFlow, so
they are reproduced: the JPEG is encoded by Pillow at quality 95 (TF's ``encode_jpeg`` default;
the bytes differ from TF's only in the JFIF density field) and decoded by libjpeg-turbo with
its fast integer IDCT (simplejpeg ``fastdct=True``: TF's ``decode_image`` default is
``INTEGER_FAST``), equal to TF's pixels; the lanczos3 resize and the crop are numpy in float32
with TF's kernels' arithmetic (tensorflow ``core/kernels/image/scale_and_translate_op.cc``,
``sampling_kernels.h``, ``crop_and_resize_op.cc``). tests/policies/test_openvla.py compares
them with the scripts' own functions run under tensorflow 2.15.0 (the version both pin) on
real LIBERO frames: JPEG and crop equal; the resize off by 1 on a handful of the 150528
values (a last-bit difference of a few kernel weights).

Transport: one POST per observation (the deploy servers take one); refused connections,
timeouts and HTTP 5xx are retried with backoff, then ``ConnectionError`` (the runner records
an ``agent`` error). The servers report nothing about their checkpoint: name it with
``checkpoint_id=`` (in the identity).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from harness.interfaces import AgentReply, AgentRequest
from harness.params import parse
from harness.util.redact import redact_cut, redact_text
from harness.types import EpisodeSpec
from policies.plugin import OPENVLA_PROTOCOLS, OpenVLAParams

log = logging.getLogger(__name__)

OPENVLA, OPENVLA_OFT = OPENVLA_PROTOCOLS
#: The deploy scripts' default ports (OV vla-scripts/deploy.py:133, OFT vla-scripts/deploy.py:116).
DEFAULT_PORTS = {OPENVLA: 8000, OPENVLA_OFT: 8777}
#: Policy input side (OV robot_utils.py:56-57; OFT openvla_utils.py:40).
IMAGE_SIZE = 224
#: Centre crop area (OV openvla_utils.py:137; OFT openvla_utils.py:607).
CROP_SCALE = 0.9
#: tf.image.encode_jpeg's default quality.
JPEG_QUALITY = 95
#: OFT's actions per query in LIBERO (OFT prismatic/vla/constants.py:27) and its open-loop default.
OFT_CHUNK = 8
OFT_OPEN_LOOP_STEPS = 8
ACTION_DIM = 7
#: Names the image pipeline (goes into the identity: a change of it is another run).
PREPROCESS = "pil-q95+turbo-ifast;lanczos3-f32-tf;crop_and_resize-f32-tf:v1"

F32 = np.float32


# --- json-numpy (the deploy scripts' body format) ---------------------------------------------
def _np_default(o: Any) -> Any:
    if isinstance(o, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(o)
        return {"__numpy__": base64.b64encode(a.tobytes()).decode(), "dtype": np.lib.format.dtype_to_descr(a.dtype),
                "shape": list(a.shape)}
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _np_hook(d: dict) -> Any:
    if "__numpy__" in d:
        a = np.frombuffer(base64.b64decode(d["__numpy__"]), np.lib.format.descr_to_dtype(d["dtype"]))
        return a.reshape(d["shape"]) if d["shape"] else a[0]
    return d


def dumps(obj: Any) -> str:
    """``obj`` as json-numpy writes it (arrays as base64 of their C-order bytes)."""
    return json.dumps(obj, default=_np_default)


def loads(text: str | bytes) -> Any:
    return json.loads(text, object_hook=_np_hook)


# --- images --------------------------------------------------------------------------------------
def jpeg_round_trip(image: np.ndarray) -> np.ndarray:
    """``tf.io.decode_image(tf.image.encode_jpeg(image))``: Pillow encodes at quality 95 with 4:2:0
    chroma (TF's defaults), libjpeg-turbo decodes with the fast integer IDCT (TF's default)."""
    import simplejpeg
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(buf, "JPEG", quality=JPEG_QUALITY)
    return simplejpeg.decode_jpeg(buf.getvalue(), colorspace="RGB", fastdct=True, fastupsample=False)


def _lanczos3(x: np.ndarray) -> np.ndarray:
    """TF's ``LanczosKernelFunc(3)`` in float32 (its ``kPI`` is 3.14159265359)."""
    x = np.abs(x).astype(F32)
    pi, r = F32(3.14159265359), F32(3.0)
    sa = np.sin((pi * x).astype(np.float64)).astype(F32)
    sb = np.sin((pi * x / r).astype(np.float64)).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (r * sa * sb / (pi * pi * x * x)).astype(F32)
    return np.where(x > r, F32(0), np.where(x <= F32(1e-3), F32(1), v)).astype(F32)


@lru_cache(maxsize=8)
def _spans(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, weights [out, span]) of TF's ``ComputeSpansCore`` for lanczos3 with antialias."""
    scale = F32(out_size) / F32(in_size)
    inv_scale = F32(1.0 / float(scale))
    kernel_scale = max(inv_scale, F32(1))
    radius = F32(3)
    span = min(2 * int(math.ceil(float(radius * kernel_scale))) + 1, in_size)
    one_over = F32(1) / kernel_scale
    starts = np.zeros(out_size, dtype=np.int64)
    weights = np.zeros((out_size, span), dtype=F32)
    for x in range(out_size):
        sample = F32(F32(x) + F32(0.5)) * inv_scale
        if sample < 0 or sample > in_size:
            continue
        s0 = min(max(int(math.ceil(float(sample - radius * kernel_scale - F32(0.5)))), 0), in_size - 1)
        s1 = min(max(int(math.floor(float(sample + radius * kernel_scale - F32(0.5)))), 0), in_size - 1) + 1
        w = _lanczos3(np.abs(((np.arange(s0, s1).astype(F32) + F32(0.5)) - sample) * one_over))
        total = F32(0)
        for v in w:  # summed in order, in float32
            total = F32(total + v)
        if abs(total) >= 1000 * np.finfo(F32).tiny:
            weights[x, :len(w)] = w * (F32(1) / total)
        starts[x] = s0
    return starts, weights


def _gather(img: np.ndarray, starts: np.ndarray, weights: np.ndarray, axis: int) -> np.ndarray:
    """Weighted sums along ``axis``, accumulated tap by tap in float32 as TF's GatherRows/Columns."""
    src = np.moveaxis(img, axis, 0)
    n = src.shape[0]
    acc = np.zeros((len(starts),) + src.shape[1:], dtype=F32)
    shape = (-1,) + (1,) * (src.ndim - 1)
    for i in range(weights.shape[1]):
        idx = np.minimum(starts + i, n - 1)  # taps past the edge have weight 0
        acc = (acc + (weights[:, i].reshape(shape) * src[idx]).astype(F32)).astype(F32)
    return np.moveaxis(acc, 0, axis)


def resize_lanczos3(image: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """``tf.cast(tf.clip_by_value(tf.round(tf.image.resize(image, (size, size), "lanczos3",
    antialias=True)), 0, 255), tf.uint8)``: rows first, then columns (scale_and_translate_op.cc)."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    x = _gather(img.astype(F32), *_spans(size, h), axis=0)
    x = _gather(x, *_spans(size, w), axis=1)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)  # tf.round: half to even, as np.rint


def resize_for_policy(image: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """OV ``resize_image`` / OFT ``resize_image_for_policy``: JPEG round trip, then lanczos3."""
    return resize_lanczos3(jpeg_round_trip(image), size)


def center_crop(image: np.ndarray, crop_scale: float = CROP_SCALE, size: int = IMAGE_SIZE) -> np.ndarray:
    """OV's centre crop: ``convert_image_dtype`` to float, ``crop_and_resize`` (bilinear) of the
    central ``sqrt(crop_scale)`` box to ``size``, clip, ``convert_image_dtype`` back (x 255.5,
    saturating truncation)."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    im = img.astype(F32) * F32(1.0 / 255)
    side = F32(min(max(float(np.sqrt(F32(crop_scale))), 0.0), 1.0))
    off = F32((F32(1) - side) / F32(2))
    lo, hi = off, F32(off + side)
    hs = F32(F32(F32(hi - lo) * F32(h - 1)) / F32(size - 1))
    ws = F32(F32(F32(hi - lo) * F32(w - 1)) / F32(size - 1))
    in_y = (F32(lo * F32(h - 1)) + np.arange(size).astype(F32) * hs).astype(F32)
    in_x = (F32(lo * F32(w - 1)) + np.arange(size).astype(F32) * ws).astype(F32)
    ty, by = np.floor(in_y).astype(int), np.ceil(in_y).astype(int)
    lx, rx = np.floor(in_x).astype(int), np.ceil(in_x).astype(int)
    yl = (in_y - ty.astype(F32)).astype(F32)[:, None, None]
    xl = (in_x - lx.astype(F32)).astype(F32)[None, :, None]
    tl, tr = im[ty][:, lx], im[ty][:, rx]
    bl, br = im[by][:, lx], im[by][:, rx]
    top = (tl + ((tr - tl) * xl).astype(F32)).astype(F32)
    bottom = (bl + ((br - bl) * xl).astype(F32)).astype(F32)
    out = (top + ((bottom - top) * yl).astype(F32)).astype(F32)
    out = np.clip(out, 0, 1)
    return np.clip(out * F32(255.5), 0, 255).astype(np.uint8)


# --- actions -------------------------------------------------------------------------------------
def libero_gripper(actions: np.ndarray) -> np.ndarray:
    """``invert_gripper_action(normalize_gripper_action(a, binarize=True))``: gripper g in [0, 1]
    (1 open) -> ``-sign(2 g - 1)`` (LIBERO: -1 open, +1 close; 0.5 -> 0)."""
    a = np.array(actions, dtype=np.float64)
    a[..., -1] = 2 * (a[..., -1] - 0.0) / (1.0 - 0.0) - 1
    a[..., -1] = np.sign(a[..., -1])
    a[..., -1] = a[..., -1] * -1.0
    return a


def open_loop(chunk: np.ndarray, steps: int) -> np.ndarray:
    """What ``deque(maxlen=steps)`` holds after ``extend(chunk)``: the last ``steps`` actions."""
    return chunk[-steps:]


class OpenVLAPolicy:
    name = "openvla"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = True

    Params = OpenVLAParams

    def __init__(self, **values: Any):
        self.params = p = parse(self.Params, values)
        self.protocol = p.protocol
        base = p.url or f"http://127.0.0.1:{DEFAULT_PORTS[p.protocol]}"
        self.url = base if base.rstrip("/").endswith("/act") else base.rstrip("/") + "/act"
        self.center_crop = True if p.center_crop is None else bool(p.center_crop)
        self.open_loop_steps = p.num_open_loop_steps or OFT_OPEN_LOOP_STEPS
        #: OpenVLA: one action per query; OFT: the queue (already cut to num_open_loop_steps) runs whole.
        self.replan_steps = 1 if p.protocol == OPENVLA else None
        self.max_concurrent_calls = p.max_concurrent_calls
        self._unnorm: dict[str, str] = {}  # suite -> the key the server accepted
        self._lock = threading.Lock()
        if not p.checkpoint_id:
            log.warning("the %s deploy server reports no checkpoint: runs of different checkpoints behind %s would "
                        "share a run identity; name it with policy.params.checkpoint_id=...", p.protocol, self.url)
        import simplejpeg  # noqa: F401  (fail now, not at the first step)

    def identity(self) -> dict[str, Any]:
        """Derived facts (the parameters are hashed from :attr:`params`)."""
        ident: dict[str, Any] = {"policy": self.name, "protocol": self.protocol, "preprocess": PREPROCESS,
                                 "image_size": IMAGE_SIZE, "replan_steps": self.replan_steps}
        if self.protocol == OPENVLA:
            ident.update(center_crop=self.center_crop, crop_scale=CROP_SCALE,
                         unnorm_key=self.params.unnorm_key or "<suite>|<suite>_no_noops")
        else:
            ident.update(num_open_loop_steps=self.open_loop_steps)
        return ident

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def close(self) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [self._act_one(r) for r in requests]

    # --- one query -------------------------------------------------------------------------------
    def _act_one(self, r: AgentRequest) -> AgentReply:
        obs = r.observation
        instruction = str(obs.get("instruction") or r.episode.instruction)
        if self.protocol == OPENVLA:
            image = resize_for_policy(obs["agentview_image"])
            if self.center_crop:
                image = center_crop(image)
            raw, reply = self._query_openvla(image, instruction, r.episode.split)
            action = _actions(reply, "action")
            if action.shape != (ACTION_DIM,):
                raise ValueError(f"OpenVLA deploy server returned an action of shape {action.shape}, expected (7,)")
            return AgentReply(actions=list(libero_gripper(action[None]).astype(np.float32)), raw_output=raw)
        payload = {"full_image": resize_for_policy(obs["agentview_image"]),
                   "wrist_image": resize_for_policy(obs["wrist_image"]),
                   "state": np.asarray(obs["state"], dtype=np.float64).reshape(-1),
                   "instruction": instruction}
        raw, reply = self._post(payload)
        chunk = _actions(reply, "action chunk")
        if chunk.ndim != 2 or chunk.shape[1] != ACTION_DIM or not len(chunk):
            raise ValueError(f"OpenVLA-OFT deploy server returned actions of shape {chunk.shape}, expected [chunk, 7]")
        return AgentReply(actions=list(libero_gripper(open_loop(chunk, self.open_loop_steps)).astype(np.float32)),
                          raw_output=raw)

    def _query_openvla(self, image: np.ndarray, instruction: str, split: str) -> tuple[str, Any]:
        if self.params.unnorm_key:
            keys = [self.params.unnorm_key]
        else:
            suite = _suite_name(split)
            with self._lock:
                known = self._unnorm.get(suite)
            keys = [known] if known else [suite, f"{suite}_no_noops"]
        for key in keys:
            raw, reply = self._post({"image": image, "instruction": instruction, "unnorm_key": key})
            if not _is_error(reply):
                with self._lock:
                    self._unnorm[_suite_name(split)] = key
                return raw, reply
        raise RuntimeError(f"OpenVLA deploy server error for unnorm_key {' and '.join(map(repr, keys))} (deploy.py "
                           "answers 'error' and logs the traceback: a key its checkpoint lacks, or a bad request)")

    def _post(self, payload: Mapping[str, Any]) -> tuple[str, Any]:
        from harness.util.wallclock import fetch

        body = dumps(dict(payload)).encode()
        p = self.params
        last: Exception | None = None
        for attempt in range(p.retries):
            if attempt:
                time.sleep(min(p.backoff_s * 2 ** (attempt - 1), p.max_backoff_s))
            req = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                # The whole exchange within timeout_s of wall clock (a dripping server included).
                # Redacted as it enters (harness/util/redact.py): an error naming a credential, cut or not.
                raw = redact_cut(fetch(req, p.timeout_s)[1].decode())
                break
            except urllib.error.HTTPError as exc:
                if exc.code < 500:
                    raise RuntimeError(f"deploy server {redact_text(self.url)}: HTTP {exc.code} "
                                       f"{redact_cut(str(exc.reason), 2000)}") from None
                last = exc
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                last = exc
            log.warning("deploy server %s: %s (attempt %d/%d)", redact_text(self.url), redact_cut(str(last), 2000),
                        attempt + 1, p.retries)
        else:
            raise ConnectionError(f"deploy server {redact_text(self.url)} unreachable after {p.retries} attempts "
                                  f"({type(last).__name__}: {redact_cut(str(last), 2000)}); start the repository's vla-scripts/deploy.py")
        reply = loads(raw)
        if self.protocol == OPENVLA_OFT and _is_error(reply):
            raise RuntimeError("OpenVLA-OFT deploy server error (deploy.py answers 'error' and logs the traceback)")
        return raw, reply


def _is_error(reply: Any) -> bool:
    """deploy.py's failure answer: the JSON string ``"error"``."""
    return isinstance(reply, str) and reply == "error"


def _actions(reply: Any, what: str) -> np.ndarray:
    try:
        a = np.asarray(reply if not isinstance(reply, list) else [np.asarray(x) for x in reply], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"deploy server returned no {what}: {redact_cut(str(reply), 120)!r}") from None
    return a


def _suite_name(split: str) -> str:
    """The LIBERO task suite a split belongs to (LIBERO-PRO splits: their base suite)."""
    try:
        from envs.libero.protocol import base_split

        return base_split(split)
    except (ImportError, KeyError):
        return split
