"""Generate the in-context examples shipped with the EB-Manipulation prompt from oracle runs.

Scenes come from a generator seed outside the evaluation set's (``EXAMPLE_SEED``), so no
evaluation episode appears in a prompt. The examples have the original's form and counts
(EmbodiedBench ``evaluator/config/eb_manipulation_example.py`` as used with the
``n_shots: 4`` of ``configs/eb-man.yaml``, ``planner/manip_planner.py:46`` taking the first
``n_shot`` of each list): pick 2, stack 4, place 4, wipe 4, the wipe ones all asking for the
horizontal area. Each one: the instruction, the object dictionary, and an answer with the
original's three keys (``visual_state_description``, ``reasoning_and_reflection`` and
``executable_plan`` as a string; no ``language_plan``), whose plan is the oracle's successful
action sequence, labelled as the task block of our prompt labels its lines; the descriptions
are ours, written from the scene's ground truth.

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
#: Examples per task class (the original's counts under its ``n_shots: 4``).
PER_CLASS = {"pick": 2, "stack": 4, "place": 4, "wipe": 4}
#: The wipe examples all ask for this direction (the original's first four).
WIPE_DIRECTION = "horizontal"
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


def _reasoning(cls: str) -> str:
    if cls in ("pick", "place"):
        dest = "the container" if cls == "pick" else "an opening of the shape sorter"
        return (f"I grasp the target object from above with the gripper pointing down and turned to its sides, "
                f"lift it, carry it over {dest} and open the fingers there.")
    if cls == "stack":
        return ("I grasp the object to be stacked from above, lift it, bring it over the base object with its "
                "faces aligned and release it just above the base object's top.")
    return ("I pick up the sponge, put it down at one end of the asked area with its long side across the area, "
            "and drag it to the other end while pressing it on the table.")


def generate(per_class: dict[str, int] = PER_CLASS) -> dict[str, list[str]]:
    env = EBManipulationEnv(render=False)
    out: dict[str, list[str]] = {}
    for family in E.BASE_FAMILIES:
        cls = E.FAMILY_CLASS[family]
        out[cls] = []
        i = 0
        while len(out[cls]) < per_class[cls]:
            scene = E.make_scene(family, i, EXAMPLE_SEED)
            i += 1
            if cls == "wipe" and scene["target"].get("direction") != WIPE_DIRECTION:
                continue
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
            answer = {
                "visual_state_description": _describe(scene, order, coords),
                "reasoning_and_reflection": _reasoning(cls),
                "executable_plan": json.dumps(executed),
            }
            out[cls].append(f"Instruction: {spec.instruction}\nObjects: {coords}\nOutput: "
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
