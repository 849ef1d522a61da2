"""Which optional extra (pyproject.toml) installs a module, for one-line "install it" errors.

A command that reaches code needing an extra that is not installed exits 2 with one line naming
the extra (``harness: error: ... pip install -e '.[models]'``), never a traceback.
"""

from __future__ import annotations

#: Top-level third-party module -> the extra that installs it. Where two extras bring a module
#: (robosuite and mujoco: libero and eb_manipulation), the smaller one is named.
MODULE_EXTRAS: dict[str, str] = {
    "torch": "models", "transformers": "models", "peft": "models", "accelerate": "models",
    "safetensors": "models", "openai": "models",
    "libero": "libero", "cv2": "libero", "bddl": "libero",
    "robosuite": "eb_manipulation", "mujoco": "eb_manipulation",
    "ai2thor": "thor",
    "websockets": "policies", "msgpack": "policies",
    "ray": "ray",
    "huggingface_hub": "fetch",
    "alfworld": "maintainer",
    "mkdocs": "docs",
}


def missing_extra_message(exc: BaseException) -> str | None:
    """One line naming the extra to install, when ``exc`` is a missing module an extra brings."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    module = (exc.name or "").partition(".")[0]
    extra = MODULE_EXTRAS.get(module)
    if extra is None:
        return None
    return f"this needs the package {module!r} from the '{extra}' extra, which is not installed: pip install -e '.[{extra}]'"
