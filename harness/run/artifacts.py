"""The frames an agent saw, kept as files beside the store.

Each agent call's observation image(s) are written once under
``OUTDIR/artifacts/frames/<h[:2]>/<h>.jpg``, named by the SHA-256 ``h`` of the
pixels (shape and bytes), so a frame shown in several calls, episodes or
variants is stored once. The transcript entry of the call lists them
(``images``: name, path relative to OUTDIR, width, height, sha256), and the
report shows them beside the prompt and the answer.

Compression: JPEG, quality 90 without chroma subsampling (4:4:4), so the
object labels drawn on EB-ALFRED's frames stay legible; a few tens of KB for a
500x500 frame.

When frames are kept (``record_images``):

* ``true``: always.
* ``false``: never.
* unset (``null``, the default): until the store's frames folder reaches
  :data:`DEFAULT_BUDGET_BYTES`; past it, no new frame is written (calls then
  list ``images`` with ``"skipped": "budget"``), so a long run never fills the
  disk with frames nobody asked for.

Writes are atomic (a temporary file, then ``os.replace``); two processes
writing the same frame write the same bytes. Recording frames does not change
results, so it is not part of the run identity.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

#: Size of the frames folder past which frames are no longer kept unless ``record_images=true``.
DEFAULT_BUDGET_BYTES = 256 * 2**20
#: Folder of the frames, relative to the output directory.
FRAMES_DIR = Path("artifacts") / "frames"
JPEG_QUALITY = 90


def _as_rgb(image: Any) -> np.ndarray | None:
    """An H x W x 3 uint8 array from a PIL image or an array; None if it is not an image."""
    if image is None:
        return None
    if hasattr(image, "convert") and hasattr(image, "size"):  # PIL
        return np.asarray(image.convert("RGB"))
    arr = np.asarray(image) if isinstance(image, np.ndarray) else None
    if arr is None or arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
        return None
    return np.ascontiguousarray(arr[..., :3])


def observation_images(observation: Any) -> list[tuple[str, np.ndarray]]:
    """(key, RGB array) of each image an observation carries: ``image`` first, then
    any other key holding an RGB image (``wrist_image``, ...), in key order."""
    if not isinstance(observation, Mapping):
        return []
    out = []
    keys = (["image"] if "image" in observation else []) + sorted(k for k in observation if k != "image")
    for key in keys:
        arr = _as_rgb(observation[key])
        if arr is not None:
            out.append((str(key), arr))
    return out


class FrameStore:
    """Writes frames under ``<outdir>/artifacts/frames`` within a size budget."""

    def __init__(self, outdir: str | Path, record: bool | None = None, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        self.outdir = Path(outdir)
        self.root = self.outdir / FRAMES_DIR
        self.record = record
        self.budget_bytes = int(budget_bytes)
        self.used = sum(p.stat().st_size for p in self.root.rglob("*.jpg")) if self.root.is_dir() else 0
        self.written = 0

    @property
    def enabled(self) -> bool:
        return self.record is not False

    def save(self, name: str, rgb: np.ndarray) -> dict[str, Any]:
        """The transcript entry of one frame; the file is written unless it exists or the budget is spent."""
        h, w = rgb.shape[:2]
        digest = hashlib.sha256(f"{rgb.shape}".encode() + rgb.tobytes()).hexdigest()
        rel = FRAMES_DIR / digest[:2] / f"{digest}.jpg"
        entry: dict[str, Any] = {"name": name, "width": int(w), "height": int(h), "sha256": digest}
        path = self.outdir / rel
        if not path.exists():
            if self.record is None and self.used >= self.budget_bytes:
                entry["skipped"] = "budget"
                return entry
            data = encode_jpeg(rgb)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{digest}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self.used += len(data)
            self.written += 1
        entry["path"] = rel.as_posix()
        return entry

    def save_observation(self, observation: Any) -> list[dict[str, Any]]:
        if not self.enabled:
            return []
        return [self.save(name, arr) for name, arr in observation_images(observation)]


def encode_jpeg(rgb: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="JPEG", quality=JPEG_QUALITY, subsampling=0, optimize=True)
    return buf.getvalue()
