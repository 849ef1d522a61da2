"""A recording stand-in for ai2thor 2.1.0's ``Controller`` (test code, never shipped).

It is **not** AI2-THOR: no renderer, no physics, no Unity process. It keeps a
table of object metadata, answers ``reset`` / ``step`` calls from that table with
the fields AI2-THOR 2.1.0's ``event.metadata`` has, and records every call in
``calls`` as ``("reset", scene_name)`` / ``("step", action_dict)``, with the metadata it
answered in ``events``. It serves two callers: our ``ThorSession`` (through a suite's ``controller_factory``) and
EmbodiedBench's ``ThorEnv(Controller)``, which subclasses it when a test puts it
in ``sys.modules["ai2thor.controller"]`` (so its own method names never clash
with ThorEnv's: every helper is private and it never calls ``self.step``).

What is real:

- the static receptacles and their ids (``Type|x|y|z``, basins
  ``Sink|x|y|z|SinkBasin``) from ALFRED's floor-plan layouts (alfworld's
  ``FloorPlan<N>-openable.json``, shipped in ``envs/household/data``); the ids of
  objects the trajectory's expert used (StoveBurners, Faucets, lamps: read from
  its ``plan``) where the layouts give none;
- the movable objects, from ``SetObjectPoses``: one per pose entry, with the
  entry's ``objectName`` as ``name``, its position and rotation, and the id
  AI2-THOR derives from the position (``Type|+0x.xx|+0y.yy|+0z.zz``);
- the start receptacle of the objects the expert handles (the household restore's
  scene facts, :func:`envs.household.restore.scene_facts`, when ``traj`` is given),
  the openables it found open, the lamps' ``object_toggles``;
- ``GetReachablePositions``: ALFRED's reachable grid (``FloorPlan<N>-layout.npy``:
  an EmbodiedBench checkout's ``gen/layouts`` under ``$EMBODIEDBENCH_DIR``, else
  alfworld's copy, which is identical); without either, the layouts' agent poses;
- AI2-THOR's conventions: rotation 0 faces +z, 90 faces +x; a positive horizon looks
  down; sliced pieces' ids as the trajectories name them (``<objectId>|<Type>Sliced_<k>``)
  and ``_Slice`` in their ``name`` (what EmbodiedBench's sliced-first rule looks for);
  ``event.pose_discrete`` as ai2thor 2.1.0 computes it.

What is made up (deterministic, documented here, never a measurement):

- positions of statics whose id carries none (a bare ``StoveBurner`` of the
  layouts, a Faucet or lamp the expert never used), the containment of objects the
  expert never handles (the nearest receptacle ALFRED's whitelist allows), what a
  drop or a put does to positions, the number of pieces a slice makes (indices from 0;
  an Egg gives one ``EggCracked_0``), which types
  get dirty (``SetStateOfAllObjects`` ``CanBeDirty``), the agent's start pose (the
  first open grid point) and height (0.9009999);
- ``distance``: from the camera (agent position, 0.75 m up) to the object's position;
- with ``obstacles=True`` (the differential and the thor backend's own tests):
  ``visible`` means within 1.5 m (xz), within 45 degrees of the facing direction
  and of the camera horizon, not inside a closed openable; one grid point in seven
  is blocked (hash of the floor plan and point; never the trajectory's start point),
  and ``TeleportFull`` / ``Move*`` onto it fail, as do teleports off the grid or with
  a horizon outside [-30, 60]; a ``PutObject`` fails when the receptacle is not
  visible or when a hash of (object, receptacle, pose) says "no free spot here" (one
  time in three), so looking and moving change the outcome; an ``OpenObject`` fails
  when a hash of (object, agent position) says the door would hit the agent (one time
  in three); pickup, open, close, toggle and slice need the object visible;
- with ``obstacles=False`` (the default, the earlier fake's rules): everything not
  inside a closed openable is visible and reachable; teleports always succeed;
- either way a put needs the held object and an open receptacle, and a movable one
  (Bowl, Mug, ...) takes only what ALFRED's whitelist puts in it; a slice leaves the
  whole listed (``isSliced``) but no longer visible or usable.

Crash and hang injection: ``crash_on`` / ``hang_on`` hold the indices (0-based, over
every ``reset``/``step`` call) at which it raises ``ConnectionResetError`` or blocks
for ``hang_s`` seconds.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import threading
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from envs.household import alfred_constants, floor_plan_inventory
from envs.household.constants import SLICED_TYPE
from envs.household.restore import id_position, scene_facts
from envs.household.scene import thor_id_type

#: The agent's standing height in the made-up world (AI2-THOR reports about 0.901).
AGENT_Y = 0.9009999
#: Camera above the agent's position (ALFRED gen/constants.py CAMERA_HEIGHT_OFFSET).
CAMERA_UP = 0.75
#: Made-up visibility (obstacles=True): distance (ALFRED VISIBILITY_DISTANCE) and half field of view.
VISIBLE_M, HALF_FOV = 1.5, 45.0
#: Made-up: pieces per slice (covers the piece indices the json_2.1.0 files name: up to Tomato_6).
PIECES = {"Apple": 3, "Bread": 7, "Lettuce": 7, "Potato": 3, "Tomato": 7, "Egg": 1}
#: Made-up: types that SetStateOfAllObjects(CanBeDirty) makes dirty.
DIRTYABLE = frozenset({"Bowl", "Cup", "Mug", "Pan", "Plate", "Pot", "Cloth"})
#: Made-up: the horizons a TeleportFull accepts (obstacles=True).
HORIZON_RANGE = (-30.0, 60.0)


def thor_id(obj_type: str, pos: Mapping[str, float]) -> str:
    """The id AI2-THOR 2.1.0 gives an object at ``pos``."""
    return f"{obj_type}|{pos['x']:+06.2f}|{pos['y']:+06.2f}|{pos['z']:+06.2f}"


def _hash(*parts: Any) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


def layouts_dir() -> Path | None:
    """ALFRED's ``gen/layouts`` (reachable grids): an EmbodiedBench checkout's, else alfworld's."""
    root = os.environ.get("EMBODIEDBENCH_DIR")
    if root:
        path = Path(root) / "embodiedbench" / "envs" / "eb_alfred" / "gen" / "layouts"
        if path.is_dir():
            return path
    spec = importlib.util.find_spec("alfworld")
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(base) / "gen" / "layouts"
        if path.is_dir():
            return path
    return None


@lru_cache(maxsize=None)
def reachable_grid(floor_plan: int) -> tuple[tuple[float, float], ...]:
    """(x, z) of ALFRED's reachable positions of a floor plan, in the layout file's order."""
    folder = layouts_dir()
    if folder is not None and (folder / f"FloorPlan{floor_plan}-layout.npy").is_file():
        points = np.load(folder / f"FloorPlan{floor_plan}-layout.npy")
        return tuple((float(x), float(z)) for x, z in points)
    poses = json.loads((alfred_constants().layouts_dir / f"FloorPlan{floor_plan}-openable.json").read_text())
    return tuple(dict.fromkeys((float(v[0]), float(v[1])) for v in poses.values()))


def _expert_ids(traj: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Object type -> the AI2-THOR ids the trajectory's expert named (pieces left out)."""
    out: dict[str, list[str]] = {}
    if not traj:
        return out
    plan = traj.get("plan") or {}
    actions = [a.get("api_action", {}) for a in plan.get("low_actions", ())]
    actions += [s.get("planner_action", {}) for s in plan.get("high_pddl", ())]
    for a in actions:
        for key in ("objectId", "receptacleObjectId"):
            oid = a.get(key)
            if isinstance(oid, str) and oid.count("|") in (3, 4) and "Sliced" not in oid and "Cracked" not in oid:
                out.setdefault(thor_id_type(oid), [])
                if oid not in out[thor_id_type(oid)]:
                    out[thor_id_type(oid)].append(oid)
    return {t: sorted(ids) for t, ids in out.items()}


def _pos(o: Mapping[str, Any]) -> tuple[float, float, float]:
    p = o["position"]
    return float(p["x"]), float(p["y"]), float(p["z"])


class FakeEvent:
    """``ai2thor.server.Event``'s fields that callers read."""

    def __init__(self, metadata: dict[str, Any], screen: tuple[int, int] = (300, 300)) -> None:
        self.metadata = metadata
        self._screen = screen
        self.instance_detections2D: dict[str, Any] = {}

    @property
    def frame(self) -> Any:
        return np.zeros((self._screen[1], self._screen[0], 3), dtype=np.uint8)

    @property
    def pose_discrete(self) -> tuple[int, int, int, int]:
        """ai2thor 2.1.0 ``Event.pose_discrete`` (grid 0.25)."""
        agent = self.metadata["agent"]
        return (int(agent["position"]["x"] / 0.25), int(agent["position"]["z"] / 0.25),
                int(agent["rotation"]["y"] / 90.0), int(round(agent["cameraHorizon"])))


class FakeController:
    """Stands in for ``ai2thor.controller.Controller`` (2.1.0 method names and arguments)."""

    needs_display = False
    #: the made-up failure rules of the module docstring; a subclass or the constructor turns them on.
    obstacles = False

    def __init__(self, traj: Mapping[str, Any] | None = None, crash_on: Iterable[int] = (),
                 hang_on: Iterable[int] = (), hang_s: float = 30.0, quality: str | None = None,
                 obstacles: bool | None = None) -> None:
        self.traj = traj
        self.quality = quality
        if obstacles is not None:
            self.obstacles = obstacles
        self.crash_on, self.hang_on, self.hang_s = set(crash_on), set(hang_on), hang_s
        self.calls: list[tuple[str, Any]] = []
        #: the metadata answered to each call of ``calls`` (same index)
        self.events: list[dict[str, Any]] = []
        self.started = False
        self.stopped = False
        self.unity_pid = None
        self.screen = (300, 300)
        self._release = threading.Event()
        self._objects: list[dict[str, Any]] = []
        self._parent: dict[str, str | None] = {}
        self._held: str | None = None
        self._agent = {"x": 0.0, "y": AGENT_Y, "z": 0.0, "rotation": 0.0, "horizon": 0.0}
        self._floor_plan = 0
        self._scene_name = ""
        self._grid_size = 0.25
        self.last_event = FakeEvent(self._snapshot("", True, ""), self.screen)

    # --- controller API ----------------------------------------------------------------
    def start(self, port: int = 0, start_unity: bool = True, player_screen_width: int = 300,
              player_screen_height: int = 300, x_display: str | None = None) -> FakeEvent:
        self.started = True
        self.screen = (player_screen_width, player_screen_height)
        self.last_event = FakeEvent(self._snapshot("", True, ""), self.screen)
        return self.last_event

    def stop(self) -> None:
        self.stopped = True
        self._release.set()

    def reset(self, scene_name: str) -> FakeEvent:
        self._tick("reset", scene_name)
        self._load_scene(scene_name)
        self.last_event = FakeEvent(self._snapshot("", True, ""), self.screen)
        self.events.append(self.last_event.metadata)
        return self.last_event

    def step(self, action: Any, raise_for_failure: bool = False) -> FakeEvent:
        if isinstance(action, str):
            action = {"action": action}
        self._tick("step", action)
        ok, err, ret = self._apply(action)
        self.last_event = FakeEvent(self._snapshot(action.get("action"), ok, err, ret), self.screen)
        self.events.append(self.last_event.metadata)
        return self.last_event

    @property
    def metadata(self) -> dict[str, Any]:
        """The last event's metadata."""
        return self.last_event.metadata

    # --- recording, crash and hang injection --------------------------------------------
    def _tick(self, kind: str, arg: Any) -> None:
        index = len(self.calls)
        self.calls.append((kind, copy.deepcopy(arg)))
        if index in self.crash_on:
            raise ConnectionResetError("fake Unity process died")
        if index in self.hang_on:
            self._release.wait(self.hang_s)

    # --- the scene ----------------------------------------------------------------------
    def _load_scene(self, scene_name: str) -> None:
        fp = int(scene_name.replace("FloorPlan", "").replace("_physics", ""))
        self._floor_plan, self._scene_name = fp, scene_name
        self._grid = reachable_grid(fp)
        start = (self.traj or {}).get("scene", {}).get("init_action") or {}
        self._start_point = (round(float(start.get("x", math.nan)), 2), round(float(start.get("z", math.nan)), 2))
        free = [p for p in self._grid if not self._blocked(p)] or list(self._grid)
        x, z = free[0]
        self._agent = {"x": x, "y": AGENT_Y, "z": z, "rotation": 0.0, "horizon": 0.0}
        self._held = None
        self._dirty_scene = False
        self._objects, self._parent = [], {}
        consts = alfred_constants()
        inv = floor_plan_inventory(fp)
        expert = _expert_ids(self.traj)
        poses = json.loads((consts.layouts_dir / f"FloorPlan{fp}-openable.json").read_text())
        #: inventory id (a layout id, or a bare type) -> this scene's id
        self._inv_ids: dict[str, str] = {}
        for rtype, rid in inv.receptacles:
            oid = rid if "|" in rid else (expert.get(rtype) or [self._made_up_id(rtype)])[0]
            self._inv_ids[rid] = oid
            facing = poses.get(rid)
            self._add(oid, rtype, name=f"{rtype}_{_hash(oid):08x}", rotation=float(facing[2]) if facing else 0.0)
        # The Sink / Bathtub around each basin (AI2-THOR names a basin <sink id>|SinkBasin).
        for o in list(self._objects):
            if o["objectId"].count("|") == 4:
                outer = o["objectId"].rsplit("|", 1)[0]
                self._add(outer, thor_id_type(outer), name=f"{thor_id_type(outer)}_{_hash(outer):08x}")
        # Lamps and faucets (toggleable statics); a faucet per SinkBasin.
        basins = [o for o in self._objects if o["objectType"] == "SinkBasin"]
        for t in inv.object_types:
            if t not in consts.toggleable or any(o["objectType"] == t for o in self._objects):
                continue
            real = list(expert.get(t, ()))
            for k in range(max(1, len(basins)) if t == "Faucet" else 1):
                if real:
                    oid = real.pop(0)
                elif t == "Faucet" and basins:
                    x, y, z = _pos(basins[k])
                    oid = thor_id(t, {"x": x, "y": y + 0.3, "z": z})
                else:
                    oid = self._made_up_id(t)
                self._add(oid, t, name=f"{t}_{_hash(oid):08x}")

    def _made_up_id(self, obj_type: str) -> str:
        gx, gz = self._grid[_hash(obj_type) % len(self._grid)]
        return thor_id(obj_type, {"x": gx + 0.5, "y": 0.9, "z": gz})

    def _add(self, oid: str, otype: str, *, name: str, position: Mapping[str, float] | None = None,
             rotation: float = 0.0, movable: bool = False) -> dict[str, Any]:
        consts = alfred_constants()
        if position is None:
            p = id_position(oid) or (0.0, 0.0, 0.0)
            y = p[1] - 0.05 if oid.count("|") == 4 else p[1]  # a basin sits in its sink
            position = {"x": p[0], "y": y, "z": p[2]}
        receptacle = otype in consts.val_receptacle_objects
        o = {
            "objectId": oid, "objectType": otype, "name": name, "position": dict(position),
            "rotation": {"x": 0.0, "y": rotation, "z": 0.0},
            "receptacle": receptacle, "receptacleObjectIds": [] if receptacle else None,
            "parentReceptacles": None, "pickupable": movable, "openable": otype in consts.openable,
            "isOpen": False, "toggleable": otype in consts.toggleable, "isToggled": False,
            "sliceable": otype in consts.sliceable, "isSliced": False,
            "dirtyable": otype in DIRTYABLE, "isDirty": False, "active": True,
        }
        self._objects.append(o)
        self._parent[oid] = None
        return o

    def _by_id(self) -> dict[str, dict[str, Any]]:
        return {o["objectId"]: o for o in self._objects}

    def _set_poses(self, poses: list[Mapping[str, Any]]) -> None:
        """Movable objects from the poses; task objects in their recorded start receptacle,
        the others in the nearest receptacle ALFRED's whitelist allows."""
        consts = alfred_constants()
        self._objects = [o for o in self._objects if not o["pickupable"]]
        self._parent = {o["objectId"]: None for o in self._objects}
        self._held = None
        for p in poses:
            t = str(p["objectName"]).split("_")[0]
            rot = float((p.get("rotation") or {}).get("y", 0.0))
            o = self._add(thor_id(t, p["position"]), t, name=str(p["objectName"]), position=p["position"],
                          rotation=rot, movable=True)
            o["isDirty"] = o["dirtyable"] and self._dirty_scene
        facts = scene_facts(self.traj) if self.traj else None
        start_of = {s.thor_id: self._inv_ids.get(s.receptacle_id, s.receptacle_id) for s in facts.starts} if facts else {}
        by_id = self._by_id()
        statics = [o for o in self._objects if not o["pickupable"] and o["receptacle"]]
        movers = [o for o in self._objects if o["pickupable"]]
        for o in movers:
            parent = start_of.get(o["objectId"])
            if parent is None:
                cands = [s for s in statics if o["objectType"] in consts.val_receptacle_objects.get(s["objectType"], ())]
                if cands:
                    parent = min(cands, key=lambda s: math.dist(_pos(o), _pos(s)))["objectId"]
            if parent in by_id:
                self._parent[o["objectId"]] = parent
        if facts is not None:
            for obj_type, container_type in facts.nested:
                containers = [o for o in movers if o["objectType"] == container_type]
                free = [o for o in movers if o["objectType"] == obj_type and o["objectId"] not in start_of]
                if containers and free:
                    self._parent[free[0]["objectId"]] = containers[0]["objectId"]
            for oid in facts.open_ids:
                if oid in by_id and by_id[oid]["openable"]:
                    by_id[oid]["isOpen"] = True

    # --- geometry (made up) --------------------------------------------------------------
    def _blocked(self, point: tuple[float, float]) -> bool:
        if not self.obstacles or (round(point[0], 2), round(point[1], 2)) == self._start_point:
            return False
        return _hash(self._floor_plan, f"{point[0]:.2f}", f"{point[1]:.2f}") % 7 == 0

    def _grid_point(self, x: float, z: float, tolerance: float) -> tuple[float, float] | None:
        best = min(self._grid, key=lambda p: math.hypot(p[0] - x, p[1] - z))
        return best if math.hypot(best[0] - x, best[1] - z) <= tolerance else None

    def _ancestors(self, oid: str) -> list[str]:
        chain, p = [], self._parent.get(oid)
        while p is not None and p not in chain:
            chain.append(p)
            p = self._parent.get(p)
        return chain

    def _in_closed(self, oid: str, by_id: Mapping[str, Mapping[str, Any]]) -> bool:
        return any(by_id[p]["openable"] and not by_id[p]["isOpen"] for p in self._ancestors(oid))

    def _camera(self) -> tuple[float, float, float]:
        a = self._agent
        return float(a["x"]), float(a["y"]) + CAMERA_UP, float(a["z"])

    def _visible(self, o: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> bool:
        if not o["active"]:
            return False
        if o["objectId"] == self._held or self._held in self._ancestors(o["objectId"]):
            return True
        if self._in_closed(o["objectId"], by_id):
            return False
        if not self.obstacles:
            return True
        cx, cy, cz = self._camera()
        ox, oy, oz = _pos(o)
        d = math.hypot(ox - cx, oz - cz)
        if d > VISIBLE_M:
            return False
        if d < 1e-6:
            return True
        yaw = math.degrees(math.atan2(ox - cx, oz - cz))
        if abs((yaw - float(self._agent["rotation"]) + 180.0) % 360.0 - 180.0) > HALF_FOV:
            return False
        pitch_down = math.degrees(math.atan2(cy - oy, d))
        return abs(pitch_down - float(self._agent["horizon"])) <= HALF_FOV

    def _position_of(self, o: Mapping[str, Any]) -> dict[str, float]:
        holder = self._held if o["objectId"] == self._held or self._held in self._ancestors(o["objectId"]) else None
        if holder is None:
            return dict(o["position"])
        a = self._agent  # in the hand: 0.5 m in front of the camera, 0.3 m below it
        r = math.radians(float(a["rotation"]))
        return {"x": float(a["x"]) + 0.5 * math.sin(r), "y": float(a["y"]) + CAMERA_UP - 0.3,
                "z": float(a["z"]) + 0.5 * math.cos(r)}

    # --- metadata ----------------------------------------------------------------------
    def _snapshot(self, action: Any, ok: bool, err: str, ret: Any = None) -> dict[str, Any]:
        by_id = self._by_id()
        contents: dict[str, list[str]] = {}
        for o in self._objects:
            for p in self._ancestors(o["objectId"]):
                contents.setdefault(p, []).append(o["objectId"])
        cam = self._camera()
        objects = []
        for o in self._objects:
            oid = o["objectId"]
            pos = self._position_of(o)
            chain = self._ancestors(oid)
            objects.append({
                **{k: v for k, v in o.items() if k not in ("position", "rotation", "active")},
                "position": pos, "rotation": dict(o["rotation"]),
                "distance": math.dist(cam, (pos["x"], pos["y"], pos["z"])),
                "visible": self._visible({**o, "position": pos}, by_id),
                "parentReceptacles": chain or None,
                "receptacleObjectIds": list(contents.get(oid, [])) if o["receptacle"] else None,
            })
        held = by_id.get(self._held) if self._held else None
        a = self._agent
        return {
            "sceneName": self._scene_name, "objects": objects,
            "agent": {"position": {"x": a["x"], "y": a["y"], "z": a["z"]},
                      "rotation": {"x": 0.0, "y": a["rotation"], "z": 0.0}, "cameraHorizon": a["horizon"]},
            "inventoryObjects": [{"objectId": held["objectId"], "objectType": held["objectType"]}] if held else [],
            "lastAction": action, "lastActionSuccess": ok, "errorMessage": err, "actionReturn": ret,
        }

    # --- actions ------------------------------------------------------------------------
    def _apply(self, a: Mapping[str, Any]) -> tuple[bool, str, Any]:
        name = a.get("action")
        if name in ("Initialize", "Pass"):
            self._grid_size = float(a.get("gridSize", self._grid_size))
            return True, "", None
        if name == "GetReachablePositions":
            return True, "", [{"x": x, "y": AGENT_Y, "z": z} for x, z in self._grid]
        if name == "SetObjectToggles":
            for t in a["objectToggles"]:
                for o in self._objects:
                    if o["objectType"] == t["objectType"] and o["toggleable"]:
                        o["isToggled"] = bool(t["isOn"])
            return True, "", None
        if name == "SetStateOfAllObjects":
            if a.get("StateChange") == "CanBeDirty":
                self._dirty_scene = True  # SetObjectPoses moves objects, keeping their state
                for o in self._objects:
                    o["isDirty"] = o["dirtyable"] or o["isDirty"]
            return True, "", None
        if name == "SetObjectPoses":
            self._set_poses(a["objectPoses"])
            return True, "", None
        if name == "TeleportFull":
            return self._teleport(a) + (None,)
        if name in ("RotateLeft", "RotateRight"):
            turn = 90.0 if name == "RotateRight" else -90.0
            self._agent = {**self._agent, "rotation": (float(self._agent["rotation"]) + turn) % 360.0}
            return True, "", None
        if name in ("MoveAhead", "MoveBack", "MoveLeft", "MoveRight"):
            return self._move(name, float(a.get("moveMagnitude", self._grid_size))) + (None,)
        if name == "RotateHand":
            return (True, "", None) if self._held else (False, "nothing in hand to rotate", None)
        if name == "DropHandObject":
            if self._held is None:
                return False, "nothing in hand to drop", None
            o = self._by_id()[self._held]
            o["position"] = {"x": float(self._agent["x"]), "y": 0.0, "z": float(self._agent["z"])}
            self._held = None
            return True, "", None
        by_id = self._by_id()
        oid = a.get("objectId")
        o = by_id.get(oid) if isinstance(oid, str) else None
        if o is None or not o["active"]:
            return False, f"Object ID appears to be invalid: {oid}", None
        visible = self._visible({**o, "position": self._position_of(o)}, by_id)
        need_view = self.obstacles and not visible
        if name == "PickupObject":
            if self._held or not o["pickupable"] or self._in_closed(oid, by_id) or need_view:
                return False, f"cannot pick up {oid}", None
            self._parent[oid] = None
            self._held = oid
            return True, "", None
        if name == "PutObject":
            return self._put(o, a.get("receptacleObjectId"), by_id) + (None,)
        if name in ("OpenObject", "CloseObject"):
            want = name == "OpenObject"
            if not o["openable"] or o["isOpen"] == want or need_view:
                return False, f"{name} failed on {oid}", None
            a_ = self._agent
            if want and self.obstacles and _hash("open", oid, f"{a_['x']:.2f}", f"{a_['z']:.2f}") % 3 == 0:
                return False, "the door would hit the agent (made up)", None
            o["isOpen"] = want
            return True, "", None
        if name in ("ToggleObjectOn", "ToggleObjectOff"):
            want = name == "ToggleObjectOn"
            if (not o["toggleable"] or o["isToggled"] == want or need_view
                    or (want and o["objectType"] == "Microwave" and o["isOpen"])):
                return False, f"{name} failed on {oid}", None
            o["isToggled"] = want
            return True, "", None
        if name == "SliceObject":
            if not o["sliceable"] or o["isSliced"] or oid == self._held or need_view:
                return False, f"cannot slice {oid}", None
            self._slice(o)
            return True, "", None
        if name == "CleanObject":
            if not o["dirtyable"]:
                return False, f"{oid} cannot be cleaned", None
            o["isDirty"] = False
            return True, "", None
        return False, f"the stand-in does not implement {name!r}", None

    def _teleport(self, a: Mapping[str, Any]) -> tuple[bool, str]:
        x, z = float(a["x"]), float(a["z"])
        if self.obstacles:
            point = self._grid_point(x, z, 0.01)
            if point is None or self._blocked(point):
                return False, "the position is not reachable (made-up obstacle)"
            if not HORIZON_RANGE[0] <= float(a.get("horizon", 0.0)) <= HORIZON_RANGE[1]:
                return False, "horizon out of range"
        self._agent = {"x": a["x"], "y": a.get("y", AGENT_Y), "z": a["z"],
                       "rotation": float(a.get("rotation", 0.0)) % 360.0, "horizon": a.get("horizon", 0.0)}
        return True, ""

    def _move(self, name: str, magnitude: float) -> tuple[bool, str]:
        r = math.radians(float(self._agent["rotation"]))
        ahead, right = (math.sin(r), math.cos(r)), (math.cos(r), -math.sin(r))
        d = {"MoveAhead": ahead, "MoveBack": (-ahead[0], -ahead[1]), "MoveRight": right,
             "MoveLeft": (-right[0], -right[1])}[name]
        x = float(self._agent["x"]) + magnitude * d[0]
        z = float(self._agent["z"]) + magnitude * d[1]
        point = self._grid_point(x, z, 0.1)
        if point is None or self._blocked(point):
            return False, f"{name} blocked"
        self._agent = {**self._agent, "x": point[0], "z": point[1]}
        return True, ""

    def _put(self, o: dict[str, Any], recep_id: Any, by_id: Mapping[str, dict[str, Any]]) -> tuple[bool, str]:
        consts = alfred_constants()
        r = by_id.get(recep_id) if isinstance(recep_id, str) else None
        oid = o["objectId"]
        if self._held != oid or r is None or not r["receptacle"] or not r["active"] or r["objectId"] == oid:
            return False, "cannot put"
        if r["openable"] and not r["isOpen"]:
            return False, f"{recep_id} is closed"
        if r["objectType"] in consts.movable_receptacles and \
                o["objectType"] not in consts.val_receptacle_objects.get(r["objectType"], ()):
            return False, f"{o['objectType']} does not fit in {r['objectType']}"
        if self.obstacles:
            if not self._visible({**r, "position": self._position_of(r)}, by_id):
                return False, f"{recep_id} is not visible"
            a = self._agent
            if _hash("put", oid, recep_id, f"{a['x']:.2f}", f"{a['z']:.2f}", f"{float(a['rotation']):.0f}",
                     f"{float(a['horizon']):.0f}") % 3 == 0:
                return False, "no free spot on the receptacle from here (made up)"
        rx, ry, rz = _pos(r)
        o["position"] = {"x": rx, "y": ry + 0.05, "z": rz}
        self._parent[oid] = recep_id
        self._held = None
        return True, ""

    def _slice(self, o: dict[str, Any]) -> None:
        o["isSliced"] = True
        o["active"] = False  # the whole stays listed (isSliced) but can no longer be seen or used
        piece_type = SLICED_TYPE[o["objectType"]]
        suffix = "Cracked" if piece_type.endswith("Cracked") else "Slice"
        x, y, z = _pos(o)
        for k in range(PIECES.get(o["objectType"], 3)):
            piece = self._add(f"{o['objectId']}|{piece_type}_{k}", piece_type, name=f"{o['name']}_{suffix}_{k + 1}",
                              position={"x": x + 0.02 * k, "y": y, "z": z}, movable=True)
            piece["sliceable"] = False
            self._parent[piece["objectId"]] = self._parent.get(o["objectId"])
