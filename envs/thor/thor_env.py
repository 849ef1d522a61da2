"""What ALFRED's ``ThorEnv.step`` adds to a controller step, for both suites' thor backends.

ALFRED's wrapper (askforalfred/alfred env/thor_env.py, which EmbodiedBench copies into
embodiedbench/envs/eb_alfred/env/thor_env.py) changes two kinds of step:

- ``LookUp`` / ``LookDown`` become a ``TeleportFull`` to the same pose with the horizon
  moved by ``AGENT_HORIZON_ADJ`` (``look_angle``, :336-363);
- a successful ``ToggleObjectOn`` of a Faucet needs a visible SinkBasin
  (``update_states``, :169-172: none raises) and is followed by ``check_clean``
  (:463-478): a ``Pass``, then a ``CleanObject`` for each dirty object in the closest
  visible SinkBasin.

The cleaned / heated / cooled marks of ``update_states`` are :class:`envs.thor.state.StateMarks`.
Nothing here imports ai2thor.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

#: gen/constants.py:91 ``AGENT_HORIZON_ADJ``: one LookUp / LookDown, in degrees.
AGENT_HORIZON_ADJ = 15
#: env/thor_env.py:13-17 ``DEFAULT_RENDER_SETTINGS`` and the flags ``look_angle`` sends with them.
LOOK_RENDER = {"tempRenderChange": True, "renderNormalsImage": False, "renderImage": True,
               "renderClassImage": False, "renderObjectImage": False, "renderDepthImage": False}

Step = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def look_action(metadata: Mapping[str, Any], angle: float) -> dict[str, Any]:
    """``look_angle``: the teleport a LookUp (``angle`` < 0) or LookDown sends, rounded as there."""
    agent = metadata["agent"]
    pos = agent["position"]
    return {"action": "TeleportFull", "rotation": np.round(agent["rotation"]["y"], 4),
            "x": pos["x"], "z": pos["z"], "y": pos["y"],
            "horizon": np.round(agent["cameraHorizon"] + angle, 3), **LOOK_RENDER}


def env_action(action: Mapping[str, Any], metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """The controller call ``ThorEnv.step`` (:129-154, ``smooth_nav`` off) makes for ``action``."""
    name = action["action"]
    if "LookUp" in name:
        return look_action(metadata, -AGENT_HORIZON_ADJ)
    if "LookDown" in name:
        return look_action(metadata, AGENT_HORIZON_ADJ)
    return action


def get_object(obj_id: str, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """gen/utils/game_util.py ``get_object`` (None where nothing has the id)."""
    return next((o for o in metadata.get("objects", []) if o["objectId"] == obj_id), None)


def closest_visible(obj_type: str, ref_id: str, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """gen/utils/game_util.py:294-301 ``get_obj_of_type_closest_to_obj``: the visible object of
    ``obj_type`` nearest ``ref_id``, by the same norm and stable sort (None where it raises)."""
    ref = get_object(ref_id, metadata)
    cands = [o for o in metadata.get("objects", []) if o["objectType"] == obj_type and o.get("visible")]
    if ref is None or not cands:
        return None
    at = np.array([ref["position"][k] for k in "xyz"])
    return sorted(cands, key=lambda o: np.linalg.norm(np.array([o["position"][k] for k in "xyz"]) - at))[0]


def after_faucet_on(step: Step, faucet_id: str, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What follows a successful ``ToggleObjectOn`` of ``faucet_id`` (``metadata`` is its result):
    ``update_states``' basin lookup, then ``check_clean``, each call through ``step``.

    Returns the metadata of the last call, or None where ALFRED's code raises (no visible
    SinkBasin, contents None, an id in the basin that the metadata does not list); a caller
    reports that as a failed action, as ALFRED's ``va_interact`` and EmbodiedBench's
    ``toggleon`` catch the exception."""
    if closest_visible("SinkBasin", faucet_id, metadata) is None:
        return None
    metadata = step({"action": "Pass"})
    basin = closest_visible("SinkBasin", faucet_id, metadata)
    if basin is None or basin.get("receptacleObjectIds") is None:
        return None
    for inside in list(basin["receptacleObjectIds"]):
        obj = get_object(inside, metadata)
        if obj is None:
            return None
        if obj.get("dirtyable") and obj.get("isDirty"):
            metadata = step({"action": "CleanObject", "objectId": inside})
    return metadata
