"""A FAKE AI2-THOR controller for tests: it replays metadata payloads built from a real
ALFRED trajectory file. It is not AI2-THOR and simulates no physics.

What is real: the scene's objects come from the trajectory's ``object_poses``
(one object per entry; ids written as AI2-THOR writes them, ``Type|x|y|z``, from
the recorded positions: AI2-THOR derives them from the default scene layout, which
the file does not hold, so they match the plan's ids only for unmoved objects) and from the floor plan's receptacle ids and agent poses
(alfworld's ``FloorPlan<N>-openable.json``); the restore calls it receives are
checked against the file. What is made up: containment (each movable object is
put in the receptacle the household restore assigns it), visibility (everything
not inside a closed receptacle), and the outcome of interactions (a small rule
set: pickup needs empty hands and an open path, put needs a held object and an
open receptacle, slice replaces nothing and adds ``<Type>Sliced`` pieces).

Crash and hang injection: ``crash_on`` / ``hang_on`` hold the indices (0-based,
over every ``reset``/``step`` call of this fake) at which it raises
``ConnectionResetError`` or blocks for ``hang_s`` seconds.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any, Iterable, Mapping

from envs.household import alfred_constants, floor_plan_inventory
from envs.household.restore import id_position, scene_facts
from envs.household.constants import SLICED_TYPE


class FakeEvent:
    def __init__(self, metadata: dict[str, Any]) -> None:
        self.metadata = metadata


def thor_id(obj_type: str, pos: Mapping[str, float]) -> str:
    return f"{obj_type}|{pos['x']:+06.2f}|{pos['y']:+06.2f}|{pos['z']:+06.2f}"


class FakeController:
    """Stands in for ``ai2thor.controller.Controller`` (2.1.0 method names)."""

    needs_display = False

    def __init__(self, traj: Mapping[str, Any] | None = None, crash_on: Iterable[int] = (), hang_on: Iterable[int] = (),
                 hang_s: float = 30.0) -> None:
        self.traj = traj
        self.crash_on, self.hang_on, self.hang_s = set(crash_on), set(hang_on), hang_s
        self.calls: list[tuple[str, Any]] = []
        self.started = False
        self.stopped = False
        self.unity_pid = None
        self._release = threading.Event()
        self.metadata: dict[str, Any] = {}

    # --- controller API ----------------------------------------------------------------
    def start(self, port: int = 0, start_unity: bool = True, player_screen_width: int = 300,
              player_screen_height: int = 300, x_display: str | None = None) -> FakeEvent:
        self.started = True
        self.screen = (player_screen_width, player_screen_height)
        return FakeEvent({"lastActionSuccess": True, "objects": []})

    def stop(self) -> None:
        self.stopped = True
        self._release.set()

    def reset(self, scene_name: str) -> FakeEvent:
        self._tick("reset", scene_name)
        self.metadata = self._scene(scene_name)
        return FakeEvent(copy.deepcopy(self.metadata))

    def step(self, action: dict[str, Any], raise_for_failure: bool = False) -> FakeEvent:
        self._tick("step", action)
        ok, err = self._apply(action)
        self.metadata["lastActionSuccess"] = ok
        self.metadata["errorMessage"] = err
        self.metadata["lastAction"] = action.get("action")
        return FakeEvent(copy.deepcopy(self.metadata))

    # --- internals ---------------------------------------------------------------------------
    def _tick(self, kind: str, arg: Any) -> None:
        index = len(self.calls)
        self.calls.append((kind, copy.deepcopy(arg)))
        if index in self.crash_on:
            raise ConnectionResetError("fake Unity process died")
        if index in self.hang_on:
            self._release.wait(self.hang_s)

    def _scene(self, scene_name: str) -> dict[str, Any]:
        fp = int(scene_name.replace("FloorPlan", "").replace("_physics", ""))
        consts = alfred_constants()
        inv = floor_plan_inventory(fp)
        objects: dict[str, dict[str, Any]] = {}
        for rtype, rid in inv.receptacles:
            p = id_position(rid) or (0.0, 0.0, 0.0)
            objects[rid] = self._obj(rid, rtype, {"x": p[0], "y": p[1], "z": p[2]}, consts)
        for t in inv.object_types:
            if t not in consts.pickupable and not any(o["objectType"] == t for o in objects.values()):
                objects[t] = self._obj(t, t, {"x": 0.0, "y": 0.0, "z": 0.0}, consts)
        layout = consts.layouts_dir / f"FloorPlan{fp}-openable.json"
        poses = json.loads(layout.read_text())
        return {"sceneName": scene_name, "objects": list(objects.values()), "inventoryObjects": [],
                "lastActionSuccess": True, "errorMessage": "",
                "reachablePositions": [{"x": v[0], "y": 0.9009997, "z": v[1]} for v in poses.values()],
                "agent": {"position": {"x": 0.0, "y": 0.9, "z": 0.0}, "rotation": {"y": 0}, "cameraHorizon": 0}}

    @staticmethod
    def _obj(oid: str, otype: str, pos: Mapping[str, float], consts: Any) -> dict[str, Any]:
        return {
            "objectId": oid, "objectType": otype, "position": dict(pos), "visible": True,
            "receptacle": otype in consts.val_receptacle_objects, "openable": otype in consts.openable,
            "isOpen": False, "toggleable": otype in consts.toggleable, "isToggled": False,
            "sliceable": otype in consts.sliceable, "isSliced": False, "pickupable": otype in consts.pickupable,
            "parentReceptacles": None, "receptacleObjectIds": [] if otype in consts.val_receptacle_objects else None,
        }

    def _by_id(self) -> dict[str, dict[str, Any]]:
        return {o["objectId"]: o for o in self.metadata.get("objects", [])}

    def _set_parent(self, oid: str, parent: str | None) -> None:
        objs = self._by_id()
        for o in objs.values():
            ids = o.get("receptacleObjectIds")
            if ids and oid in ids:
                ids.remove(oid)
        chain: list[str] = []
        p = parent
        while p is not None:
            chain.append(p)
            objs[p].setdefault("receptacleObjectIds", [])
            if oid not in (objs[p]["receptacleObjectIds"] or []):
                objs[p]["receptacleObjectIds"] = list(objs[p]["receptacleObjectIds"] or []) + [oid]
            parents = objs[p].get("parentReceptacles") or []
            p = parents[0] if parents else None
        objs[oid]["parentReceptacles"] = chain or None
        self._visibility()

    def _closed_above(self, oid: str) -> bool:
        objs = self._by_id()
        return any(objs[p]["openable"] and not objs[p]["isOpen"] for p in (objs[oid].get("parentReceptacles") or []))

    def _visibility(self) -> None:
        for o in self.metadata.get("objects", []):
            o["visible"] = not self._closed_above(o["objectId"])

    def _apply(self, a: Mapping[str, Any]) -> tuple[bool, str]:
        name = a.get("action")
        objs = self._by_id()
        oid = a.get("objectId")
        if name in ("Initialize", "Pass", "SetStateOfAllObjects", "GetReachablePositions"):
            if name == "GetReachablePositions":
                self.metadata["actionReturn"] = self.metadata["reachablePositions"]
            return True, ""
        if name == "SetObjectToggles":
            for t in a["objectToggles"]:
                for o in objs.values():
                    if o["objectType"] == t["objectType"]:
                        o["isToggled"] = bool(t["isOn"])
            return True, ""
        if name == "SetObjectPoses":
            self._poses(a["objectPoses"])
            return True, ""
        if name == "TeleportFull":
            self.metadata["agent"] = {"position": {"x": a["x"], "y": a["y"], "z": a["z"]},
                                      "rotation": {"y": a["rotation"]}, "cameraHorizon": a["horizon"]}
            return True, ""
        if oid is not None and oid not in objs:
            return False, f"Object ID appears to be invalid: {oid}"
        held = self.metadata["inventoryObjects"][0]["objectId"] if self.metadata["inventoryObjects"] else None
        if name == "PickupObject":
            o = objs[oid]
            if held or not o["pickupable"] or self._closed_above(oid):
                return False, f"cannot pick up {oid}"
            self._set_parent(oid, None)
            self.metadata["inventoryObjects"] = [{"objectId": oid, "objectType": o["objectType"]}]
            return True, ""
        if name == "PutObject":
            r = objs[a["receptacleObjectId"]]
            if held != oid or not r["receptacle"] or (r["openable"] and not r["isOpen"]):
                return False, "cannot put"
            self.metadata["inventoryObjects"] = []
            self._set_parent(oid, r["objectId"])
            return True, ""
        if name == "DropHandObject":
            if not held:
                return False, "nothing held"
            self.metadata["inventoryObjects"] = []
            return True, ""
        if name in ("OpenObject", "CloseObject"):
            o = objs[oid]
            want = name == "OpenObject"
            if not o["openable"] or o["isOpen"] == want:
                return False, f"{name} failed"
            o["isOpen"] = want
            self._visibility()
            return True, ""
        if name in ("ToggleObjectOn", "ToggleObjectOff"):
            o = objs[oid]
            want = name == "ToggleObjectOn"
            if not o["toggleable"] or o["isToggled"] == want or (want and o["objectType"] == "Microwave"
                                                                  and o["isOpen"]):
                return False, f"{name} failed"
            o["isToggled"] = want
            return True, ""
        if name == "SliceObject":
            o = objs[oid]
            if not o["sliceable"] or o["isSliced"]:
                return False, "cannot slice"
            o["isSliced"] = True
            parent = (o.get("parentReceptacles") or [None])[0]
            for k in range(3 if o["objectType"] != "Egg" else 1):
                pid = f"{oid}|{SLICED_TYPE[o['objectType']]}_{k + 1}"
                piece = self._obj(pid, SLICED_TYPE[o["objectType"]], o["position"], alfred_constants())
                piece["pickupable"] = True
                self.metadata["objects"].append(piece)
                self._set_parent(pid, parent)
            return True, ""
        return False, f"the fake controller does not implement {name!r}"

    def _poses(self, poses: list[Mapping[str, Any]]) -> None:
        """Movable objects from the poses; each in the receptacle the household restore assigns."""
        consts = alfred_constants()
        statics = [o for o in self.metadata["objects"] if not o["pickupable"]]
        self.metadata["objects"] = statics
        facts = scene_facts(self.traj) if self.traj is not None else None
        start_of = {s.thor_id: s.receptacle_id for s in facts.starts} if facts is not None else {}
        for p in poses:
            t = str(p["objectName"]).split("_")[0]
            if t not in consts.pickupable:
                continue
            oid = thor_id(t, p["position"])
            self.metadata["objects"].append(self._obj(oid, t, p["position"], consts))
        by_id = self._by_id()
        for o in list(self.metadata["objects"]):
            if not o["pickupable"]:
                continue
            parent = start_of.get(o["objectId"])
            if parent is None:
                pos = (o["position"]["x"], o["position"]["y"], o["position"]["z"])
                cands = [s for s in statics if s["receptacle"] and o["objectType"] in
                         consts.val_receptacle_objects.get(s["objectType"], ())]
                if cands:
                    parent = min(cands, key=lambda s: sum((a - b) ** 2 for a, b in zip(
                        pos, (s["position"]["x"], s["position"]["y"], s["position"]["z"]))))["objectId"]
            if parent in by_id:
                self._set_parent(o["objectId"], parent)
