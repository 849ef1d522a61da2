"""Build step beyond pyproject.toml: the wheel ships ``embodied_transfer_gym.pth`` at the top
of site-packages, one line that imports :mod:`envs.gym_plugin` at interpreter start-up so that
``gymnasium.make("embodied_transfer/...")`` works with no project import (Gymnasium 1.x has no
plugin hook; see that module). Everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "embodied_transfer_gym.pth"
PTH_LINE = "import envs.gym_plugin; envs.gym_plugin.install()\n"


class BuildPyWithGymHook(build_py):
    """``build_py`` plus the start-up hook file in the wheel's root (non-editable builds:
    setuptools' editable wheels carry only their path hook)."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            target = Path(self.build_lib) / PTH_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(PTH_LINE, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(str(Path(self.build_lib) / PTH_NAME))
        return outputs


setup(cmdclass={"build_py": BuildPyWithGymHook})
