"""ALFRED's scene restore on AI2-THOR, call for call.

ALFRED's evaluation (models/eval/eval.py ``setup_scene``; env/thor_env.py
``ThorEnv.reset`` / ``restore_scene``; the same code ships in alfworld's
``alfworld/env/thor_env.py``) runs, for a trajectory:

1. ``controller.reset("FloorPlan<N>")`` then ``Initialize`` (grid size, camera height,
   render flags, visibility distance, ``makeAgentsVisible=False``);
2. ``restore_scene``: ``Initialize`` again; ``SetObjectToggles`` when the file lists
   toggles; when ``dirty_and_empty``, ``SetStateOfAllObjects`` with
   ``StateChange="CanBeDirty", forceAction=True`` then ``"CanBeFilled", forceAction=False``;
   ``SetObjectPoses`` with the file's ``object_poses``;
3. the file's ``init_action`` (a ``TeleportFull``) as one step;
4. the task from ``pddl_params`` (here: :class:`~envs.household.TaskSpec`).

The constants come from ALFRED's gen/constants.py as shipped in the household engine's package data.
"""

from __future__ import annotations

from typing import Any, Mapping

from envs.household import alfred_constants


def initialize_action() -> dict[str, Any]:
    """ALFRED's ``Initialize`` step (gen/constants.py values)."""
    c = alfred_constants().raw
    return dict(
        action="Initialize",
        gridSize=c["AGENT_STEP_SIZE"] / c["RECORD_SMOOTHING_FACTOR"],
        cameraY=c["CAMERA_HEIGHT_OFFSET"],
        renderImage=c["RENDER_IMAGE"],
        renderDepthImage=c["RENDER_DEPTH_IMAGE"],
        renderClassImage=c["RENDER_CLASS_IMAGE"],
        renderObjectImage=c["RENDER_OBJECT_IMAGE"],
        visibility_distance=c["VISIBILITY_DISTANCE"],
        makeAgentsVisible=False,
    )


def restore_calls(traj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The controller calls that restore ``traj``'s start state: ``("reset", scene_name)``
    and ``("step", action_dict)`` in ALFRED's order."""
    scene = traj["scene"]
    calls: list[tuple[str, Any]] = [("reset", f"FloorPlan{int(scene['scene_num'])}"),
                                    ("step", initialize_action()), ("step", initialize_action())]
    toggles = scene.get("object_toggles") or []
    if len(toggles) > 0:
        calls.append(("step", dict(action="SetObjectToggles", objectToggles=toggles)))
    if scene.get("dirty_and_empty"):
        calls.append(("step", dict(action="SetStateOfAllObjects", StateChange="CanBeDirty", forceAction=True)))
        calls.append(("step", dict(action="SetStateOfAllObjects", StateChange="CanBeFilled", forceAction=False)))
    calls.append(("step", dict(action="SetObjectPoses", objectPoses=scene["object_poses"])))
    calls.append(("step", dict(scene["init_action"])))
    return calls


def restore(session: Any, traj: Mapping[str, Any]) -> Any:
    """Run :func:`restore_calls` on a :class:`~envs.thor.session.ThorSession`; the last event."""
    event = None
    for kind, arg in restore_calls(traj):
        event = session.reset(arg) if kind == "reset" else session.step(arg)
    return event
