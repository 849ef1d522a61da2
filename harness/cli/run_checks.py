"""``harness run``'s prerequisite checks: what a run needs that is not here (data, an optional
extra, a checkpoint, a server), gathered and worded as one message."""

from __future__ import annotations

import os
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from harness.cli.common import UsageError, one_line
from harness.util.redact import redact_text


class Missing(UsageError):
    """Prerequisites of a run that are not here (data, an optional extra, a checkpoint), one
    line each (``items``), and the run's spec where it was read (``spec``: its checkpoints
    and servers are checked too): a dry run lists every one, a run stops with them."""

    def __init__(self, items: list[str], spec: Any = None) -> None:
        items = _one_per_package(items)
        super().__init__("; ".join(items))
        self.items = list(items)
        self.spec = spec


def _one_per_package(items: list[str]) -> list[str]:
    """Lines that name the same missing package the same way (a suite and its oracle both
    needing mujoco) as one: "planner 'oracle' and suite 'eb_manipulation' need the package ..."."""
    merged: dict[str, list[str]] = {}
    order: list[str] = []
    for item in items:
        m = re.match(r"^(.+?) needs (the package '[^']+'.*)$", item)
        key = m.group(2) if m else item
        if key not in merged:
            order.append(key)
            merged[key] = []
        if m and m.group(1) not in merged[key]:
            merged[key].append(m.group(1))
    out = []
    for key in order:
        who = merged[key]
        out.append(key if not who else f"{who[0]} needs {key}" if len(who) == 1 else
                   f"{', '.join(who[:-1])} and {who[-1]} need {key}")
    return out


def missing_message(missing: list[tuple[str, str]], jobs: int) -> str:
    """Every missing prerequisite in one message: one line when there is one, else a line each
    (the same text once, with how many of the runs need it)."""
    by_text: dict[str, list[str]] = {}
    for text, label in missing:
        by_text.setdefault(text, [])
        if label not in by_text[text]:
            by_text[text].append(label)
    if len(by_text) == 1:
        (text, labels), = by_text.items()
        return text + (f" (job {labels[0]})" if jobs > 1 and len(labels) == 1 else
                       f" ({len(labels)} of the {jobs} runs)" if jobs > 1 else "")
    lines = [f"{len(by_text)} prerequisites of the requested runs are missing (dry run: nothing was run or written):"]
    for text, labels in by_text.items():
        where = (f"job {labels[0]}" if len(labels) == 1 else f"{len(labels)} of the {jobs} runs") if jobs > 1 else ""
        lines.append(f"  - {text}" + (f" ({where})" if where else ""))
    return "\n".join(lines)


#: Agent parameters that name a server the agent calls (an OpenAI-compatible endpoint, a
#: policy server): the dry run checks that something listens there.
_SERVER_PARAMS = ("base_url", "url")


#: Agent parameters that may name a local checkpoint folder or file (``model`` only when no
#: server is named: a served model's name is the server's business).
_CHECKPOINT_PARAMS = ("model", "adapter", "served_checkpoint")


def missing_checkpoints(spec: Any) -> list[str]:
    """The checkpoint parameters whose value is a local path (``/``, ``./``, ``../``, ``~``) that
    does not exist: looked up, never read (a Hub id is left to the run)."""
    out = []
    for name in _CHECKPOINT_PARAMS:
        value = spec.agent_params.get(name)
        if name == "model" and spec.agent_params.get("base_url"):
            continue
        if isinstance(value, str) and value.startswith(("/", "./", "../", "~")) \
                and not os.path.exists(os.path.expanduser(value)):
            out.append(f"variant {spec.variant}: {spec.agent_kind}.params.{name}={value} does not exist")
    return out


def unreachable_servers(spec: Any, timeout_s: float = 2.0) -> list[str]:
    """The servers the agent's parameters name that accept no connection (a TCP connect to
    host:port, nothing sent): what the dry run reports as missing."""
    out = []
    for name in _SERVER_PARAMS:
        value = spec.agent_params.get(name)
        if not isinstance(value, str) or "://" not in value:
            continue
        try:
            parts = urlsplit(value)
            port = parts.port or {"https": 443, "wss": 443}.get(parts.scheme, 80)
            host = parts.hostname
        except ValueError:
            continue
        if not host:
            continue
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            out.append(f"{spec.agent_kind} {spec.agent}: no server answers at {redact_text(value)} "
                       f"({spec.agent_kind}.params.{name}): {type(exc).__name__}: {one_line(exc)}")
    return out
