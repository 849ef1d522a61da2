"""Hydra at the edge: compose ``configs/`` with overrides, check the result
against a typed schema, and turn it into a :class:`RunSpec`.

Only the CLI calls this module; the runner sees dataclasses, never Hydra.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import MISSING, DictConfig, OmegaConf

from harness.types import RunSpec

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


class ConfigError(ValueError):
    """A bad override or config; ``str()`` is one line naming the fix."""


@dataclass
class SuiteConfig:
    name: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentConfig:
    name: str = MISSING
    kind: str = "planner"
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class VariantConfig:
    name: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExecutorConfig:
    name: str = "local"
    num_workers: int = 1
    batch_size: int = 8
    #: process executor: envs per worker process (slots = num_workers x envs_per_worker).
    envs_per_worker: int = 1
    #: ray executor: the cluster to join (auto, HOST:PORT, ray://HOST:PORT); null: RAY_ADDRESS or a local one.
    address: Optional[str] = None


@dataclass
class RunnerConfig:
    #: Pipelined (default): the agent answers ready episodes while envs step the others.
    pipeline: bool = True
    #: Longest wait (s) for an agent call to fill to executor.batch_size while envs step.
    batch_wait_s: float = 0.01


@dataclass
class RunConfig:
    suite: SuiteConfig = field(default_factory=SuiteConfig)
    planner: AgentConfig = field(default_factory=AgentConfig)
    #: When set (``policy=zero``), the policy is the agent and ``planner`` is unused.
    policy: Optional[AgentConfig] = None
    variant: VariantConfig = field(default_factory=VariantConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    split: str = MISSING
    seed: int = 0
    limit: Optional[int] = None
    out: str = "outputs"
    episode_timeout_s: Optional[float] = None
    agent_timeout_s: Optional[float] = None
    max_retries: int = 1
    record_prompts: bool = False
    record_images: Optional[bool] = None
    progress: bool = True


#: Values of ``planner.kind`` / ``policy.kind``.
AGENT_KINDS = ("planner", "policy")


def expand_sweeps(overrides: list[str]) -> list[list[str]]:
    """Expand Hydra sweep overrides (``planner=oracle,random``) into one override list per job."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        raise ConfigError(f"bad override: {_first_line(exc)}") from None
    choices = []
    for ov in parsed:
        if ov.is_sweep_override():
            key = ov.get_key_element()
            choices.append([f"{key}={v}" for v in ov.sweep_string_iterator()])
        else:
            choices.append([ov.input_line])
    return [list(combo) for combo in itertools.product(*choices)]


def compose(overrides: list[str]) -> DictConfig:
    """Compose ``configs/config.yaml`` with overrides and validate types."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=overrides)
        for key in BOOL_KEYS:
            value = OmegaConf.select(cfg, key)
            if value is not None and not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false, got {value!r}")
        schema = OmegaConf.structured(RunConfig)
        merged = OmegaConf.merge(schema, cfg)
        model_source = OmegaConf.to_container(merged.variant.params, resolve=False).get("model")
        OmegaConf.resolve(merged)
        _command_line_wins(merged, overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_hint(exc)) from None
    _check_checkpoint(merged, model_source)
    return merged  # type: ignore[return-value]


def _override_keys(overrides: list[str]) -> dict[str, str]:
    """``{dotted key: value text}`` of the command line's ``key=value`` overrides."""
    out = {}
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if sep:
            out[key.lstrip("+~")] = value
    return out


def _command_line_wins(cfg: DictConfig, overrides: list[str]) -> None:
    """Precedence: config files < the variant's own params < the command line.

    The agent's params are merged with the variant's (variant last, see
    :func:`to_run_spec`); a ``planner.params.K`` / ``policy.params.K`` given on
    the command line is copied over the variant's value so that it wins. Both
    ``planner.params.K`` and ``variant.params.K`` given with different values
    is refused (which one was meant?).
    """
    agent_key = "policy" if cfg.policy is not None else "planner"
    given = _override_keys(overrides)
    prefix = f"{agent_key}.params."
    for key, text in given.items():
        if not key.startswith(prefix) or "." in key[len(prefix):]:
            continue
        name = key[len(prefix):]
        if name not in cfg.variant.params:
            continue
        value = cfg[agent_key].params[name]
        if f"variant.params.{name}" in given and cfg.variant.params[name] != value:
            raise ConfigError(f"{key}={text} and variant.params.{name}={given[f'variant.params.{name}']} "
                              "disagree: give one of them")
        cfg.variant.params[name] = value


def _check_checkpoint(cfg: DictConfig, model_source: Any) -> None:
    """A model variant whose checkpoint comes from the environment names the variable when unset."""
    import re

    if cfg.policy is not None or "model" not in cfg.variant.params or cfg.variant.params.model not in (None, ""):
        return
    names = re.findall(r"oc\.env:(\w+)", model_source) if isinstance(model_source, str) else []
    where = " or ".join(f"${n}" for n in names)
    raise ConfigError(
        f"variant {cfg.variant.name} has no checkpoint: "
        + (f"set {where} to its folder (or Hub id), or give variant.params.model=PATH"
           if where else "give variant.params.model=PATH"))


#: Longest time limit accepted (seconds): what ``threading`` can wait for (its TIMEOUT_MAX
#: is larger), rounded down to a year; ``null`` means no limit.
MAX_TIMEOUT_S = 365 * 24 * 3600.0
#: Largest trial seed: episode seeds are offset by it and must stay valid numpy seeds (< 2**32).
MAX_SEED = 2**31 - 1
#: Upper bounds of the executor's sizes (far above any machine; a typo like 1e10 is refused).
MAX_EXECUTOR = {"num_workers": 4096, "batch_size": 65536, "envs_per_worker": 4096}
#: Boolean settings (OmegaConf would read 2 or "yes" as true without a word).
BOOL_KEYS = ("record_prompts", "progress", "runner.pipeline")


def _check_values(cfg: DictConfig) -> None:
    """ConfigError naming the key for values that would silently misbehave."""
    import math

    def positive_or_null(key: str, value: Any) -> None:
        if value is not None and not (value > 0 and math.isfinite(value) and value <= MAX_TIMEOUT_S):
            raise ConfigError(f"{key} must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, or null (no limit); got {value}")

    if cfg.limit is not None and cfg.limit < 0:
        raise ConfigError(f"limit must be >= 0, got {cfg.limit}")
    if not 0 <= cfg.seed <= MAX_SEED:
        raise ConfigError(f"seed must be between 0 and {MAX_SEED} (it offsets every episode's seed), got {cfg.seed}")
    if not str(cfg.out).strip():
        raise ConfigError("out must name an output directory (e.g. out=runs/exp1), got an empty value")
    positive_or_null("episode_timeout_s", cfg.episode_timeout_s)
    positive_or_null("agent_timeout_s", cfg.agent_timeout_s)
    if not 0 <= cfg.runner.batch_wait_s <= 60:
        raise ConfigError(f"runner.batch_wait_s must be between 0 and 60 seconds, got {cfg.runner.batch_wait_s}")
    if cfg.max_retries < 0:
        raise ConfigError(f"max_retries must be >= 0, got {cfg.max_retries}")
    for key in ("num_workers", "batch_size", "envs_per_worker"):
        if not 1 <= cfg.executor[key] <= MAX_EXECUTOR[key]:
            raise ConfigError(f"executor.{key} must be between 1 and {MAX_EXECUTOR[key]}, got {cfg.executor[key]}")
    agent_key = "policy" if cfg.policy is not None else "planner"
    kind = cfg[agent_key].kind
    if kind not in AGENT_KINDS:
        raise ConfigError(f"{agent_key}.kind must be one of {', '.join(AGENT_KINDS)}, got {kind!r}")


def to_run_spec(cfg: DictConfig) -> RunSpec:
    _check_values(cfg)
    agent_cfg = cfg.policy if cfg.policy is not None else cfg.planner
    kind = "policy" if cfg.policy is not None else agent_cfg.kind
    suite_params = OmegaConf.to_container(cfg.suite.params, resolve=True) or {}
    agent_params = {
        **(OmegaConf.to_container(agent_cfg.params, resolve=True) or {}),
        **(OmegaConf.to_container(cfg.variant.params, resolve=True) or {}),
    }
    return RunSpec(
        suite=cfg.suite.name,
        split=cfg.split,
        agent=agent_cfg.name,
        variant=cfg.variant.name,
        agent_kind=kind,
        suite_params=suite_params,  # type: ignore[arg-type]
        agent_params=agent_params,
        seed=cfg.seed,
        limit=cfg.limit,
        executor=cfg.executor.name,
        num_workers=cfg.executor.num_workers,
        batch_size=cfg.executor.batch_size,
        envs_per_worker=cfg.executor.envs_per_worker,
        episode_timeout_s=cfg.episode_timeout_s,
        agent_timeout_s=cfg.agent_timeout_s,
        max_retries=cfg.max_retries,
        pipeline=cfg.runner.pipeline,
        batch_wait_s=cfg.runner.batch_wait_s,
        record_prompts=cfg.record_prompts,
        record_images=cfg.record_images,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _hint(exc: BaseException) -> str:
    import difflib
    import re

    from hydra.errors import OverrideParseException

    line = _first_line(exc)
    if isinstance(exc, OverrideParseException):
        text = str(exc)
        if "#" in text:
            return (f"bad override: {line} ('#' must be quoted inside a value: 'out=\"runs/#1\"' "
                    "or out=\\'runs/#1\\')")
        if any(ord(ch) > 127 for ch in text):
            return (f"bad override: {line} (a value with non-ASCII characters must be quoted: "
                    "'out=\"runs/résumé\"' or out=\\'runs/résumé\\')")
        return f"bad override: {line}"
    full_key = getattr(exc, "full_key", None)
    if full_key:
        return f"{full_key}: {line}"
    missing = re.search(r"Could not find '([\w-]+)/([^']+)'", line)
    if missing:
        group, name = missing.groups()
        choices = sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
        hint = f"did you mean {group}={close[0]}? " if close else ""
        return f"unknown {group} {name!r}: {hint}(choices: {', '.join(choices)}; `harness list` describes them)"
    if "Could not override" in line:
        return f"{line} It is not a config key (`+key=value` adds a new one)."
    return line
