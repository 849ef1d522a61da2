"""Comparing what two runs or two episodes did, and showing a difference in one line: a record's
results less its timings (:func:`comparable`), where two traces or values first differ
(:func:`first_difference`, :func:`differs`), actions as plain JSON-like values
(:func:`plain_action`) and a value cut short for a message (:func:`short`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from harness.interfaces import InvalidOutput
from harness.types import INFO_ARTIFACTS, INFO_PRIVILEGED, EpisodeRecord

#: Record fields that may differ with scheduling (everything else must be equal).
_TIMING = frozenset({"wall_time_s"})
#: Transcript fields that may differ with scheduling.
CALL_TIMING = frozenset({"latency_s", "batch"})


def comparable(record: EpisodeRecord) -> dict[str, Any]:
    """A record's results: its fields less timings and the files kept as evidence
    (``extra["artifacts"]``: a video's path names its run)."""
    out = {k: v for k, v in dataclasses.asdict(record).items() if k not in _TIMING}
    out["extra"] = {k: v for k, v in (out.get("extra") or {}).items() if k != INFO_ARTIFACTS}
    return out


def first_difference(a: list[Any], b: list[Any]) -> str | None:
    """Where two traces first differ (the first entry that differs, else their lengths)."""
    for i, (x, y) in enumerate(zip(a, b)):
        where = differs(x, y)
        if where is not None:
            return f"{'reset' if i == 0 else f'step {i}'} differs at {where}"
    if len(a) != len(b):
        return f"{len(a) - 1} steps, then {len(b) - 1}"
    return None


def differs(x: Any, y: Any, path: str = "") -> str | None:
    """Where ``x`` and ``y`` differ (a path like ``[2]['image']``), None when equal."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.shape != ya.shape or xa.dtype != ya.dtype or not np.array_equal(xa, ya, equal_nan=xa.dtype.kind == "f"):
            return path or "the array"
        return None
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        if set(x) != set(y):
            return f"{path} keys {sorted(map(str, set(x) ^ set(y)))}"
        for k in x:
            where = differs(x[k], y[k], f"{path}[{k!r}]")
            if where is not None:
                return where
        return None
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        if len(x) != len(y):
            return f"{path} (length {len(x)} vs {len(y)})"
        for i, (u, v) in enumerate(zip(x, y)):
            where = differs(u, v, f"{path}[{i}]")
            if where is not None:
                return where
        return None
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return None
    if hasattr(x, "tobytes") and hasattr(y, "tobytes") and type(x) is type(y) and not isinstance(x, (bytes, str)):
        return None if x.tobytes() == y.tobytes() else (path or "an image")  # PIL images
    try:
        same = bool(x == y)
    except Exception:  # noqa: BLE001
        same = False
    return None if same else (path or "the value")


def plain_action(action: Any) -> Any:
    """An action as a plain value for traces and comparisons (an array as a list, unusable
    output as ``("invalid", raw)``)."""
    if isinstance(action, np.ndarray):
        return action.tolist()
    if isinstance(action, InvalidOutput):
        return ("invalid", action.raw)
    if isinstance(action, (list, tuple)):
        return [plain_action(a) for a in action]
    return action


def without_privileged(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k != INFO_PRIVILEGED}


def short(value: Any, width: int = 60) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."

