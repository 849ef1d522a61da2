"""A missing optional extra gives one line naming the extra and exit 2, never a traceback.

The modules are made unimportable in-process (``sys.modules[name] = None``, what Python does
for a blocked import), as on an install without the extra.
"""

from __future__ import annotations

import sys

import pytest

from harness.cli.entry import main
from harness.registry.extras import MODULE_EXTRAS, missing_extra_message


def _block(monkeypatch, *modules):
    """Make ``modules`` unimportable and forget the project modules that imported them
    (also as attributes of their parent package, which ``from pkg import mod`` reads first)."""
    for name in list(sys.modules):
        if name.split(".")[0] in modules or name.startswith(("policies.server", "policies.wire", "planners.vlm.backends")):
            monkeypatch.delitem(sys.modules, name)
            parent, _, child = name.rpartition(".")
            # a blocked package's own submodules go with it (torch's module objects refuse some
            # attribute deletions); only the project's parent packages are edited
            if parent in sys.modules and parent.split(".")[0] not in modules and hasattr(sys.modules[parent], child):
                monkeypatch.delattr(sys.modules[parent], child)
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def _one_line(capsys, code):
    _out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_serve_policy_without_msgpack(monkeypatch, capsys):
    _block(monkeypatch, "msgpack")
    line = _one_line(capsys, main(["serve-policy"]))
    assert "'msgpack'" in line and "pip install -e '.[policies]'" in line


def test_vlm_planner_without_torch(monkeypatch, capsys, tmp_path):
    _block(monkeypatch, "torch")
    code = main(["run", "planner=vlm", "planner.params.model=/no/such/ckpt", "limit=1", f"out={tmp_path / 'o'}"])
    line = _one_line(capsys, code)
    assert "'torch'" in line and "pip install -e '.[models]'" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("backend", ["hf", "openai"])
def test_vlm_planner_without_the_extra_names_it_before_asking_for_a_model(monkeypatch, capsys, tmp_path, backend):
    _block(monkeypatch, "torch", "transformers", "openai")
    code = main(["run", "planner=vlm", f"planner.params.backend={backend}", f"out={tmp_path / 'o'}"])
    line = _one_line(capsys, code)
    assert "pip install -e '.[models]'" in line and "model is required" not in line, line
    assert f"(backend {backend})" in line


def test_openai_judge_without_the_extra_names_it_before_asking_for_a_model(monkeypatch, capsys, tmp_path):
    _block(monkeypatch, "openai")
    line = _one_line(capsys, main(["judge", str(tmp_path), "judge=openai"]))
    assert "'openai'" in line and "pip install -e '.[models]'" in line and "judge.model is required" not in line


def test_a_package_two_plugins_need_is_named_once(monkeypatch, capsys, tmp_path):
    pytest.importorskip("mujoco", reason="checks the import of the twin's modules as a core install fails it")
    import envs.eb_manipulation  # noqa: F401 - as an earlier test in this process would have

    for name in list(sys.modules):  # the twin's modules import mujoco: forget them, as a core install never had them
        if name.startswith("envs.eb_manipulation."):
            monkeypatch.delitem(sys.modules, name)
            parent, _, child = name.rpartition(".")
            if hasattr(sys.modules.get(parent), child):
                monkeypatch.delattr(sys.modules[parent], child)
    _block(monkeypatch, "mujoco", "robosuite")
    line = _one_line(capsys, main(["run", "suite=eb_manipulation", "planner=oracle", "limit=1",
                                   f"out={tmp_path / 'o'}"]))
    assert line.count("'mujoco'") == 1, line
    assert "planner 'oracle' and suite 'eb_manipulation' need the package 'mujoco'" in line


def test_every_mapped_extra_exists_in_pyproject():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(MODULE_EXTRAS.values()) <= set(extras)


def test_other_import_errors_are_not_disguised():
    assert missing_extra_message(ModuleNotFoundError("x", name="not_an_extra_module")) is None
    assert missing_extra_message(ValueError("x")) is None
    with pytest.raises(ModuleNotFoundError):
        raise ModuleNotFoundError("x", name="not_an_extra_module")
