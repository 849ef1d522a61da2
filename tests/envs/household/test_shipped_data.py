"""The household engine's package data equals what scripts/gen_household_data.py makes of alfworld.

The engine reads ALFRED's constants and the 120 floor plans' layout files from
``envs/household/data`` (so the core install needs no alfworld/TextWorld build). Regenerating
from the installed alfworld==0.4.2 (the ``maintainer`` extra) must give the shipped files byte
for byte, and the values the engine sees must be alfworld's own.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "envs" / "household" / "data"

needs_alfworld = pytest.mark.skipif(
    importlib.util.find_spec("alfworld") is None,
    reason="alfworld (the maintainer extra) is not installed: cannot regenerate the package data",
)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_household_data", ROOT / "scripts" / "gen_household_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


@needs_alfworld
def test_regenerating_gives_the_shipped_files_byte_for_byte(tmp_path):
    _generator().generate(tmp_path)
    fresh, shipped = _tree(tmp_path), _tree(SHIPPED)
    assert sorted(fresh) == sorted(shipped)
    assert len(shipped) == 1 + 2 * 120
    changed = [name for name in fresh if fresh[name] != shipped[name]]
    assert changed == []


@needs_alfworld
def test_engine_constants_are_alfworlds():
    import alfworld.gen.constants as ref

    from envs.household.constants import alfred_constants

    c = alfred_constants()
    assert c.objects == tuple(ref.OBJECTS)
    assert c.receptacles == frozenset(ref.RECEPTACLES)
    assert c.openable == frozenset(ref.OPENABLE_CLASS_LIST)
    assert c.val_receptacle_objects == {k: frozenset(v) for k, v in ref.VAL_RECEPTACLE_OBJECTS.items()}
    assert c.goals_valid == {k: frozenset(v) for k, v in ref.GOALS_VALID.items()}
    assert c.scene_type == {k: tuple(v) for k, v in ref.SCENE_TYPE.items()}
    assert c.raw["AGENT_STEP_SIZE"] == ref.AGENT_STEP_SIZE
    assert c.raw["VISIBILITY_DISTANCE"] == ref.VISIBILITY_DISTANCE
    layouts = Path(ref.__file__).resolve().parent / "layouts"
    for fp in (1, 230, 330, 430):
        for kind in ("objects", "openable"):
            name = f"FloorPlan{fp}-{kind}.json"
            assert json.loads((c.layouts_dir / name).read_text()) == json.loads((layouts / name).read_text())


def test_engine_reads_no_alfworld():
    """The engine and the THOR restore work from the package data alone."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['alfworld'] = None\n"
        "from envs.household.scene import floor_plan_inventory, all_floor_plans\n"
        "from envs.thor.restore import initialize_action\n"
        "assert len(all_floor_plans()) == 120\n"
        "assert floor_plan_inventory(1).has('Fridge')\n"
        "assert initialize_action()['gridSize'] == 0.25\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
