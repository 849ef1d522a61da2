"""Hydra at the edge: compose ``configs/`` with overrides and check the result against a typed
schema (:mod:`harness.run.spec` turns it into a :class:`~harness.types.RunSpec`).

Only the CLI calls this module; the runner sees dataclasses, never Hydra.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, OverrideParseException
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.param_schema import schema_node
from harness.params import Composite, NoParams, fields_of
from harness.registry.catalog import BY_GROUP, PLANNERS, POLICIES
from harness.registry.loader import MissingDependencyError, UnknownPluginError

def _config_dir() -> Path:
    """Hydra's config tree: ``configs/`` at the top of a checkout (beside harness, envs, planners
    and policies); a built wheel carries it inside the package as ``harness/configs`` (setup.py's
    build step), so an installed harness composes the same configs from any folder."""
    package = Path(__file__).resolve().parent.parent  # harness/, this module sits in harness/run/
    shipped = package / "configs"
    if (shipped / "config.yaml").is_file():
        return shipped
    return package.parent / "configs"


CONFIG_DIR = _config_dir()


class ConfigError(ValueError):
    """A bad override or config; ``str()`` is one line naming the fix."""


class MissingPrerequisite(ConfigError):
    """Something the run needs that is not here (a checkpoint, an optional extra): not a typo,
    so ``harness run --dry-run`` lists every one of them at once."""


@dataclass
class RunnerConfig:
    #: Pipelined (default): the agent answers ready episodes while envs step the others.
    pipeline: bool = True
    #: Longest wait (s) for an agent call to fill to executor.batch_size while envs step.
    batch_wait_s: float = 0.01


@dataclass
class RunConfig:
    """The composed config's typed top level. ``suite``, ``planner``, ``policy`` and
    ``executor`` are the plugins' own schema nodes (:func:`register_schemas`), typed by
    their declarations and checked strictly by :func:`harness.run.spec.to_run_spec`."""

    suite: Any = MISSING
    planner: Any = MISSING
    #: When set (``policy=zero``), the policy is the agent and ``planner`` is unused.
    policy: Any = None
    variant: Any = MISSING
    executor: Any = MISSING
    #: When set (``tracker=wandb``), the experiment tracker the run logs to (no result changes).
    tracker: Any = None
    #: When set (``stopping=sequential``), the sweep's runs are compared in rounds and stop once
    #: decided (harness/stats/sequential/; configs/stopping/sequential.yaml).
    stopping: Any = None
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    #: null: the suite's declared default split.
    split: Optional[str] = None
    seed: int = 0
    repeat: int = 0
    limit: Optional[int] = None
    out: str = "outputs"
    episode_timeout_s: Optional[float] = None
    agent_timeout_s: Optional[float] = None
    max_retries: int = 1
    record_prompts: Any = False
    record_images: Any = None
    progress: Any = True


#: The plugins each stored node was generated from, by (group, name): a node whose plugins are
#: the same objects and that the ConfigStore still holds is not generated again (a sweep or an
#: experiment composes once per job; generating every node took a quarter of a dry run's time).
_STORED: dict[tuple[str, str], tuple[Any, ...]] = {}


def register_schemas() -> None:
    """One ConfigStore node per registered plugin (``suite/eb_alfred``, ``planner/vlm``,
    ``policy/zero``, ``executor/ray``...), generated from its declaration: the config
    groups' choices and defaults. A YAML file of the same name in ``configs/<group>/``
    takes its place (a user's own preset)."""
    cs = ConfigStore.instance()
    for group, registry in BY_GROUP.items():
        for name in registry.names():
            if (CONFIG_DIR / group / f"{name}.yaml").is_file():
                continue
            plugins = [p for p in registry.entries() if p.name == name]
            stored = _STORED.get((group, name))
            if (stored is not None and len(stored) == len(plugins) and all(a is b for a, b in zip(stored, plugins))
                    and f"{name}.yaml" in cs.repo.get(group, {})):
                continue
            _STORED[(group, name)] = tuple(plugins)
            decls = [p.params for p in plugins if p.params is not None]
            if group in ("executor", "tracker"):
                node: Any = schema_node(decls[0] if decls else NoParams, name=name)
                cs.store(group=group, name=name, node=node)
                continue
            if not decls:
                params: Any = {}
            elif len(plugins) == 1 and not _is_composite(decls[0]):
                params = schema_node(decls[0])
            else:
                params = schema_node(decls[0] if len(decls) == 1 else decls)
            body: dict[str, Any] = {"name": name, "params": params}
            if group in ("planner", "policy"):
                body["kind"] = group
            cs.store(group=group, name=name, node=body)


def _is_composite(decl: Any) -> bool:
    return isinstance(decl, Composite)


#: Values of ``planner.kind`` / ``policy.kind``.
AGENT_KINDS = ("planner", "policy")


def expand_sweeps(overrides: list[str]) -> list[list[str]]:
    """Expand Hydra sweep overrides (``planner=oracle,random``) into one override list per job."""
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


def compose(overrides: list[str], missing: list[str] | None = None) -> DictConfig:
    """Compose ``configs/config.yaml`` with overrides over the plugins' schema nodes, and
    check the values strictly (:func:`harness.run.spec.to_run_spec` checks the plugins' parameters).

    ``missing``: a variant's unset checkpoint is appended to it (and the checkpoint left as the
    variable's name, never read) instead of raised -- the dry run lists, it loads nothing."""
    register_schemas()
    _check_shapes(overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=overrides)
        for key in BOOL_KEYS:
            value = OmegaConf.select(cfg, key)
            if not isinstance(value, bool) and not (value is None and key in NULLABLE_BOOL_KEYS):
                accepts = "true, false or null" if key in NULLABLE_BOOL_KEYS else "true or false"
                raise ConfigError(f"{key} must be {accepts}, got {value!r}")
        schema = OmegaConf.structured(RunConfig)
        merged = OmegaConf.merge(schema, cfg)
        for group in ("suite", "planner", "variant", "executor"):
            if OmegaConf.is_missing(merged, group) or merged[group] is None:
                raise ConfigError(f"{group} is required (an override removed it): choose one with {group}=NAME "
                                  f"(choices: {', '.join(group_choices(group))})")
        sources = OmegaConf.to_container(merged.variant.params, resolve=False)
        model_source = sources.get("model")
        OmegaConf.resolve(merged)
        _command_line_wins(merged, overrides)
        try:
            _check_checkpoint(merged, model_source, sources.get("adapter"))
        except MissingPrerequisite as exc:
            if missing is None:
                raise
            missing.append(str(exc))
            names = re.findall(r"oc\.env:(\w+)", model_source) if isinstance(model_source, str) else []
            merged.variant.params.model = f"${names[0]}" if names else "<unset>"
        _prune_unset(merged, overrides)
        try:
            _check_own_weights(merged, sources, overrides)
        except MissingPrerequisite as exc:
            if missing is None:
                raise
            missing.append(str(exc))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_hint(exc)) from None
    except ConfigError:
        raise
    except Exception as exc:  # Hydra lets some malformed overrides through as other errors (`=3`, `~suite`)
        raise ConfigError(f"bad override: {type(exc).__name__}: {_first_line(exc)}") from None
    return merged  # type: ignore[return-value]


#: Config groups whose ``params`` node is a mapping of the chosen plugin's parameters.
_PARAM_GROUPS = ("suite", "planner", "policy", "variant", "executor", "tracker")


def _check_shapes(overrides: list[str]) -> None:
    """A group given something other than a name (``planner=[1]``) or a ``params`` node given
    something other than a mapping (``suite.params=5``): one line naming the key, before Hydra
    (whose own errors for these are a TypeError or no error at all)."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException:
        return  # compose names the bad override
    groups = set(BY_GROUP) | {"variant", "experiment"}
    for ov in parsed:
        if ov.is_delete() or ov.is_sweep_override():
            continue
        key = ov.key_or_group
        value = ov.value()
        if key in groups and not isinstance(value, str) and value is not None:
            raise ConfigError(f"{key} must name one {key} (choices: {', '.join(group_choices(key))}), "
                              f"got {ov.get_value_element_as_str()}")
        head, _, tail = key.partition(".")
        if tail == "params" and head in _PARAM_GROUPS and not isinstance(value, dict):
            raise ConfigError(f"{key} must be a mapping of parameters: set one with {key}.NAME=VALUE, "
                              f"got {ov.get_value_element_as_str()}")


def _prune_unset(cfg: DictConfig, overrides: list[str]) -> None:
    """Drop the null fields that only mean "not given": those of an agent whose schema node
    holds several declarations (a suite's own agents, the vlm planner's groups) and the
    variant's. A null given on the command line is kept."""
    given = _override_keys(overrides)
    for key in ("planner", "policy"):
        node = cfg.get(key)
        if node is None or "params" not in node:
            continue
        params = OmegaConf.to_container(node.params, resolve=True) or {}
        kept = {k: v for k, v in params.items() if v is not None or f"{key}.params.{k}" in given}
        if kept != params:
            node.params = OmegaConf.create(kept)
    if cfg.variant is not None and "params" in cfg.variant:
        params = OmegaConf.to_container(cfg.variant.params, resolve=True) or {}
        unused = _unused_group_keys(cfg, params)
        kept = {k: v for k, v in params.items()
                if f"variant.params.{k}" in given or (v is not None and k not in unused)}
        if kept != params:
            cfg.variant.params = OmegaConf.create(kept)


def _unused_group_keys(cfg: DictConfig, variant_params: dict[str, Any]) -> set[str]:
    """Keys a variant file sets for a group of the agent's declaration that this run does not
    use: a variant names its weights for every backend (``model`` for ``hf``,
    ``served_checkpoint`` for ``openai``), and only the chosen backend's apply. Given on the
    command line, such a key is refused instead (see :func:`harness.run.spec.to_run_spec`)."""
    agent_key = "policy" if cfg.get("policy") is not None else "planner"
    node = cfg.get(agent_key)
    if node is None or OmegaConf.is_missing(cfg, "suite"):
        return set()
    try:
        plugin = (POLICIES if agent_key == "policy" else PLANNERS).entry(node.name, cfg.suite.name)
    except (UnknownPluginError, MissingDependencyError):
        return set()
    decl = plugin.params
    if not isinstance(decl, Composite):
        return set()
    values = {**(OmegaConf.to_container(node.params, resolve=True) or {}), **variant_params}
    try:
        used = {f.name for g in decl.groups(values, cfg.suite.name) for f in fields_of(g.params)}
    except ValueError:
        return set()  # a bad value: to_run_spec names it
    every = {f.name for g in decl.all_groups() for f in fields_of(g.params)}
    return every - used


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
    :func:`harness.run.spec.to_run_spec`); a ``planner.params.K`` / ``policy.params.K`` given on
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


def _env_names(source: Any) -> list[str]:
    """The environment variables an unresolved value reads, outermost first
    (``${oc.env:FAVOR_SFT_MODEL,${oc.env:BASE_MODEL,null}}``: FAVOR_SFT_MODEL, BASE_MODEL)."""
    return re.findall(r"oc\.env:(\w+)", source) if isinstance(source, str) else []


def _check_checkpoint(cfg: DictConfig, model_source: Any, adapter_source: Any = None) -> None:
    """A model variant whose checkpoint comes from the environment names the variable when unset
    (a variant with its own adapter variable: that one too, with the base it applies to)."""
    if cfg.policy is not None or "model" not in cfg.variant.params or cfg.variant.params.model not in (None, ""):
        return
    names = _env_names(model_source)
    adapters = _env_names(adapter_source)
    if len(names) >= 2 and adapters:  # its own checkpoint, or an adapter on the fallback's
        where = (f"set ${names[0]} to its folder (or Hub id), or ${names[1]} with ${adapters[0]} "
                 f"(a LoRA adapter on it)")
    else:
        where = ("set " + " or ".join(f"${n}" for n in names) + " to its folder (or Hub id)") if names else ""
    raise MissingPrerequisite(
        f"variant {cfg.variant.name} has no checkpoint: "
        + (f"{where}, or give variant.params.model=PATH" if where else "give variant.params.model=PATH"))


def _check_own_weights(cfg: DictConfig, sources: dict[str, Any], overrides: list[str]) -> None:
    """A variant whose checkpoint falls back to another variable (``${oc.env:FAVOR_SFT_MODEL,
    ${oc.env:BASE_MODEL,null}}``: an adapter's base) while nothing of its own is set -- its
    checkpoint variable, nor any other of its variables the run uses (its adapter; with a served
    model, its served checkpoint) -- would run the fallback's weights under its own name (a
    FAVOR-SFT row that is the base model): refused, naming its variables. A model or adapter
    given on the command line is the user's choice and is kept. ``sources``: the variant's
    params unresolved."""
    given = _override_keys(overrides)
    if cfg.policy is not None or "variant.params.model" in given or "planner.params.model" in given:
        return
    params = cfg.variant.params
    names = _env_names(sources.get("model"))
    if len(names) < 2 or os.environ.get(names[0]):
        return
    fallback = os.environ.get(names[1])
    if not fallback or params.get("model") != fallback:
        return  # the checkpoint came from elsewhere, or none (_check_checkpoint says so)
    if any(key != "model" and params.get(key) not in (None, "")
           and (_env_names(source) or f"variant.params.{key}" in given or f"planner.params.{key}" in given)
           for key, source in sources.items()):
        return  # its adapter (or its served checkpoint) is its own
    adapters = _env_names(sources.get("adapter"))
    raise MissingPrerequisite(
        f"variant {cfg.variant.name} would run ${names[1]}'s weights unchanged under its own name: set "
        + (f"${adapters[0]} (its LoRA adapter on ${names[1]}) or " if adapters else "")
        + f"${names[0]} (its own checkpoint, or served model name), or give variant.params.adapter=PATH "
        "or variant.params.model=PATH")


#: Boolean settings (OmegaConf would read 2 or "yes" as true without a word).
BOOL_KEYS = ("record_prompts", "progress", "runner.pipeline", "record_images")
#: ... of which null is a value too (record_images: within the store's frame budget).
NULLABLE_BOOL_KEYS = ("record_images",)


def group_choices(group: str) -> list[str]:
    """The choices of a config group: its registered plugins and its YAML files."""
    names = set(BY_GROUP[group].names()) if group in BY_GROUP else set()
    return sorted(names | {p.stem for p in (CONFIG_DIR / group).glob("*.yaml")})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _hint(exc: BaseException) -> str:
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
        choices = group_choices(group)
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
        hint = f"did you mean {group}={close[0]}? " if close else ""
        return f"unknown {group} {name!r}: {hint}(choices: {', '.join(choices)}; `harness list` describes them)"
    if "Could not override" in line:
        key = re.search(r"Could not override '([^']+)'", line)
        close = _close_keys(key.group(1)) if key else []
        hint = f" Did you mean {close[0]}?" if close else ""
        return f"{line}{hint} It is not a config key (`+key=value` adds a new one)."
    return line


def _close_keys(key: str) -> list[str]:
    """The config keys a mistyped ``key`` (``spli``, ``runner.pipelin``) is closest to, among
    the keys beside it in the composed defaults (RunConfig's fields and their nodes' keys)."""
    parent, _, leaf = key.rpartition(".")
    try:
        node = OmegaConf.structured(RunConfig)
        if parent:
            node = OmegaConf.select(node, parent)
        keys = [str(k) for k in node.keys()] if node is not None and hasattr(node, "keys") else []
    except Exception:  # noqa: BLE001 - no node to compare with: no hint
        keys = []
    prefix = f"{parent}." if parent else ""
    return [prefix + k for k in difflib.get_close_matches(leaf, keys, n=1, cutoff=0.6)]
