"""Cheap, exact identities of checkpoints (a local folder or file).

Hashed: every small file of the folder (configs, tokenizer, processor, chat
template, generation config, weight index, adapter config), and for each weight
file its size, its safetensors header (tensor names, dtypes, shapes, offsets)
and sampled blocks of its data (the first and last 64 KiB and 16 evenly
spaced 4 KiB blocks). Two trainings of one architecture share headers but not
weights, so the samples tell them apart; a multi-GB checkpoint costs a few
hundred KiB of reads. ``full=True`` hashes every byte instead.

A name that is not a local path (a Hub repo id) is hashed by name and the
revision the caller passes; resolve it locally for an exact identity.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Any

#: Weight files: hashed by header + samples (or fully with full=True).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt")
#: Other files above this size are sampled like weights.
SMALL_FILE_BYTES = 8 * 1024 * 1024
_EDGE = 64 * 1024
_BLOCK = 4 * 1024
_SAMPLES = 16
#: Folders never hashed (caches, VCS).
_SKIP_DIRS = {".git", "__pycache__", ".cache"}


def checkpoint_identity(path: str | os.PathLike[str] | None, *, full: bool = False) -> dict[str, Any] | None:
    """``{"sha256": ..., "files": n, "mode": "sampled"|"full"}`` of a checkpoint, or a name-only identity."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.exists():
        return {"name": str(path), "local": False}
    h = hashlib.sha256()
    files = [p] if p.is_file() else sorted(
        f for f in p.rglob("*") if f.is_file() and not (set(f.relative_to(p).parts[:-1]) & _SKIP_DIRS)
    )
    for f in files:
        rel = f.name if p.is_file() else f.relative_to(p).as_posix()
        h.update(b"\0file\0" + rel.encode())
        _hash_file(h, f, full)
    return {"sha256": h.hexdigest(), "files": len(files), "mode": "full" if full else "sampled"}


def _hash_file(h: "hashlib._Hash", f: Path, full: bool) -> None:
    size = f.stat().st_size
    h.update(struct.pack("<Q", size))
    weight = f.suffix in WEIGHT_SUFFIXES or size > SMALL_FILE_BYTES
    with f.open("rb") as fh:
        if full or not weight or size <= 2 * _EDGE + _SAMPLES * _BLOCK:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
            return
        if f.suffix == ".safetensors":
            head = fh.read(8)
            (n,) = struct.unpack("<Q", head) if len(head) == 8 else (0,)
            if 0 < n < min(size, 256 * 1024 * 1024):
                h.update(head + fh.read(n))
        for offset, length in _samples(size):
            fh.seek(offset)
            h.update(fh.read(length))


def _samples(size: int) -> list[tuple[int, int]]:
    """(offset, length) of the blocks read from a weight file of ``size`` bytes."""
    inner = [(_EDGE + (size - 2 * _EDGE - _BLOCK) * k // (_SAMPLES - 1), _BLOCK) for k in range(_SAMPLES)]
    return [(0, _EDGE), *inner, (size - _EDGE, _EDGE)]
