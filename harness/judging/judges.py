"""The judges: a judge's config (``configs/judge/NAME.yaml`` with ``judge.K=V`` overrides), its
identity (hashed to ``judge_id``) and its model backend (the ``vlm`` planner's backends:
``openai`` for any OpenAI-compatible server, ``hf`` in process; ``local`` for none).

The judge's identity (its name, backend, model, the backend's own identity, sampling, the
rubric's identity and version) is hashed to ``judge_id``; the judge stage
(:mod:`harness.judging.stage`) keys each verdict by it, so a second judge never touches the
first one's rows. See docs/judging.md.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import socket
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.judging.verdicts import LOCAL_BACKEND
from harness.params import ParamError, parse
from harness.registry.catalog import BACKENDS
from harness.registry.extras import not_installed
from harness.registry.loader import UnknownPluginError, load_target
from harness.run.config import _config_dir
from harness.util.checkpoint_identity import checkpoint_identity

#: Bumped when the way judge prompts are sent or replies are stored changes.
JUDGE_PROTOCOL_VERSION = "1"


class JudgeError(ValueError):
    """Bad judge input (one line for the CLI; exit 2, nothing written)."""


# --- judge configs ---------------------------------------------------------------------
@dataclass
class JudgeConfig:
    name: str
    backend: str
    model: str
    max_new_tokens: int = 512
    #: The backend's parameters (checked against its declaration, planners/plugin.py).
    params: dict[str, Any] = field(default_factory=dict)
    #: The rubric factory's parameters (e.g. ``prompt_file``: a user's copy of an original prompt).
    rubric: dict[str, Any] = field(default_factory=dict)
    #: Keep each judge prompt (text parts) in its row.
    record_prompts: bool = False


def judge_dir() -> Path:
    return _config_dir() / "judge"


def known_judges() -> list[str]:
    d = judge_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def load_config(name: str, overrides: Sequence[str] = ()) -> JudgeConfig:
    """The judge config ``name`` (configs/judge/NAME.yaml or a YAML path) with ``judge.K=V`` overrides."""
    path = Path(name)
    if not (name.endswith((".yaml", ".yml")) and path.is_file()):
        path = judge_dir() / f"{name}.yaml"
        if not path.is_file():
            known = known_judges()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise JudgeError(f"unknown judge {name!r}{hint} (known: {', '.join(known) or 'none'}; "
                             "or a path to a judge .yaml)")
    try:
        base = OmegaConf.load(path)
        dotlist = []
        for o in overrides:
            key, sep, value = o.partition("=")
            if not sep or not key.startswith("judge."):
                raise JudgeError(f"bad judge override {o!r} (expected judge.KEY=VALUE)")
            dotlist.append(f"{key[len('judge.'):]}={value}")
        merged = OmegaConf.to_container(OmegaConf.merge(base, OmegaConf.from_dotlist(dotlist)), resolve=True)
    except OmegaConfBaseException as exc:
        raise JudgeError(f"judge {name}: {str(exc).splitlines()[0]}") from None
    assert isinstance(merged, dict)
    if not merged.get("name"):  # the judge's name (part of its identity): the model's unless set
        merged["name"] = str(merged.get("model") or path.stem)
    allowed = {f for f in JudgeConfig.__dataclass_fields__}
    unknown = sorted(set(merged) - allowed)
    if unknown:
        raise JudgeError(f"judge {name}: unknown key judge.{unknown[0]} (keys: {', '.join(sorted(allowed))})")
    missing = _backend_not_installed(merged.get("backend"), name)
    if missing:  # the extra to install first, before asking for a model it could not load
        raise JudgeError(missing)
    for key in ("backend", "model"):
        if not merged.get(key):
            raise JudgeError(f"judge {name}: judge.{key} is required (e.g. judge.{key}=...)")
    for key in ("params", "rubric"):
        merged[key] = dict(merged.get(key) or {})
    try:
        merged["max_new_tokens"] = int(merged.get("max_new_tokens", 512))
    except (TypeError, ValueError):
        raise JudgeError(f"judge {name}: judge.max_new_tokens must be a whole number") from None
    return JudgeConfig(**merged)


def _backend_not_installed(backend: Any, name: str) -> str | None:
    """One line naming the extra when the judge's model backend's packages are not installed."""
    if not backend or backend == LOCAL_BACKEND or str(backend) not in BACKENDS.names():
        return None
    return not_installed(BACKENDS.entry(str(backend)), f"judge {name} (backend {backend})")


def split_judge_overrides(overrides: Sequence[str]) -> tuple[str | None, list[str], list[str]]:
    """``(judge name, judge.* overrides, the rest)`` of a command line (``harness run ... judge=NAME``)."""
    name, mine, rest = None, [], []
    for o in overrides:
        if o.startswith("judge="):
            name = o.partition("=")[2]
        elif o.startswith("judge."):
            mine.append(o)
        else:
            rest.append(o)
    return name, mine, rest


# --- identity ----------------------------------------------------------------------------
def judge_identity(cfg: JudgeConfig, backend_identity: Mapping[str, Any], rubric: Any) -> dict[str, Any]:
    out = {
        # The judge's name is part of its identity: verdicts stored under one name are never
        # reused (or reported) under another, even when everything else is the same.
        "name": cfg.name,
        "backend": cfg.backend, "model": cfg.model, "backend_identity": dict(backend_identity),
        "sampling": {"decoding": "greedy", "temperature": 0.0, "max_new_tokens": cfg.max_new_tokens},
        "rubric": dict(rubric.identity()), "rubric_version": str(rubric.version),
        "protocol": JUDGE_PROTOCOL_VERSION,
    }
    if cfg.rubric:  # the user's rubric parameters (a prompt file: its text's hash), whatever the suite
        out["rubric_params"] = {k: _file_or_value(v) for k, v in sorted(cfg.rubric.items())}
    return out


def _file_or_value(value: Any) -> Any:
    """A rubric parameter as it enters the identity: an existing file's content hash, else itself."""
    if isinstance(value, str) and value and Path(value).expanduser().is_file():
        return "sha256:" + hashlib.sha256(Path(value).expanduser().read_bytes()).hexdigest()
    return value


def judge_id_of(identity: Mapping[str, Any]) -> str:
    """A short hash of a judge identity (its name included: a renamed judge is another judge)."""
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]



def build_backend(cfg: JudgeConfig) -> Any:
    try:
        plugin = BACKENDS.entry(cfg.backend)
    except UnknownPluginError as exc:
        raise JudgeError(f"judge {cfg.name}: {exc.args[0]}") from None
    try:
        params = parse(plugin.params, cfg.params) if plugin.params is not None else None
    except ParamError as exc:
        raise JudgeError(f"judge {cfg.name}: judge.params: {one_line(exc)}") from None
    if cfg.backend == "openai":
        _check_reachable(cfg.name, params.base_url)
    return load_target(plugin, "model backend")(cfg.model, params, max_new_tokens=cfg.max_new_tokens,
                                                json_schema=False, hash_weights=False)


def local_identity(model: str, folder: str | None) -> dict[str, Any]:
    """A local scorer's model: the checkpoint identity of the folder it loaded (configs,
    tokenizer, weight headers and samples), or its name where no folder is known."""
    if folder is None:
        return {"local": True, "model": model}
    return {"local": True, "model": model, "checkpoint": checkpoint_identity(folder)}


def _check_reachable(name: str, base_url: str, timeout_s: float = 3.0) -> None:
    u = urllib.parse.urlsplit(base_url)
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        socket.create_connection((u.hostname or "", port), timeout=timeout_s).close()
    except OSError as exc:
        raise JudgeError(f"judge {name}: the judge server {base_url} is unreachable "
                         f"({exc.strerror or exc}); start it or set judge.params.base_url") from None


def one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
