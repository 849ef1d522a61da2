"""What an ALFRED trajectory file tells about its start scene, for the household engine.

ALFRED (and EmbodiedBench, which reuses ALFRED's files) restores a scene in
AI2-THOR from ``scene.object_poses`` / ``object_toggles`` / ``dirty_and_empty``
/ ``init_action``; receptacle membership is left to AI2-THOR's physics and is
not in the file. Without a physics engine the household backend restores what
the file does tell (:func:`scene_facts`):

- **instance counts**: ``object_poses`` lists every movable object, one entry per
  instance (repeated ``objectName`` = several instances); a pickupable type the
  list lacks has no instance (AI2-THOR's ``SetObjectPoses`` keeps only the
  listed movable objects). Types outside ALFRED's receptacle whitelist
  (ScrubBrush, PaperTowelRoll, TeddyBear, Boots) have no household counterpart.
- **start receptacles of the task objects**: for the first ``PickupObject`` /
  ``SliceObject`` of each object in ``plan.high_pddl``, the receptacle it stood
  in: ``coordinateReceptacleObjectId`` when the planner recorded it (its
  coordinates are 4 x the AI2-THOR position, ordered x, z, y), else the nearest
  instance of the type the preceding ``GotoLocation`` names, else the nearest
  receptacle of any type but a basin or an openable (physics put it there, so
  ALFRED's whitelist does not apply: a KeyChain can lie on a TVStand; an object
  beside a sink is on the counter, not in the basin: :func:`_fallback_types`). Instances are matched to the floor plan's
  receptacle ids (``Type|x|y|z``) by distance.
- **toggles** (``object_toggles``: ``isOn`` per lamp type) and the
  **dirty/empty** flag (ALFRED makes every dirtyable object dirty and every
  fillable one empty; no goal condition reads either, so it is recorded only).
- **pieces and nesting**: an object sliced where it lay starts in the receptacle the
  first pickup of one of its pieces records; in a movable-receptacle task whose
  target the expert never picks up, the target starts inside the movable receptacle.
- **openables found open**: those the expert closes or puts into before opening
  (:func:`open_at_start`).
- **the start pose** (``init_action``: x, z, rotation, horizon), the viewpoint of the
  first image, and **its nearest receptacle**: the receptacle whose layout agent
  pose (``-openable.json``) is nearest the ``init_action`` teleport; the agent
  starts facing it.

Everything else (which receptacle each non-task object is in) stays seeded, as
:func:`~envs.household.build.build_world` places it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from envs.household.constants import alfred_constants
from envs.household.scene import floor_plan_inventory, thor_id_type

#: ALFRED ``high_pddl`` ``coordinate*ObjectId`` lists are ``[x, x, z, z, y, y]`` scaled by
#: this factor (ALFRED gen/planner grid: 0.25 m cells, coordinates in cell units).
COORDINATE_SCALE = 4.0


@dataclass(frozen=True)
class StartPlacement:
    """Where one task object starts: its type, its AI2-THOR id, and the static
    receptacle instance (floor-plan id) it stands in."""

    obj_type: str
    thor_id: str
    receptacle_id: str
    #: how the receptacle was found: "recorded" (coordinateReceptacleObjectId),
    #: "goto" (the type of the preceding GotoLocation) or "nearest".
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"obj_type": self.obj_type, "thor_id": self.thor_id,
                "receptacle_id": self.receptacle_id, "source": self.source}


@dataclass(frozen=True)
class SceneFacts:
    """The restorable facts of one trajectory's start scene (JSON via :meth:`to_dict`)."""

    floor_plan: int
    #: pickupable type -> number of instances (types absent from the map: none).
    counts: Mapping[str, int]
    #: task objects in the order the expert plan first handles them.
    starts: tuple[StartPlacement, ...] = ()
    #: toggleable type -> isOn (``object_toggles``).
    toggles: Mapping[str, bool] = field(default_factory=dict)
    dirty_and_empty: bool = False
    #: floor-plan id of the receptacle nearest the start pose, or None.
    start_receptacle: str | None = None
    #: (object type, movable receptacle type): one instance of the first starts inside the
    #: movable receptacle's first task instance.
    nested: tuple[tuple[str, str], ...] = ()
    #: AI2-THOR ids of openables that start open (:func:`open_at_start`).
    open_ids: tuple[str, ...] = ()
    #: ``init_action``'s pose as (x, z, rotation, horizon), the first frame's viewpoint; None if absent.
    start_pose: tuple[float, float, float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "floor_plan": self.floor_plan,
            "counts": dict(sorted(self.counts.items())),
            "starts": [s.to_dict() for s in self.starts],
            "toggles": dict(sorted(self.toggles.items())),
            "dirty_and_empty": self.dirty_and_empty,
            "start_receptacle": self.start_receptacle,
            "nested": [list(n) for n in self.nested],
            "open_ids": list(self.open_ids),
            "start_pose": list(self.start_pose) if self.start_pose is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SceneFacts":
        return cls(
            floor_plan=int(data["floor_plan"]),
            counts={str(k): int(v) for k, v in data["counts"].items()},
            starts=tuple(StartPlacement(**s) for s in data.get("starts", ())),
            toggles={str(k): bool(v) for k, v in data.get("toggles", {}).items()},
            dirty_and_empty=bool(data.get("dirty_and_empty", False)),
            start_receptacle=data.get("start_receptacle"),
            nested=tuple((str(a), str(b)) for a, b in data.get("nested", ())),
            open_ids=tuple(str(k) for k in data.get("open_ids", ())),
            start_pose=(tuple(float(x) for x in data["start_pose"])  # type: ignore[arg-type]
                        if data.get("start_pose") is not None else None),
        )


def id_position(thor_id: str) -> tuple[float, float, float] | None:
    """(x, y, z) encoded in an AI2-THOR id ``Type|x|y|z[...]``; None for a bare type."""
    parts = thor_id.split("|")
    if len(parts) < 4:
        return None
    try:
        return float(parts[1]), float(parts[2]), float(parts[3])
    except ValueError:
        return None


def coordinate_position(coords: Sequence[float]) -> tuple[float, float, float]:
    """(x, y, z) of an ALFRED ``coordinate*ObjectId`` list ``[x, x, z, z, y, y]`` (x 4)."""
    return coords[0] / COORDINATE_SCALE, coords[4] / COORDINATE_SCALE, coords[2] / COORDINATE_SCALE


def _dist(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return math.dist(a, b)


def _nearest(receptacles: Sequence[tuple[str, str]], pos: tuple[float, float, float] | None,
             types: set[str]) -> str | None:
    """The floor-plan id of the nearest receptacle instance of one of ``types``."""
    cands = [(t, k) for t, k in receptacles if t in types]
    if not cands:
        return None
    if pos is None:
        return cands[0][1]

    def key(tk: tuple[str, str]) -> tuple[float, str]:
        p = id_position(tk[1])
        return (_dist(p, pos) if p is not None else math.inf, tk[1])

    return min(cands, key=key)[1]


#: Receptacle types the "nearest" fallback never chooses. Basins: in the 213
#: json_2.1.0 trajectories every object the expert takes out of a SinkBasin or
#: BathtubBasin has its basin recorded (18 of 18), and the 8 unrecorded task objects
#: nearest a basin lie 0.07-0.23 m *above* the basin's point, on the counter beside
#: it (a Cup next to the sink is not in it). Openables: the layouts' openables start
#: closed, and the expert picks these objects up without opening anything.
FALLBACK_EXCLUDED_SUFFIX = "Basin"


def _fallback_types(statics: Sequence[tuple[str, str]]) -> set[str]:
    """Receptacle types the nearest-receptacle fallback may choose (no basin, no openable)."""
    openable = alfred_constants().openable
    return {t for t, _ in statics if not t.endswith(FALLBACK_EXCLUDED_SUFFIX) and t not in openable}


def _type_names() -> dict[str, str]:
    consts = alfred_constants()
    names = set(consts.objects) | set(consts.receptacles)
    return {n.lower(): n for n in names}


def scene_facts(traj: Mapping[str, Any]) -> SceneFacts:
    """The :class:`SceneFacts` of an ALFRED trajectory JSON (``traj_data.json`` /
    ``pp/ann_<k>.json``). ValueError/KeyError for a malformed file."""
    consts = alfred_constants()
    scene = traj["scene"]
    floor_plan = int(scene["scene_num"])
    inv = floor_plan_inventory(floor_plan)
    pickupable = consts.pickupable
    statics = [(t, k) for t, k in inv.receptacles if t not in consts.movable_receptacles]

    counts: dict[str, int] = {}
    for pose in scene.get("object_poses", ()):
        t = str(pose["objectName"]).split("_")[0]
        if t in pickupable:
            counts[t] = counts.get(t, 0) + 1

    names = _type_names()
    starts: list[StartPlacement] = []
    seen: set[str] = set()
    goto_type: str | None = None
    steps = traj["plan"]["high_pddl"]
    for step in steps:
        discrete = step.get("discrete_action", {})
        action = step.get("planner_action", {})
        if discrete.get("action") == "GotoLocation":
            args = discrete.get("args") or [""]
            goto_type = names.get(str(args[0]).lower())
            continue
        if action.get("action") not in ("PickupObject", "SliceObject"):
            continue
        obj_id = str(action.get("objectId", ""))
        if not obj_id or obj_id in seen or len(obj_id.split("|")) != 4:
            continue  # a later handling, or a slice piece ("Type|x|y|z|TypeSliced_k")
        seen.add(obj_id)
        obj_type = thor_id_type(obj_id)
        pos = id_position(obj_id)
        recorded = action.get("coordinateReceptacleObjectId")
        if action.get("action") == "SliceObject" and not recorded:
            # Sliced where it lay: the first pickup of one of its pieces records that receptacle.
            recorded = _piece_receptacle(steps, obj_id)
        recep, source = None, "nearest"
        if recorded and recorded[0] not in consts.movable_receptacles:
            recep = _nearest(statics, coordinate_position(recorded[1]), {recorded[0]})
            source = "recorded"
        if recep is None and goto_type is not None and goto_type in {t for t, _ in statics}:
            recep, source = _nearest(statics, pos, {goto_type}), "goto"
        if recep is None:
            # AI2-THOR's physics, not ALFRED's whitelist, put it there (a KeyChain on a TVStand),
            # but not in a basin nor in a closed openable (see :func:`_fallback_types`).
            recep, source = _nearest(statics, pos, _fallback_types(statics)), "nearest"
        if recep is not None and obj_type in pickupable:
            starts.append(StartPlacement(obj_type, obj_id, recep, source))

    # A movable-receptacle task whose target the expert never picks up: the target starts
    # inside the movable receptacle (the expert carries them together).
    nested: list[tuple[str, str]] = []
    params = traj.get("pddl_params") or {}
    target, mrecep = str(params.get("object_target") or ""), str(params.get("mrecep_target") or "")
    handled = {thor_id_type(k) for k in seen}
    if mrecep and target and target not in handled and mrecep in handled:
        nested.append((target, mrecep))

    toggles = {str(t["objectType"]): bool(t["isOn"]) for t in scene.get("object_toggles", ())}

    start_receptacle = None
    start_pose = None
    init = scene.get("init_action") or {}
    if "x" in init and "z" in init:
        start_pose = (float(init["x"]), float(init["z"]), float(init.get("rotation", 0)),
                      float(init.get("horizon", 0)))
        poses = _layout_poses(floor_plan)
        if poses:
            x, z, rot = float(init["x"]), float(init["z"]), float(init.get("rotation", 0))

            def pose_key(item: tuple[str, Sequence[float]]) -> tuple[float, float, str]:
                px, pz, prot = item[1][0], item[1][1], item[1][2]
                turn = abs((prot - rot + 180) % 360 - 180)
                return (math.hypot(px - x, pz - z), turn, item[0])

            start_receptacle = min(poses.items(), key=pose_key)[0]

    return SceneFacts(floor_plan, counts, tuple(starts), toggles, bool(scene.get("dirty_and_empty", False)),
                      start_receptacle, tuple(nested), open_at_start(traj), start_pose)


def open_at_start(traj: Mapping[str, Any]) -> tuple[str, ...]:
    """AI2-THOR ids of the openables the expert's ``plan.low_actions`` found open.

    An openable whose first use in the AI2-THOR call sequence is ``CloseObject``, or
    a ``PutObject`` into it, was open in the start scene (the trajectories put into
    Boxes of FloorPlan214 without opening them); one first opened was closed. Openables
    the expert never uses keep the engine's default (closed).
    """
    state: dict[str, bool] = {}
    for low in (traj.get("plan") or {}).get("low_actions", ()):
        api = low.get("api_action", {})
        name = api.get("action")
        oid = str(api.get("receptacleObjectId" if name == "PutObject" else "objectId", ""))
        if not oid or oid in state:
            continue
        if name == "OpenObject":
            state[oid] = False
        elif name in ("CloseObject", "PutObject") and thor_id_type(oid) in alfred_constants().openable:
            state[oid] = True
    return tuple(sorted(k for k, was_open in state.items() if was_open))


def _piece_receptacle(steps: Sequence[Mapping[str, Any]], whole_id: str) -> Any:
    """``coordinateReceptacleObjectId`` of the first recorded pickup of a piece of ``whole_id``."""
    for step in steps:
        action = step.get("planner_action", {})
        if (action.get("action") == "PickupObject" and str(action.get("objectId", "")).startswith(whole_id + "|")
                and action.get("coordinateReceptacleObjectId")):
            return action["coordinateReceptacleObjectId"]
    return None


def _layout_poses(floor_plan: int) -> dict[str, Sequence[float]]:
    """Receptacle id -> [x, z, rotation, horizon] agent pose from ``FloorPlan<N>-openable.json``."""
    import json

    path = alfred_constants().layouts_dir / f"FloorPlan{floor_plan}-openable.json"
    with open(path, encoding="utf-8") as fh:
        return {str(k): v for k, v in json.load(fh).items()}
