"""Plugin registries with lazy ``"module:attr"`` targets.

Each plugin kind (suite, planner, policy, executor, model backend) has one registry,
filled from the entry points (:mod:`harness.plugins`, :mod:`harness.registry.catalog`). Listing
imports nothing heavy; a target module is imported only when its plugin is built.
Unknown names fail with a "did you mean" hint.

An agent can belong to a suite (:attr:`harness.plugins.AgentPlugin.suite`): looked up
with ``suite=NAME``, a suite's own agent is found before an agent of every suite.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable, Iterable

from harness.plugins import AgentPlugin, Plugin


class UnknownPluginError(KeyError):
    """An unknown registry key. ``str()`` is a one-line message with a hint."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class MissingDependencyError(ImportError):
    """A plugin's optional dependencies are not installed; ``str()`` is one line naming the extra."""


#: Top-level packages of this project: a missing one of these is a bug, not a missing extra.
_OWN_PACKAGES = {"harness", "envs", "planners", "policies"}

#: Kept for callers that name the entry type.
Entry = Plugin


class Registry:
    """Plugins of one kind. ``fill`` (optional) adds the discovered ones on first use."""

    def __init__(self, kind: str, plural: str | None = None, fill: Callable[["Registry"], None] | None = None):
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[tuple[str, str | None], Plugin] = {}
        self._fill = fill
        #: Names refused at discovery (two packages register them) -> the one-line reason.
        self.refused: dict[str, str] = {}

    def _ready(self) -> None:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)

    def add(self, plugin: Plugin) -> None:
        self._ready()
        key = (plugin.name, _owner(plugin))
        if key in self._entries:
            owner = f" of suite {key[1]}" if key[1] else ""
            raise ValueError(f"{self.kind} {plugin.name!r}{owner} is already registered")
        self._entries[key] = plugin

    def register(self, name: str, target: str, summary: str = "", extra: str | None = None, **more: Any) -> None:
        """Register a plain plugin by its target (tests and scripts; packages use entry points)."""
        cls = AgentPlugin if "kind" in more or "suite" in more else Plugin
        self.add(cls(name=name, target=target, summary=summary, extra=extra, **more))

    def names(self) -> list[str]:
        self._ready()
        return sorted({name for name, _ in self._entries})

    def entries(self) -> list[Plugin]:
        self._ready()
        return [self._entries[k] for k in sorted(self._entries, key=lambda k: (k[0], k[1] or ""))]

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def owners(self, name: str) -> list[str]:
        """The suites that have their own agent called ``name``."""
        self._ready()
        return sorted(s for n, s in self._entries if n == name and s)

    def entry(self, name: str, suite: str | None = None) -> Plugin:
        """The plugin called ``name``: ``suite``'s own first, then one for every suite."""
        self._ready()
        for key in ((name, suite), (name, None)) if suite else ((name, None),):
            if key in self._entries:
                return self._entries[key]
        for refused in ((f"{suite}.{name}", name) if suite else (name,)):
            if refused in self.refused:
                raise UnknownPluginError(self.refused[refused])
        owners = self.owners(name)
        if owners:
            which = f"suite {suite} has none; " if suite else ""
            raise UnknownPluginError(
                f"{self.kind} {name!r} is a suite's own agent ({which}suites with one: {', '.join(owners)})")
        close = difflib.get_close_matches(str(name), self.names(), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(self.names()) or "none"
        raise UnknownPluginError(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None

    def load(self, name: str, suite: str | None = None) -> Callable[..., Any]:
        """Import and return the factory registered under ``name``."""
        return load_target(self.entry(name, suite), self.kind)

    def build(self, name: str, /, suite: str | None = None, **params: Any) -> Any:
        plugin = self.entry(name, suite)
        factory = load_target(plugin, self.kind)
        if getattr(plugin, "takes_suite", False):
            return factory(suite=suite, **params)
        return factory(**params)


def _owner(plugin: Plugin) -> str | None:
    return getattr(plugin, "suite", None)


def load_target(plugin: Plugin, kind: str, target: str | None = None) -> Any:
    """Import ``plugin.target`` (or ``target``); a missing optional package is one line naming the extra."""
    module_name, _, attr = (target or plugin.target).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if not missing or missing in _OWN_PACKAGES:
            raise
        how = f"pip install -e '.[{plugin.extra}]'" if plugin.extra else "install the package"
        raise MissingDependencyError(
            f"{kind} {plugin.name!r} needs the package {missing!r}, which is not installed ({how})") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def fill_from(plugins: Iterable[Plugin]) -> Callable[[Registry], None]:
    def fill(registry: Registry) -> None:
        for p in plugins:
            registry.add(p)
    return fill
