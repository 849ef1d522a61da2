"""The registries of every plugin found (:func:`harness.plugins.discover`), filled on first use.

``SUITES``, ``PLANNERS``, ``POLICIES``, ``EXECUTORS`` and ``BACKENDS`` (the ``vlm``
planner's model backends). Nothing here imports a simulator or a model: the entry
points name light plugin objects whose factories are imported only when built.
"""

from __future__ import annotations

from functools import lru_cache

from harness.plugins import AgentPlugin, Found, discover
from harness.registry import Registry


@lru_cache(maxsize=1)
def found() -> Found:
    """Every plugin found once per process, with the problems of those that did not load."""
    return discover()


def _fill(kind: str, agent_kind: str | None = None):
    def fill(registry: Registry) -> None:
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

#: Registry by config group (``suite=``, ``planner=``, ``policy=``, ``executor=``).
BY_GROUP = {"suite": SUITES, "planner": PLANNERS, "policy": POLICIES, "executor": EXECUTORS}
