"""Build step beyond pyproject.toml: the wheel ships ``embodied_transfer_gym.pth`` at the top
of site-packages, one line that imports :mod:`envs.gym_plugin` at interpreter start-up so that
``gymnasium.make("embodied_transfer/...")`` works with no project import (Gymnasium 1.x has no
plugin hook; see that module); and Hydra's config tree, ``configs/`` at the top of the checkout,
as package data of ``harness`` (``harness/configs`` in the wheel: :data:`harness.run.config.CONFIG_DIR`
finds it there; a checkout and an editable install read ``configs/`` in place). Everything else
is declared in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "embodied_transfer_gym.pth"
PTH_LINE = "import envs.gym_plugin; envs.gym_plugin.install()\n"
#: The config tree (top of the checkout) and where the wheel carries it (inside ``harness``).
CONFIGS = Path(__file__).resolve().parent / "configs"
CONFIGS_IN_WHEEL = Path("harness") / "configs"


def _config_files() -> list:
    return sorted(p.relative_to(CONFIGS) for p in CONFIGS.rglob("*.yaml"))


class BuildPyWithGymHook(build_py):
    """``build_py`` plus the start-up hook file in the wheel's root (non-editable builds:
    setuptools' editable wheels carry only their path hook)."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            target = Path(self.build_lib) / PTH_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(PTH_LINE, encoding="utf-8")
            for rel in _config_files():
                dest = Path(self.build_lib) / CONFIGS_IN_WHEEL / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(CONFIGS / rel, dest)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(str(Path(self.build_lib) / PTH_NAME))
            outputs += [str(Path(self.build_lib) / CONFIGS_IN_WHEEL / rel) for rel in _config_files()]
        return outputs


setup(cmdclass={"build_py": BuildPyWithGymHook})
