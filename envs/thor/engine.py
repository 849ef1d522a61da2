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
``SliceObject(objectId)`` (a knife must be held); ``DropHandObject``. A
``ToggleObjectOn`` of a Faucet is followed, as ALFRED's ``ThorEnv.step`` does
(``check_clean``, env/thor_env.py:463-478), by ``Pass`` and a ``CleanObject`` of
every dirty object in the closest visible SinkBasin.

``goto`` is privileged navigation (the object is known by id), in one of two ways
(:attr:`ThorEngine.navigation`):

- ``teleport`` (EB-ALFRED's ``find``): ``GetReachablePositions`` once per scene,
  then ``TeleportFull`` to the reachable position nearest the object, turned to the
  multiple of 90 degrees that faces it, looking down 30 degrees at objects below
  the camera;
- ``walk`` (the ``alfred`` suite's ``GotoLocation``): ``GetReachablePositions`` once
  per scene, then ALFRED's expert walk (:mod:`envs.thor.navigation`) to ALFRED's
  pose for the object, one primitive per call in ALFRED's evaluation forms
  (env/thor_env.py:395-417 ``to_thor_api_exec``, :129-148 ``step`` without smooth
  navigation): ``MoveAhead`` / ``RotateLeft`` / ``RotateRight`` with
  ``forceAction=True``; ``LookUp`` / ``LookDown`` as the ``TeleportFull`` of
  ``look_angle`` (:336-363). :attr:`ThorEngine.last_primitives` counts them.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, Mapping

from envs.household import ActionResult, TaskSpec, World, alfred_constants
from envs.household.constants import KNIFE_TYPES
from envs.thor.navigation import LOOK_DOWN, LOOK_UP, Cell, cell_of, goal_pose, grid_of, pose_of, walk
from envs.thor.state import StateMarks, refresh, world_from_metadata
from envs.thor.thor_env import after_faucet_on, env_action, get_object

#: Horizon (degrees down) when the object is below the camera: ALFRED's expert
#: looks down in steps of AGENT_HORIZON_ADJ = 15 (gen/constants.py); two steps.
LOOK_DOWN_HORIZON = 30
#: An object more than this below the agent's camera is looked at from above (metres).
LOOK_DOWN_BELOW_M = 0.5
#: :attr:`ThorEngine.navigation` values.
TELEPORT, WALK = "teleport", "walk"


@functools.lru_cache(maxsize=None)
def vetted_cells(floor_plan: int) -> Mapping[str, Cell]:
    """Receptacle id -> ALFRED's vetted interaction cell (``layouts/FloorPlan<N>-openable.json``)."""
    path = alfred_constants().layouts_dir / f"FloorPlan{floor_plan}-openable.json"
    if not path.is_file():
        return {}
    return {k: cell_of(float(v[0]), float(v[1])) for k, v in json.loads(path.read_text()).items()}


def _metadata(event: Any) -> Mapping[str, Any]:
    return event.metadata if hasattr(event, "metadata") else event


class ThorEngine:
    """Primitives on a :class:`~envs.thor.session.ThorSession`; ``world`` mirrors the simulator."""

    #: How ``goto`` moves the agent: TELEPORT or WALK (module docstring).
    navigation = TELEPORT

    def __init__(self, session: Any, floor_plan: int, task: TaskSpec | None, event: Any) -> None:
        self.session = session
        self.floor_plan = floor_plan
        self.task = task
        self.marks = StateMarks()
        self._reachable: list[Mapping[str, float]] | None = None
        self.metadata = _metadata(event)
        self.world: World = world_from_metadata(self.metadata, floor_plan, task, self.marks)
        self.calls: list[dict[str, Any]] = []
        #: WALK: the primitives the last ``goto`` issued, and the most one may issue (None: no limit).
        self.last_primitives = 0
        self.max_primitives: int | None = None

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
        """``goto`` needs the object's position. (Interactions send any id, as ALFRED's
        ``to_thor_api_exec`` does: the simulator refuses one it does not know.)"""
        if obj_id not in self.world.objects:
            return ActionResult(False, f"There is no {obj_id} in this scene.")
        return None

    def _object(self, obj_id: str) -> Mapping[str, Any] | None:
        return get_object(obj_id, self.metadata)

    # --- primitives ----------------------------------------------------------------
    def _reachable_positions(self) -> list[Mapping[str, float]]:
        if self._reachable is None:
            self.calls.append({"action": "GetReachablePositions"})
            md = _metadata(self.session.step({"action": "GetReachablePositions"}))
            self._reachable = list(md.get("reachablePositions") or md.get("actionReturn") or [])
        return self._reachable

    def goto(self, obj_id: str) -> ActionResult:
        err = self._known(obj_id)
        if err:
            return err
        reachable = self._reachable_positions()
        if self.navigation == WALK:
            return self._walk(obj_id, reachable)
        obj = self._object(obj_id)
        if not reachable or obj is None:
            return ActionResult(False, f"Cannot move to {obj_id}")
        ox, oy, oz = (float(obj["position"][k]) for k in ("x", "y", "z"))
        best = min(reachable, key=lambda p: (math.hypot(p["x"] - ox, p["z"] - oz), p["x"], p["z"]))
        yaw = math.degrees(math.atan2(ox - best["x"], oz - best["z"])) % 360
        rotation = int(round(yaw / 90.0)) % 4 * 90
        camera_y = float(best.get("y", 0.9)) + 0.675
        horizon = LOOK_DOWN_HORIZON if oy < camera_y - LOOK_DOWN_BELOW_M else 0
        res = self._step(dict(action="TeleportFull", x=best["x"], y=best.get("y", 0.9), z=best["z"],
                              rotation=rotation, horizon=horizon))
        if res.ok:
            self.world.at = obj_id
        return res

    def _walk(self, obj_id: str, reachable: list[Mapping[str, float]]) -> ActionResult:
        """ALFRED's expert walk to ALFRED's pose for ``obj_id``, one primitive at a time; stops
        at the first that fails, or (successfully, short of the object) at ``max_primitives``."""
        self.last_primitives = 0
        obj, agent = self._object(obj_id), self.metadata.get("agent")
        cells = grid_of(reachable)
        if obj is None or agent is None or not cells:
            return ActionResult(False, f"Cannot move to {obj_id}")
        camera_height = float(agent["position"]["y"]) + float(alfred_constants().raw["CAMERA_HEIGHT_OFFSET"])
        goal = goal_pose(obj["position"], obj["objectType"], cells, camera_height, self.floor_plan,
                         known=vetted_cells(self.floor_plan).get(obj_id))
        actions = walk(cells, pose_of(agent), goal) if goal is not None else None
        if actions is None:
            return ActionResult(False, f"Cannot reach {obj_id} on the reachable grid")
        for name in actions:
            if self.max_primitives is not None and self.last_primitives >= self.max_primitives:
                return ActionResult(True, "Stopped on the way: the step limit is reached.")
            res = self.primitive(name)
            self.last_primitives += 1
            if not res.ok:
                return res
        self.world.at = obj_id
        return ActionResult(True, "")

    def primitive(self, name: str) -> ActionResult:
        """One navigation primitive in ALFRED's evaluation form (module docstring)."""
        if name in (LOOK_UP, LOOK_DOWN):
            return self._step(dict(env_action({"action": name}, self.metadata)))
        return self._step({"action": name, "forceAction": True})

    def pickup(self, obj_id: str) -> ActionResult:
        return self._step(dict(action="PickupObject", objectId=obj_id))

    def put(self, recep_id: str, force: bool = False) -> ActionResult:
        """AI2-THOR's put is always forced (ALFRED env/thor_env.py), so ``force`` changes nothing."""
        if self.world.holding is None:
            return ActionResult(False, "You are not holding anything.")
        return self._step(dict(action="PutObject", objectId=self.world.holding, receptacleObjectId=recep_id,
                               forceAction=True, placeStationary=True))

    def drop(self) -> ActionResult:
        if self.world.holding is None:
            return ActionResult(False, "You are not holding anything.")
        return self._step(dict(action="DropHandObject"))

    def open(self, obj_id: str) -> ActionResult:
        return self._step(dict(action="OpenObject", objectId=obj_id, moveMagnitude=1.0))

    def close(self, obj_id: str) -> ActionResult:
        return self._step(dict(action="CloseObject", objectId=obj_id, forceAction=True))

    def toggle_on(self, obj_id: str) -> ActionResult:
        """As ALFRED's ``ThorEnv.step``: the toggle's own success, unless the faucet's follow-up
        (:func:`envs.thor.thor_env.after_faucet_on`) raises there."""
        res = self._step(dict(action="ToggleObjectOn", objectId=obj_id))
        if res.ok and "Faucet" in obj_id and after_faucet_on(self._md_step, obj_id, self.metadata) is None:
            return ActionResult(False, "No SinkBasin is in view of the Faucet, or its contents cannot be read.")
        return res

    def _md_step(self, action: Mapping[str, Any]) -> Mapping[str, Any]:
        self._step(dict(action))
        return self.metadata

    def toggle_off(self, obj_id: str) -> ActionResult:
        return self._step(dict(action="ToggleObjectOff", objectId=obj_id))

    def slice(self, obj_id: str) -> ActionResult:
        held = self.world.holding
        if held is None or self.world.objects[held].type not in KNIFE_TYPES:
            # ALFRED's to_thor_api_exec refuses to slice without a knife in hand.
            return ActionResult(False, "You need to hold a Knife or ButterKnife to slice.")
        return self._step(dict(action="SliceObject", objectId=obj_id))
