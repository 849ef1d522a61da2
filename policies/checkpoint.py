"""Cheap, exact-enough checkpoint identity.

A checkpoint's hash goes into the run identity so that a new checkpoint never
resumes an old run. Hashing gigabytes of weights on every run is too slow, and
hashing only configs and safetensors headers is too weak (a fine-tuned
backbone has the same header as its base: same names, shapes, offsets). So:

* files up to ``FULL_HASH_BYTES`` are hashed whole (configs, tokenizers,
  adapters, action heads, small test models);
* larger files contribute their size, their safetensors header when they are
  safetensors, and ``SAMPLE_BLOCKS`` evenly spaced 1 MiB blocks of content -
  fine-tuning changes weights everywhere, so the sampled blocks differ.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

FULL_HASH_BYTES = 64 << 20
SAMPLE_BLOCKS = 16
_BLOCK = 1 << 20
_SKIP_DIRS = {".git", "__pycache__", ".cache"}


def path_digest(path: str | Path) -> str:
    """sha256 (first 16 hex digits) over a file or a directory tree (relative
    names + per-file digests, in sorted order)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_file():
        h.update(_file_digest(p).encode())
    elif p.is_dir():
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(files):
                f = Path(root) / name
                h.update(f.relative_to(p).as_posix().encode() + b"\0" + _file_digest(f).encode() + b"\n")
    else:
        raise FileNotFoundError(f"checkpoint path not found: {p}")
    return h.hexdigest()[:16]


def _file_digest(f: Path) -> str:
    size = f.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with f.open("rb") as fh:
        if size <= FULL_HASH_BYTES:
            for block in iter(lambda: fh.read(_BLOCK), b""):
                h.update(block)
            return h.hexdigest()
        if f.suffix == ".safetensors":
            (n,) = struct.unpack("<Q", fh.read(8))
            h.update(fh.read(min(n, 100 << 20)))
        for i in range(SAMPLE_BLOCKS):
            fh.seek((size - _BLOCK) * i // max(1, SAMPLE_BLOCKS - 1))
            h.update(fh.read(_BLOCK))
    return "sampled:" + h.hexdigest()
