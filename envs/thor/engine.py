"""The household engine's primitives as AI2-THOR 2.1.0 calls.

Same method names and :class:`~envs.household.ActionResult` results as
:class:`envs.household.HouseholdEngine`, so the EB-ALFRED skill executor and
the ALFRED triplet executor run unchanged on either backend. The world they
read (``engine.world``) is rebuilt from the simulator's metadata after every
call (:mod:`envs.thor.state`), in place.

API calls (ALFRED env/thor_env.py ``to_thor_api_exec`` forms):
``PickupObject(objectId)``; ``PutObject(objectId=<held>, receptacleObjectId,
forceAction=True, placeStationary=True)``; ``OpenObject(objectId, moveMagnitude=1.0)``;
``CloseObject(objectId, forceAction=True)``; ``ToggleObjectOn/Off(objectId)``;
``SliceObject(objectId)`` (a knife must be held); ``DropHandObject``.
``goto`` is privileged navigation: ``GetReachablePositions`` once per scene,
then ``TeleportFull`` to the reachable position nearest the object, turned to
the multiple of 90 degrees that faces it, looking down 30 degrees at objects
below the camera (EB-ALFRED's ``find`` and this suite's ``GotoLocation``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from envs.household import ActionResult, TaskSpec, World
from envs.household.constants import KNIFE_TYPES
from envs.thor.state import StateMarks, refresh, world_from_metadata

#: Horizon (degrees down) when the object is below the camera: ALFRED's expert
#: looks down in steps of AGENT_HORIZON_ADJ = 15 (gen/constants.py); two steps.
LOOK_DOWN_HORIZON = 30
#: An object more than this below the agent's camera is looked at from above (metres).
LOOK_DOWN_BELOW_M = 0.5


def _metadata(event: Any) -> Mapping[str, Any]:
    return event.metadata if hasattr(event, "metadata") else event


class ThorEngine:
    """Primitives on a :class:`~envs.thor.session.ThorSession`; ``world`` mirrors the simulator."""

    def __init__(self, session: Any, floor_plan: int, task: TaskSpec | None, event: Any) -> None:
        self.session = session
        self.floor_plan = floor_plan
        self.task = task
        self.marks = StateMarks()
        self._reachable: list[Mapping[str, float]] | None = None
        self.metadata = _metadata(event)
        self.world: World = world_from_metadata(self.metadata, floor_plan, task, self.marks)
        self.calls: list[dict[str, Any]] = []

    # --- plumbing -----------------------------------------------------------------
    def _step(self, action: dict[str, Any]) -> ActionResult:
        self.calls.append(action)
        event = self.session.step(action)
        self.metadata = _metadata(event)
        self.marks.update(action, self.metadata)
        refresh(self.world, world_from_metadata(self.metadata, self.floor_plan, self.task, self.marks,
                                                at=self.world.at))
        ok = bool(self.metadata.get("lastActionSuccess"))
        return ActionResult(ok, "" if ok else str(self.metadata.get("errorMessage") or f"{action['action']} failed"))

    def _known(self, obj_id: str) -> ActionResult | None:
        if obj_id not in self.world.objects:
            return ActionResult(False, f"There is no {obj_id} in this scene.")
        return None

    def _object(self, obj_id: str) -> Mapping[str, Any] | None:
        return next((o for o in self.metadata.get("objects", []) if o["objectId"] == obj_id), None)

    # --- primitives ----------------------------------------------------------------
    def goto(self, obj_id: str) -> ActionResult:
        err = self._known(obj_id)
        if err:
            return err
        if self._reachable is None:
            self.calls.append({"action": "GetReachablePositions"})
            md = _metadata(self.session.step({"action": "GetReachablePositions"}))
            self._reachable = list(md.get("reachablePositions") or md.get("actionReturn") or [])
        obj = self._object(obj_id)
        if not self._reachable or obj is None:
            return ActionResult(False, f"Cannot move to {obj_id}")
        ox, oy, oz = (float(obj["position"][k]) for k in ("x", "y", "z"))
        best = min(self._reachable, key=lambda p: (math.hypot(p["x"] - ox, p["z"] - oz), p["x"], p["z"]))
        yaw = math.degrees(math.atan2(ox - best["x"], oz - best["z"])) % 360
        rotation = int(round(yaw / 90.0)) % 4 * 90
        camera_y = float(best.get("y", 0.9)) + 0.675
        horizon = LOOK_DOWN_HORIZON if oy < camera_y - LOOK_DOWN_BELOW_M else 0
        res = self._step(dict(action="TeleportFull", x=best["x"], y=best.get("y", 0.9), z=best["z"],
                              rotation=rotation, horizon=horizon))
        if res.ok:
            self.world.at = obj_id
        return res

    def pickup(self, obj_id: str) -> ActionResult:
        return self._known(obj_id) or self._step(dict(action="PickupObject", objectId=obj_id))

    def put(self, recep_id: str, force: bool = False) -> ActionResult:
        """AI2-THOR's put is always forced (ALFRED env/thor_env.py), so ``force`` changes nothing."""
        err = self._known(recep_id)
        if err:
            return err
        if self.world.holding is None:
            return ActionResult(False, "You are not holding anything.")
        return self._step(dict(action="PutObject", objectId=self.world.holding, receptacleObjectId=recep_id,
                               forceAction=True, placeStationary=True))

    def drop(self) -> ActionResult:
        if self.world.holding is None:
            return ActionResult(False, "You are not holding anything.")
        return self._step(dict(action="DropHandObject"))

    def open(self, obj_id: str) -> ActionResult:
        return self._known(obj_id) or self._step(dict(action="OpenObject", objectId=obj_id, moveMagnitude=1.0))

    def close(self, obj_id: str) -> ActionResult:
        return self._known(obj_id) or self._step(dict(action="CloseObject", objectId=obj_id, forceAction=True))

    def toggle_on(self, obj_id: str) -> ActionResult:
        return self._known(obj_id) or self._step(dict(action="ToggleObjectOn", objectId=obj_id))

    def toggle_off(self, obj_id: str) -> ActionResult:
        return self._known(obj_id) or self._step(dict(action="ToggleObjectOff", objectId=obj_id))

    def slice(self, obj_id: str) -> ActionResult:
        err = self._known(obj_id)
        if err:
            return err
        held = self.world.holding
        if held is None or self.world.objects[held].type not in KNIFE_TYPES:
            # ALFRED's to_thor_api_exec refuses to slice without a knife in hand.
            return ActionResult(False, "You need to hold a Knife or ButterKnife to slice.")
        return self._step(dict(action="SliceObject", objectId=obj_id))
