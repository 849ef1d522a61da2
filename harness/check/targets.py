"""What a check checks: the suite (:class:`SuiteTarget`) and the agent driving it
(:class:`AgentTarget`), each with its parameter values, declaration and a way to build it
again with other values; :func:`default_agent` picks the agent when ``check_suite`` is given none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from harness.check.verdict import ConformanceError
from harness.params import Composite, fields_of
from harness.registry.catalog import PLANNERS, POLICIES, SUITES
from harness.registry.loader import MissingDependencyError, UnknownPluginError, load_target


@dataclass
class SuiteTarget:
    """The suite checked: built from ``values`` (``obj``), and ``build(**values)`` for another."""

    name: str
    values: dict[str, Any]
    declaration: Any
    build: Callable[..., Any]
    obj: Any
    split: str
    registered: bool

    @classmethod
    def of(cls, suite: Any, params: Mapping[str, Any] | None, split: str | None) -> "SuiteTarget":
        values = dict(params or {})
        if isinstance(suite, str):
            plugin = SUITES.entry(suite)
            build = lambda **v: SUITES.build(suite, **v)  # noqa: E731
            obj, name, declaration, registered = build(**values), suite, plugin.params, True
        else:
            obj, name = suite, suite.name
            registered = name in SUITES.names()
            plugin = SUITES.entry(name) if registered else None
            declaration = plugin.params if plugin is not None else getattr(type(suite), "Params", None)
            build = (lambda **v: SUITES.build(name, **v)) if registered else (lambda **v: type(suite)(**v))
        if split is None:
            split = getattr(plugin, "default_split", None) if registered else None
            split = split or list(obj.splits())[0]
        return cls(name, values, declaration, build, obj, split, registered)


@dataclass
class AgentTarget:
    """The agent checked or driving the suite: ``build(**values)`` makes one."""

    name: str
    values: dict[str, Any]
    declaration: Any
    build: Callable[..., Any]
    kind: str = "planner"

    @classmethod
    def of(cls, agent: Any, suite: SuiteTarget, params: Mapping[str, Any] | None) -> "AgentTarget":
        values = dict(params or {})
        if isinstance(agent, str):
            registry, plugin = _agent_entry(agent, suite.name)
            build = lambda **v: registry.build(agent, suite=suite.name, **v)  # noqa: E731
            return cls(agent, values, plugin.params, build, getattr(plugin, "kind", "planner"))
        if not callable(agent):
            raise TypeError("agent must be a registered agent's name or a factory (**params) -> agent")
        probe = agent(**values)
        return cls(getattr(probe, "name", type(probe).__name__), values,
                   getattr(probe, "Params", None) or getattr(type(probe), "Params", None), agent)


def _agent_entry(name: str, suite: str):
    first: Exception | None = None
    for registry in (PLANNERS, POLICIES):
        try:
            return registry, registry.entry(name, suite)
        except UnknownPluginError as exc:
            first = first or exc
    raise first  # type: ignore[misc]


def default_agent(suite: SuiteTarget) -> AgentTarget:
    """The suite's own oracle, else its own random agent, else an agent of every suite
    that produces the suite's actions and needs no parameter."""
    for name in ("oracle", "random"):
        for registry in (PLANNERS, POLICIES):
            if suite.name in registry.owners(name):
                return AgentTarget.of(name, suite, None)
    kind = getattr(suite.obj, "action_kind", None)
    for preferred in (True, False):
        for registry in (PLANNERS, POLICIES):
            for plugin in registry.entries():
                if getattr(plugin, "suite", None) is not None or (plugin.name in ("random", "zero")) != preferred:
                    continue
                if plugin.params is not None and not isinstance(plugin.params, Composite) and any(
                        f.required for f in fields_of(plugin.params)):
                    continue
                try:
                    factory = load_target(plugin, registry.kind)
                except (MissingDependencyError, ImportError):
                    continue
                if kind is None or kind in getattr(factory, "action_kinds", (kind,)):
                    return AgentTarget.of(plugin.name, suite, None)
    raise ConformanceError(f"suite {suite.name}: no registered agent drives it; pass agent=")
