"""Which optional extra (pyproject.toml) installs a module, for one-line "install it" errors.

A command that reaches code needing an extra that is not installed exits 2 with one line naming
the extra (``harness: error: ... pip install -e '.[models]'``), never a traceback.
"""

from __future__ import annotations

from typing import Mapping

from harness.registry.catalog import SUITES, Collected

#: Top-level third-party module -> the extra that installs it, for the core's and the agents'
#: extras; each suite declares its own (``SuitePlugin.modules`` with its ``extra``).
_CORE_EXTRAS: dict[str, str] = {
    "torch": "models", "transformers": "models", "peft": "models", "accelerate": "models",
    "safetensors": "models", "openai": "models", "av": "video",
    "ai2thor": "thor",
    "websockets": "policies", "msgpack": "policies",
    "ray": "ray",
    "huggingface_hub": "fetch",
    "alfworld": "maintainer",
    "mkdocs": "docs",
}


def _module_extras() -> dict[str, str]:
    """The core's table and every suite's modules. Where two suites' extras bring a module,
    the extra with the fewest modules is named (the smaller install)."""
    out = dict(_CORE_EXTRAS)
    suites = sorted((p for p in SUITES.entries() if p.extra and getattr(p, "modules", ())),
                    key=lambda p: -len(p.modules))
    for plugin in suites:  # larger extras first: a smaller one declaring the same module wins
        for module in plugin.modules:
            out[module] = plugin.extra
    return out


#: Module -> extra, collected on first use.
MODULE_EXTRAS: Mapping[str, str] = Collected(_module_extras)


def missing_extra_message(exc: BaseException, who: str = "this") -> str | None:
    """One line naming the extra to install, when ``exc`` is a missing module an extra brings
    (``who``: what needs it)."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    module = (exc.name or "").partition(".")[0]
    extra = MODULE_EXTRAS.get(module)
    if extra is None:
        return None
    return f"{who} needs the package {module!r} from the '{extra}' extra, which is not installed: pip install -e '.[{extra}]'"


def not_installed(plugin: object, who: str) -> str | None:
    """One line naming the extra when a module ``plugin`` declares (:attr:`harness.plugins.Plugin.modules`)
    is not installed here: looked up (``importlib.util.find_spec``), never imported."""
    import importlib.util

    for module in getattr(plugin, "modules", ()) or ():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package that does not import, a module set to None
            found = False
        if not found:
            extra = getattr(plugin, "extra", None) or MODULE_EXTRAS.get(module)
            how = f"from the '{extra}' extra, which is not installed: pip install -e '.[{extra}]'" if extra \
                else "which is not installed"
            return f"{who} needs the package {module!r} {how}"
    return None
