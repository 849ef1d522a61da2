"""The registries of every plugin found (:func:`harness.plugins.discover`), filled on first use.

``SUITES``, ``PLANNERS``, ``POLICIES``, ``EXECUTORS``, ``BACKENDS`` (the ``vlm``
planner's model backends) and ``TRACKERS`` (experiment trackers). Nothing here imports a simulator or a model: the entry
points name light plugin objects whose factories are imported only when built.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

from harness.plugins import AgentPlugin, Found, discover
from harness.registry.loader import Registry


@lru_cache(maxsize=1)
def found() -> Found:
    """Every plugin found once per process, with the problems of those that did not load."""
    return discover()


def _fill(kind: str, agent_kind: str | None = None):
    def fill(registry: Registry) -> None:
        registry.refused.update({name: message for (group, name), message in found().refused.items()
                                 if group == kind})
        for group, plugin in found().plugins:
            if group != kind:
                continue
            if agent_kind is not None and (not isinstance(plugin, AgentPlugin) or plugin.kind != agent_kind):
                continue
            registry.add(plugin)
    return fill


SUITES = Registry("suite", fill=_fill("suite"))
PLANNERS = Registry("planner", fill=_fill("agent", "planner"))
POLICIES = Registry("policy", "policies", fill=_fill("agent", "policy"))
EXECUTORS = Registry("executor", fill=_fill("executor"))
BACKENDS = Registry("model backend", fill=_fill("backend"))
TRACKERS = Registry("tracker", fill=_fill("tracker"))

#: Registry by config group (``suite=``, ``planner=``, ``policy=``, ``executor=``, ``tracker=``).
BY_GROUP = {"suite": SUITES, "planner": PLANNERS, "policy": POLICIES, "executor": EXECUTORS, "tracker": TRACKERS}


class Collected(Mapping):
    """A read-only mapping built on first use from the registered plugins (``build()``), so
    importing the module that holds it discovers nothing."""

    def __init__(self, build: Callable[[], Mapping[str, Any]]):
        self._build = build
        self._data: Mapping[str, Any] | None = None

    def _get(self) -> Mapping[str, Any]:
        if self._data is None:
            self._data = dict(self._build())
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())
