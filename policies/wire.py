"""msgpack-numpy framing: the byte format openpi's websocket policy protocol uses
(and StarVLA's variant of it), written once for client and server.

Format (PyPI ``openpi-client``'s ``openpi_client.msgpack_numpy``):
an ndarray travels as a msgpack map with *binary* keys
``{b"__ndarray__": True, b"data": raw bytes (C order), b"dtype": dtype.str, b"shape": [..]}``,
a numpy scalar as ``{b"__npgeneric__": True, b"data": item, b"dtype": dtype.str}``;
everything else is plain msgpack (str as str, bytes as bin). Object, void and
complex dtypes are refused both ways, so nothing from the network is ever
unpickled or turned into Python objects beyond msgpack's own types.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

_ND = b"__ndarray__"
_NG = b"__npgeneric__"
_REFUSED_KINDS = ("V", "O", "c")  # void, object, complex: not in the wire format


class WireError(ValueError):
    """A frame that is not valid msgpack-numpy (or carries a refused dtype)."""


def _encode(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in _REFUSED_KINDS:
        raise WireError(f"cannot send dtype {obj.dtype} over the wire")
    if isinstance(obj, np.ndarray):
        arr = np.ascontiguousarray(obj)
        return {_ND: True, b"data": arr.tobytes(), b"dtype": arr.dtype.str, b"shape": list(arr.shape)}
    if isinstance(obj, np.generic):
        return {_NG: True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot serialise {type(obj).__name__} over the wire")


def _decode(obj: dict) -> Any:
    if _ND in obj:
        dtype = _safe_dtype(obj.get(b"dtype"))
        shape = tuple(int(n) for n in obj.get(b"shape", ()))
        data = obj.get(b"data")
        if not isinstance(data, (bytes, bytearray)):
            raise WireError("ndarray frame without binary data")
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(data):
            raise WireError(f"ndarray frame: {len(data)} bytes do not fill shape {shape} of {dtype}")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    if _NG in obj:
        return _safe_dtype(obj.get(b"dtype")).type(obj[b"data"])
    return obj


def _safe_dtype(spec: Any) -> np.dtype:
    if isinstance(spec, bytes):
        spec = spec.decode("ascii", "replace")
    try:
        dtype = np.dtype(str(spec))
    except TypeError as exc:
        raise WireError(f"unknown dtype {spec!r}") from exc
    if dtype.kind in _REFUSED_KINDS:
        raise WireError(f"refusing dtype {dtype} from the wire")
    return dtype


def packb(obj: Any) -> bytes:
    """Serialise a message (dicts, lists, str, numbers, numpy arrays)."""
    return msgpack.packb(obj, default=_encode, use_bin_type=True)


def unpackb(data: bytes) -> Any:
    """Parse a message; raises :class:`WireError` on anything malformed."""
    if isinstance(data, str):
        raise WireError("expected a binary frame, got text")
    try:
        return msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False)
    except WireError:
        raise
    except Exception as exc:  # msgpack's own errors: ExtraData, FormatError, ValueError...
        raise WireError(f"malformed msgpack frame: {exc}") from None
