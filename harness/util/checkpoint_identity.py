"""One identity for a checkpoint (a local folder or file), for every run identity that names one:
a planner's model and adapter, a served policy's checkpoint (``checkpoint_id`` of an experiment's
servers), a policy's weights, a judge's local model.

The rule (:func:`path_digest`): a checkpoint's hash goes into the run identity so that a new
checkpoint never resumes an old run. Hashing gigabytes of weights on every run is too slow, and
hashing only configs and safetensors headers is too weak (a fine-tuned backbone has the same
header as its base: same names, shapes, offsets). So:

* files up to :data:`FULL_HASH_BYTES` are hashed whole (configs, tokenizers, adapters, action
  heads, small test models);
* larger files contribute their size, their safetensors header when they are safetensors, and
  :data:`SAMPLE_BLOCKS` evenly spaced 1 MiB blocks of content: fine-tuning changes weights
  everywhere, so the sampled blocks differ. ``full=True`` hashes every byte instead.

A name that is not a local path (a Hub repo id) is identified by its name alone
(:func:`checkpoint_identity`); resolve it locally for an exact identity.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Any

#: Files up to this size are hashed whole.
FULL_HASH_BYTES = 64 << 20
#: Blocks sampled from a larger file.
SAMPLE_BLOCKS = 16
_BLOCK = 1 << 20
#: Folders never hashed (caches, VCS).
_SKIP_DIRS = {".git", "__pycache__", ".cache"}


def _files(p: Path) -> list[tuple[str, Path]]:
    """(relative name, file) of every file of the folder ``p``, in the order they are hashed."""
    found = []
    for root, dirs, files in os.walk(p):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        found += [(f.relative_to(p).as_posix(), f) for f in (Path(root) / name for name in sorted(files))]
    return found


def path_digest(path: str | os.PathLike[str], *, full: bool = False) -> str:
    """sha256 (first 16 hex digits) over a file, or over a folder's tree (relative names and
    per-file digests, in sorted order)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_file():
        h.update(_file_digest(p, full).encode())
    elif p.is_dir():
        for rel, f in _files(p):
            h.update(rel.encode() + b"\0" + _file_digest(f, full).encode() + b"\n")
    else:
        raise FileNotFoundError(f"checkpoint path not found: {p}")
    return h.hexdigest()[:16]


def checkpoint_identity(path: str | os.PathLike[str] | None, *, full: bool = False) -> dict[str, Any] | None:
    """``{"sha256": path_digest, "files": n, "mode": "sampled"|"full"}`` of a local checkpoint,
    ``{"name": ..., "local": False}`` of a name that is not a local path, None of None."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.exists():
        return {"name": str(path), "local": False}
    return {"sha256": path_digest(p, full=full), "files": 1 if p.is_file() else len(_files(p)),
            "mode": "full" if full else "sampled"}


def _file_digest(f: Path, full: bool = False) -> str:
    size = f.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with f.open("rb") as fh:
        if full or size <= FULL_HASH_BYTES:
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
