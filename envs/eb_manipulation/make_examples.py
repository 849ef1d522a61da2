"""Generate the in-context examples shipped with the EB-Manipulation prompt from oracle runs.

Scenes come from a generator seed outside the evaluation set's (``EXAMPLE_SEED``), so no
evaluation episode appears in a prompt. Each example: the instruction, the object
dictionary, and a JSON answer whose ``executable_plan`` is the oracle's successful action
sequence; the descriptions are written from the scene's ground truth.

    python -m envs.eb_manipulation.make_examples   # rewrites envs/eb_manipulation/data/eb_manipulation_examples.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation.agents import oracle_plan
from envs.eb_manipulation.env import EBManipulationEnv
from harness.types import INFO_PRIVILEGED, EpisodeSpec

EXAMPLE_SEED = 1000
PER_CLASS = 4
OUT = Path(__file__).resolve().parent / "data" / "eb_manipulation_examples.json"
_SHAPE_NAMES = {"star": "star", "triangular": "triangular prism", "cylinder": "cylinder", "cube": "cube", "moon": "moon"}


def _describe(scene: dict, order: list[str], coords: dict) -> str:
    objs = {o["name"]: o for o in scene["objects"]}
    parts = []
    for (label, xyz), name in zip(coords.items(), order):
        o = objs[name]
        if o["kind"] == "shape":
            what = f"a {o['color']} {_SHAPE_NAMES[o['shape']]}"
        elif o["kind"] == "container":
            what = f"a {o['color']} container"
        elif o["kind"] == "sorter":
            what = "the shape sorter"
        elif o["kind"] == "area":
            what = f"a {o['color']} strip on the table"
        else:
            what = "a yellow sponge"
        parts.append(f"{label} is {what} at {xyz}")
    return "; ".join(parts) + "."


def _reasoning(cls: str) -> tuple[str, list[str]]:
    if cls in ("pick", "place"):
        dest = "the container" if cls == "pick" else "an opening of the shape sorter"
        return (f"I grasp the target object from above with the gripper pointing down and turned to its sides, "
                f"lift it, carry it over {dest} and open the fingers there.",
                ["move above the object with the gripper open", "lower onto it and close", "lift it",
                 f"move above {dest}", "open the gripper"])
    if cls == "stack":
        return ("I grasp the cube to be stacked from above, lift it, bring it over the base cube with its faces "
                "aligned and release it just above the base cube's top.",
                ["move above the top cube with the gripper open", "lower onto it and close", "lift it",
                 "move above the base cube", "release it on the base cube"])
    return ("I pick up the sponge, put it down at one end of the asked strip with its long side across the strip, "
            "and drag it to the other end while pressing it on the table.",
            ["move above the sponge with the gripper open", "lower onto it and close", "lift it",
             "move above the near end of the strip", "lower the sponge onto the table", "drag it to the far end"])


def generate(per_class: int = PER_CLASS) -> dict[str, list[str]]:
    env = EBManipulationEnv(render=False)
    out: dict[str, list[str]] = {}
    for family in E.BASE_FAMILIES:
        cls = E.FAMILY_CLASS[family]
        out[cls] = []
        i = 0
        while len(out[cls]) < per_class:
            scene = E.make_scene(family, i, EXAMPLE_SEED)
            i += 1
            spec = EpisodeSpec(E.SUITE_NAME, "examples", f"examples/{family}/{i}", i, E.instruction(scene, "base"),
                               {"scene": scene, "task_class": cls, "family": family})
            obs, info = env.reset(options={"episode": spec, "privileged": True})
            coords = obs["object_coordinates"]
            from envs.eb_manipulation.env import object_coordinates, object_entries
            _, order = object_coordinates(object_entries(env.world))
            executed: list[list[int]] = []
            for _ in range(4):
                for a in oracle_plan(info[INFO_PRIVILEGED]):
                    obs, _, term, trunc, info = env.step(a)
                    executed.append(a)
                    if term or trunc:
                        break
                if term or trunc:
                    break
            if not info["success"]:
                continue
            reasoning, steps = _reasoning(cls)
            answer = {
                "visual_state_description": _describe(scene, order, coords),
                "reasoning_and_reflection": reasoning,
                "language_plan": "\n".join(f"{k + 1}. {s}" for k, s in enumerate(steps)),
                "executable_plan": json.dumps(executed),
            }
            out[cls].append(f"Instruction: {spec.instruction}\nObjects: {coords}\nAnswer: "
                            + json.dumps(answer, indent=4))
    env.close()
    return out


def main(argv: list[str] | None = None) -> int:
    path = Path((argv or sys.argv[1:] or [str(OUT)])[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(generate(), indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
