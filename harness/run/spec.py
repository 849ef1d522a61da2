"""The composed config (:func:`harness.run.config.compose`) turned into a :class:`RunSpec`: the
run's settings checked, every plugin parameter checked against its declaration
(:func:`harness.params.parse`) and the ``stopping=sequential`` settings against the suite's
tested metric. Only the CLI calls this module; the runner sees the spec, never Hydra."""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.params import Composite, NoParams, ParamError, parse, values_of
from harness.registry.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
from harness.registry.extras import not_installed
from harness.registry.loader import MissingDependencyError, UnknownPluginError
from harness.run.config import AGENT_KINDS, ConfigError, MissingPrerequisite
from harness.scoring.policy import suite_scoring
from harness.stats.sequential import SequentialStopping, tested_metric
from harness.types import RunSpec

#: Longest time limit accepted (seconds): what ``threading`` can wait for (its TIMEOUT_MAX
#: is larger), rounded down to a year; ``null`` means no limit.
MAX_TIMEOUT_S = 365 * 24 * 3600.0
#: Largest trial seed: episode seeds are offset by it and must stay valid numpy seeds (< 2**32).
MAX_SEED = 2**31 - 1


def _check_values(cfg: DictConfig) -> None:
    """ConfigError naming the key for values that would silently misbehave."""
    def positive_or_null(key: str, value: Any) -> None:
        if value is not None and not (value > 0 and math.isfinite(value) and value <= MAX_TIMEOUT_S):
            raise ConfigError(f"{key} must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, or null (no limit); got {value}")

    if cfg.limit is not None and cfg.limit < 1:  # 0 would "succeed" having run nothing
        raise ConfigError(f"limit must be >= 1 (null: every episode), got {cfg.limit}")
    if not 0 <= cfg.seed <= MAX_SEED:
        raise ConfigError(f"seed must be between 0 and {MAX_SEED} (it offsets every episode's seed), got {cfg.seed}")
    if not 0 <= cfg.repeat <= MAX_SEED:
        raise ConfigError(f"repeat must be between 0 and {MAX_SEED} (a repeat index: 0, 1, 2, ...), got {cfg.repeat}")
    if not str(cfg.out).strip():
        raise ConfigError("out must name an output directory (e.g. out=runs/exp1), got an empty value")
    positive_or_null("episode_timeout_s", cfg.episode_timeout_s)
    positive_or_null("agent_timeout_s", cfg.agent_timeout_s)
    if not 0 <= cfg.runner.batch_wait_s <= 60:
        raise ConfigError(f"runner.batch_wait_s must be between 0 and 60 seconds, got {cfg.runner.batch_wait_s}")
    if cfg.max_retries < 0:
        raise ConfigError(f"max_retries must be >= 0, got {cfg.max_retries}")


def _plain(node: Any) -> dict[str, Any]:
    """A node's values; a required field nobody gave (``???``) is left out, so its declaration
    names it as required."""
    if node is None:
        return {}
    values = OmegaConf.to_container(node, resolve=True, throw_on_missing=False) or {}
    return {k: v for k, v in dict(values).items() if v != "???"}


def _absolute_data_dirs(params: dict[str, Any]) -> dict[str, Any]:
    """A suite's data folders (``data_dir``, ``*_data_dir``) given as relative paths, made absolute
    against the folder the command runs in: the run stores its parameters, and a later command
    (``harness judge`` reading the videos) may run from another folder."""
    out = dict(params)
    for key, value in params.items():
        if (key == "data_dir" or key.endswith("_data_dir")) and isinstance(value, str) and value.strip():
            out[key] = os.path.abspath(os.path.expanduser(value))
    return out


def to_run_spec(cfg: DictConfig) -> RunSpec:
    """The run's spec, every plugin parameter checked against its declaration
    (:func:`harness.params.parse`): a bad value is a :class:`ConfigError` naming the key."""
    _check_values(cfg)
    agent_key = "policy" if cfg.policy is not None else "planner"
    agent_cfg = cfg[agent_key]
    kind = "policy" if cfg.policy is not None else agent_cfg.get("kind", "planner")
    if kind not in AGENT_KINDS:
        raise ConfigError(f"{agent_key}.kind must be one of {', '.join(AGENT_KINDS)}, got {kind!r}")
    registry = POLICIES if kind == "policy" else PLANNERS
    try:
        suite_plugin = SUITES.entry(cfg.suite.name)
        executor_plugin = EXECUTORS.entry(cfg.executor.name)
        agent_plugin = registry.entry(agent_cfg.name, cfg.suite.name)
    except MissingDependencyError as exc:
        raise MissingPrerequisite(str(exc)) from None
    except UnknownPluginError as exc:
        raise ConfigError(str(exc)) from None

    def checked(decl: Any, values: dict[str, Any], prefix: str, label: str, **kw: Any) -> dict[str, Any]:
        """Every parameter's value: the given ones converted, the declaration's defaults for the rest."""
        if decl is None:  # a plugin that declares no parameters takes none
            decl = NoParams
        try:
            parsed = parse(decl, values, **kw)
        except ParamError as exc:
            if exc.unknown:
                raise ConfigError(exc.of(label)) from None
            raise ConfigError(str(exc.at(prefix)) if exc.key else f"{prefix.rstrip('.')}: {exc.problem}") from None
        return values_of(parsed)

    suite_params = _absolute_data_dirs(checked(suite_plugin.params, _plain(cfg.suite.params), "suite.params.",
                                               f"suite {suite_plugin.name}"))
    executor_values = {k: v for k, v in _plain(cfg.executor).items() if k != "name"}
    executor_params = checked(executor_plugin.params, executor_values, "executor.",
                              f"executor {executor_plugin.name}")
    agent_given = _plain(agent_cfg.get("params"))
    variant_given = _plain(cfg.variant.params)
    agent_params = {**agent_given, **variant_given}
    where = f"{agent_key}.params."
    try:
        agent_params = checked(agent_plugin.params, agent_params, where, f"{kind} {agent_cfg.name}",
                               **({"suite": cfg.suite.name} if getattr(agent_plugin, "takes_suite", False) else {}))
    except ConfigError as exc:
        missing = _agent_not_installed(agent_plugin, agent_params, f"{kind} {agent_cfg.name}", cfg.suite.name)
        if missing:  # the extra to install first, before asking for a parameter (a model) it could not use
            raise MissingPrerequisite(missing) from None
        text = str(exc)
        key = text[len(where):].split(" ", 1)[0] if text.startswith(where) else None
        if key and key in variant_given and key not in agent_given:
            raise ConfigError(f"variant.params.{text[len(where):]}") from None
        raise
    split = cfg.split if cfg.split is not None else suite_plugin.default_split
    if split is None:
        raise ConfigError(f"suite {suite_plugin.name} declares no default split: give split=NAME")
    stopping = _stopping(cfg, suite_plugin.name)
    return RunSpec(
        suite=cfg.suite.name,
        split=split,
        agent=agent_cfg.name,
        variant=cfg.variant.name,
        agent_kind=kind,
        suite_params=suite_params,
        agent_params=agent_params,
        seed=cfg.seed,
        repeat=cfg.repeat,
        limit=cfg.limit,
        executor=cfg.executor.name,
        num_workers=int(executor_params.get("num_workers", 1)),
        batch_size=int(executor_params.get("batch_size", 1)),
        envs_per_worker=int(executor_params.get("envs_per_worker", 1)),
        executor_params=executor_params,
        episode_timeout_s=cfg.episode_timeout_s,
        agent_timeout_s=cfg.agent_timeout_s,
        max_retries=cfg.max_retries,
        pipeline=cfg.runner.pipeline,
        batch_wait_s=cfg.runner.batch_wait_s,
        record_prompts=cfg.record_prompts,
        record_images=cfg.record_images,
        stopping=stopping,
    )


def _agent_not_installed(plugin: Any, given: dict[str, Any], who: str, suite: str) -> str | None:
    """One line naming the extra when the agent's, or its chosen model backend's, declared
    packages are not installed (harness.registry.extras.not_installed); None when they are."""
    found = [(plugin, who)]
    if isinstance(getattr(plugin, "params", None), Composite):
        try:
            groups = plugin.params.groups(dict(given), suite)
        except Exception:  # noqa: BLE001 - values the check refused: the agent's own modules only
            groups = []
        found += [(g.plugin, f"{who} ({g.title})") for g in groups if g.plugin is not None]
    return next((line for p, w in found if (line := not_installed(p, w)) is not None), None)


def _stopping(cfg: DictConfig, suite: str) -> dict[str, Any] | None:
    """``stopping=sequential``: its settings checked (harness.stats.sequential.SequentialStopping), the
    tested metric resolved against the suite's declarations; None without it."""
    node = cfg.get("stopping")
    if node is None:
        return None
    given = _plain(node)
    given.pop("name", None)
    known = {f.name for f in dataclasses.fields(SequentialStopping)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(f"stopping.{unknown[0]} is not a setting of stopping=sequential "
                          f"(settings: {', '.join(sorted(known))})")
    if given.get("baseline") is None:
        raise ConfigError("stopping=sequential needs stopping.baseline=NAME: the variant of the sweep "
                          "the others are compared against")
    try:
        rule = SequentialStopping(**given)
        metric = tested_metric(suite_scoring(suite)[0], rule.metric)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    return dataclasses.asdict(dataclasses.replace(rule, metric=metric.name))
