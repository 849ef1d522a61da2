"""Replay an ALFRED trajectory's expert plan on the household engine, instance by instance.

ALFRED's ``plan.low_actions`` is the exact AI2-THOR call sequence that solved the
task (askforalfred/alfred gen/scripts/generate_trajectories.py records it; every
json_2.1.0 file's plan succeeded in AI2-THOR). Its interactions (OpenObject,
CloseObject, PickupObject, PutObject, SliceObject, ToggleObjectOn/Off) name
AI2-THOR object ids; navigation (MoveAhead, Rotate*, Look*) becomes the engine's
``goto`` of the object acted on. Ids map to engine objects as follows:

- static receptacles: the floor plan's layout id (``Obj.thor_id``);
- task objects: the id the restored scene gave them (``StartPlacement.thor_id``);
- slice pieces ``<whole>|<Type>Sliced_k``: the engine pieces the replayed slice of
  ``<whole>`` created, one per distinct ``k`` in order of first use;
- a Faucet: the engine faucet paired with the SinkBasin closest to its position;
- anything else: the only instance of its type, else the unmapped instance of its
  type nearest the id's position (layout ids), else the first unmapped one.

This is a differential check of the engine's rules against AI2-THOR's outcomes,
not a planner: :func:`replay_low_actions` reports the first refused action.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from envs.household.constants import CLEAN_BASIN, CLEAN_SOURCE
from envs.household.engine import HouseholdEngine
from envs.household.restore import id_position
from envs.household.scene import thor_id_type
from envs.household.world import World

#: AI2-THOR interaction -> engine primitive (navigation and look actions are not interactions).
INTERACTIONS: Mapping[str, str] = {
    "OpenObject": "open", "CloseObject": "close", "PickupObject": "pickup", "PutObject": "put",
    "SliceObject": "slice", "ToggleObjectOn": "toggle_on", "ToggleObjectOff": "toggle_off",
}


@dataclass(frozen=True)
class ReplayResult:
    """``failed_at``: index into the interactions, -1 when every one succeeded."""

    interactions: int
    failed_at: int = -1
    action: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.failed_at < 0


class ThorIdMap:
    """AI2-THOR ids of one trajectory -> engine ids of one world (see the module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.ids: dict[str, str] = {o.thor_id: k for k, o in world.objects.items() if o.thor_id}
        #: whole AI2-THOR id -> engine pieces its replayed slice created.
        self.pieces: dict[str, list[str]] = {}

    def sliced(self, whole_thor_id: str, new_pieces: list[str]) -> None:
        self.pieces[whole_thor_id] = new_pieces

    def engine_id(self, thor_id: str) -> str | None:
        if thor_id in self.ids:
            return self.ids[thor_id]
        parts = thor_id.split("|")
        if len(parts) == 5 and "Sliced" in parts[4]:
            whole = "|".join(parts[:4])
            pieces = [p for p in self.pieces.get(whole, ()) if p not in self.ids.values()]
            if not pieces:
                return None
            self.ids[thor_id] = pieces[0]
            return pieces[0]
        obj_type = thor_id_type(thor_id)
        world = self.world
        if obj_type == CLEAN_SOURCE:
            return self._faucet(thor_id)
        mapped = set(self.ids.values())
        same = [k for k in world.of_type(obj_type) if not world.objects[k].inactive]
        free = [k for k in same if k not in mapped]
        if len(same) == 1:
            choice = same[0]
        elif free:
            pos = id_position(thor_id)

            def dist(k: str) -> float:
                own = world.objects[k].thor_id
                p = id_position(own) if own else None
                return math.dist(p, pos) if p is not None and pos is not None else math.inf

            choice = min(free, key=lambda k: (dist(k), free.index(k)))
        else:
            return None
        self.ids[thor_id] = choice
        return choice


    def _faucet(self, thor_id: str) -> str | None:
        """The engine faucet of the SinkBasin closest to ``thor_id`` (ALFRED's
        ``get_obj_of_type_closest_to_obj('SinkBasin', faucet)``)."""
        world, pos = self.world, id_position(thor_id)
        faucets = world.of_type(CLEAN_SOURCE)
        basins = [k for k in world.of_type(CLEAN_BASIN) if world.objects[k].thor_id]
        if pos is not None and basins:
            basin = min(basins, key=lambda k: math.dist(id_position(world.objects[k].thor_id) or pos, pos))
            paired = [f for f in faucets if world.basins_of(f) == [basin]]
            if paired:
                return paired[0]
        return faucets[0] if faucets else None


def replay_low_actions(world: World, traj: Mapping[str, Any]) -> ReplayResult:
    """Run ``traj["plan"]["low_actions"]``'s interactions on ``world`` (mutated in place)."""
    engine = HouseholdEngine(world)
    ids = ThorIdMap(world)
    steps = [la["api_action"] for la in traj["plan"]["low_actions"] if la["api_action"]["action"] in INTERACTIONS]
    for i, api in enumerate(steps):
        name = api["action"]
        target_thor = api["receptacleObjectId"] if name == "PutObject" else api["objectId"]
        target = ids.engine_id(str(target_thor))
        if target is None:
            return ReplayResult(len(steps), i, f"{name} {target_thor}", "no engine object for this id")
        if world.at != target and not world.is_held(target):
            res = engine.goto(target)
            if not res.ok:
                return ReplayResult(len(steps), i, f"{name} {target_thor}", res.message)
        if name == "PutObject":
            held = ids.engine_id(str(api["objectId"]))
            if held != world.holding:
                return ReplayResult(len(steps), i, f"{name} {api['objectId']}",
                                    f"the engine holds {world.holding}, not {held}")
        before = set(world.objects)
        res = engine.execute(INTERACTIONS[name], target)
        if not res.ok:
            return ReplayResult(len(steps), i, f"{name} {target_thor}", res.message)
        if name == "SliceObject":
            ids.sliced(str(target_thor), [k for k in world.objects if k not in before])
    return ReplayResult(len(steps))
