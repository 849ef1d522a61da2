"""EB-Manipulation twin: how its first front-camera frame looks next to EmbodiedBench's.

    python benchmarks/eb_manipulation_frames.py [--out DIR] [--json]

Renders the first (annotated, 500 px) frame of episode 0 of each base task family and prints, per
family, the mean and median colour of two fixed pixel regions: the *table* (rows 300-489, columns
10-489: the wooden top in front of the robot, objects and shadows included) and the *wall*
(rows 20-189, columns 0-169 and 330-499: the wall either side of the arm). With
``EMBODIEDBENCH_DIR`` pointing at an EmbodiedBench checkout, the same statistics of its own
example frames (``embodiedbench/evaluator/config/visual_icl_examples/eb_manipulation/*/*.png``,
read there, never copied) are printed beside them, with the Euclidean distance in RGB between
each family's table mean and the original's mean over all its frames (likewise for the wall).
The camera of the twin is fitted to those frames, so the same pixel regions cover the same
parts of the scene in both.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from envs.eb_manipulation.frames import ICL_FRAMES, original_frames, stats  # noqa: E402


def twin_frames() -> dict[str, np.ndarray]:
    from envs.eb_manipulation import episodes as E
    from envs.eb_manipulation.env import EBManipulationEnv

    env = EBManipulationEnv(render=True, image_size=500)
    by_family = {}
    for spec in E.episodes("base"):
        family = spec.metadata["family"]
        if family in by_family:
            continue
        obs, _ = env.reset(options={"episode": spec})
        by_family[family] = obs["image"]
    env.close()
    return by_family


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also write each family's frame as DIR/<family>.png")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    frames = twin_frames()
    twin = {f: stats(img) for f, img in frames.items()}
    if args.out:
        from PIL import Image

        Path(args.out).mkdir(parents=True, exist_ok=True)
        for family, img in frames.items():
            Image.fromarray(img).save(Path(args.out) / f"{family}.png")
    result: dict = {"twin": twin}
    root = os.environ.get("EMBODIEDBENCH_DIR")
    if root:
        orig_frames = original_frames(Path(root))
        if not orig_frames:
            print(f"error: no example frames under {Path(root) / ICL_FRAMES}", file=sys.stderr)
            return 2
        orig = {k: stats(v) for k, v in orig_frames.items()}
        ref = {key: np.mean([s[key] for s in orig.values()], axis=0).round(1).tolist() for key in next(iter(orig.values()))}
        result["original"] = orig
        result["original_mean"] = ref
        result["distance"] = {f: {"table": round(float(np.linalg.norm(np.subtract(s["table_mean"], ref["table_mean"]))), 1),
                                  "wall": round(float(np.linalg.norm(np.subtract(s["wall_mean"], ref["wall_mean"]))), 1)}
                              for f, s in twin.items()}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{'frame':44s} {'table mean':>20s} {'table median':>20s} {'wall mean':>18s} {'dist t/w':>10s}")
    for f, s in twin.items():
        d = result.get("distance", {}).get(f)
        dist = "" if d is None else "{}/{}".format(d["table"], d["wall"])
        print(f"twin {f:39s} {str(s['table_mean']):>20s} {str(s['table_median']):>20s} {str(s['wall_mean']):>18s} "
              f"{dist:>10s}")
    for f, s in result.get("original", {}).items():
        print(f"original {f:35s} {str(s['table_mean']):>20s} {str(s['table_median']):>20s} {str(s['wall_mean']):>18s}")
    if "original_mean" in result:
        r = result["original_mean"]
        print(f"{'original, all frames':44s} {str(r['table_mean']):>20s} {str(r['table_median']):>20s} {str(r['wall_mean']):>18s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
