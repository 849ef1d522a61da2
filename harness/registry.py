"""Plugin registries with lazy ``"module:attr"`` targets.

Each plugin kind (suite, planner, policy, executor) has one registry. Entries
are registered once, in :mod:`harness.catalog`, as import strings, so listing
them imports nothing heavy; the target module is imported only when the entry
is built. Unknown names fail with a "did you mean" hint.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any, Callable


class UnknownPluginError(KeyError):
    """An unknown registry key. ``str()`` is a one-line message with a hint."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class MissingDependencyError(ImportError):
    """A plugin's optional dependencies are not installed; ``str()`` is one line naming the extra."""


#: Top-level packages of this project: a missing one of these is a bug, not a missing extra.
_OWN_PACKAGES = {"harness", "envs", "planners", "policies"}


@dataclass(frozen=True)
class Entry:
    name: str
    target: str
    summary: str = ""
    #: The pyproject extra that installs what the target imports (None: the core install).
    extra: str | None = None


class Registry:
    def __init__(self, kind: str, plural: str | None = None):
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, target: str, summary: str = "", extra: str | None = None) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if ":" not in target:
            raise ValueError(f"target for {self.kind} {name!r} must be 'module:attr', got {target!r}")
        self._entries[name] = Entry(name, target, summary, extra)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), self.names(), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(self.names()) or "none"
            raise UnknownPluginError(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None

    def load(self, name: str) -> Callable[..., Any]:
        """Import and return the factory registered under ``name``."""
        entry = self.entry(name)
        module_name, _, attr = entry.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if not missing or missing in _OWN_PACKAGES:
                raise
            how = f"pip install -e '.[{entry.extra}]'" if entry.extra else "install the package"
            raise MissingDependencyError(
                f"{self.kind} {name!r} needs the package {missing!r}, which is not installed ({how})") from None
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj

    def build(self, name: str, /, **params: Any) -> Any:
        return self.load(name)(**params)
