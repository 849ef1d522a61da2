"""Generate the household engine's package data from the installed ``alfworld`` package.

The embedded household engine (``envs/household``) needs ALFRED's protocol constants
(``gen/constants.py``) and the object inventories of the 120 floor plans
(``gen/layouts/FloorPlan<N>-objects.json`` / ``-openable.json``); alfworld ships both, but
installing alfworld builds TextWorld's C/C++ dependencies. This script extracts exactly
what the engine reads into ``envs/household/data/`` so the core install needs no compiler:

    pip install -e ".[maintainer]"        # alfworld==0.4.2
    python scripts/gen_household_data.py  # rewrites envs/household/data/

``tests/envs/household/test_shipped_data.py`` regenerates into a temporary folder and checks
the result equals the shipped files byte for byte.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

#: alfworld version the shipped files were generated from (its gen/ is ALFRED's gen/).
ALFWORLD_VERSION = "0.4.2"

#: Names read from ALFRED's gen/constants.py: the engine's tables, then the values
#: ALFRED's ``Initialize`` step passes to AI2-THOR (envs/thor/restore.py).
CONSTANT_NAMES: tuple[str, ...] = (
    "OBJECTS", "RECEPTACLES", "MOVABLE_RECEPTACLES", "OPENABLE_CLASS_LIST",
    "VAL_RECEPTACLE_OBJECTS", "VAL_ACTION_OBJECTS", "GOALS_VALID", "SCENE_TYPE",
    "MAX_NUM_OF_OBJ_INSTANCES", "PICKUP_REPEAT_MAX",
    "AGENT_STEP_SIZE", "RECORD_SMOOTHING_FACTOR", "CAMERA_HEIGHT_OFFSET", "VISIBILITY_DISTANCE",
    "RENDER_IMAGE", "RENDER_DEPTH_IMAGE", "RENDER_CLASS_IMAGE", "RENDER_OBJECT_IMAGE",
)

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "envs" / "household" / "data"


def _plain(value: Any) -> Any:
    """JSON form of a constant: sets sorted (their order is not data), ranges/tuples as lists."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (range, tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), ensure_ascii=True) + "\n").encode("ascii")


def generate(out: Path = DEFAULT_OUT) -> list[Path]:
    """Write ``constants.json`` and ``layouts/FloorPlan<N>-{objects,openable}.json`` under ``out``."""
    try:
        import alfworld  # noqa: F401
        mod = importlib.import_module("alfworld.gen.constants")
    except ImportError as exc:
        raise SystemExit(
            f"gen_household_data: needs alfworld=={ALFWORLD_VERSION} (pip install -e '.[maintainer]')"
        ) from exc
    from importlib.metadata import version

    installed = version("alfworld")
    if installed != ALFWORLD_VERSION:
        raise SystemExit(f"gen_household_data: alfworld {installed} installed, {ALFWORLD_VERSION} expected")
    src = Path(mod.__file__).resolve().parent / "layouts"
    consts = {name: _plain(getattr(mod, name)) for name in CONSTANT_NAMES}
    floor_plans = sorted(n for room in ("Kitchen", "LivingRoom", "Bedroom", "Bathroom")
                         for n in mod.SCENE_TYPE[room])
    written: list[Path] = []
    out.mkdir(parents=True, exist_ok=True)
    (out / "layouts").mkdir(exist_ok=True)
    header = {"source": f"alfworld=={ALFWORLD_VERSION}: alfworld/gen/constants.py (ALFRED gen/constants.py)",
              "generator": "scripts/gen_household_data.py"}
    target = out / "constants.json"
    target.write_bytes(_dump({"_about": header, **consts}))
    written.append(target)
    for fp in floor_plans:
        for kind in ("objects", "openable"):
            name = f"FloorPlan{fp}-{kind}.json"
            # Parsed and re-serialised compactly: same values, same key order.
            data = json.loads((src / name).read_text(encoding="utf-8"))
            target = out / "layouts" / name
            target.write_bytes(_dump(data))
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    args = ap.parse_args(argv)
    files = generate(args.out)
    print(f"wrote {len(files)} files under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
