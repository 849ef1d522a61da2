"""What each of ALFRED's 120 floor plans contains, from the shipped layout files (alfworld's).

``FloorPlan<N>-objects.json`` lists the object types present;
``FloorPlan<N>-openable.json`` lists the static receptacle instances (AI2-THOR
object ids such as ``Cabinet|+00.68|+00.50|-02.20`` or
``Sink|-01.90|+00.97|-01.50|SinkBasin``) with the agent pose that faces each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from envs.household.constants import alfred_constants

#: Floor-plan numbers by room type (ALFRED gen/constants.py ``SCENE_TYPE``):
#: kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430.
ROOM_TYPES: tuple[str, ...] = ("Kitchen", "LivingRoom", "Bedroom", "Bathroom")


def all_floor_plans() -> tuple[int, ...]:
    """The 120 ALFRED floor-plan numbers, ascending."""
    scene_type = alfred_constants().scene_type
    return tuple(sorted(n for room in ROOM_TYPES for n in scene_type[room]))


def room_type(floor_plan: int) -> str:
    """'Kitchen', 'LivingRoom', 'Bedroom' or 'Bathroom'; ValueError for an unknown number."""
    for room, numbers in alfred_constants().scene_type.items():
        if floor_plan in numbers:
            return room
    raise ValueError(
        f"FloorPlan{floor_plan} is not an ALFRED floor plan "
        "(kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430)"
    )


def thor_id_type(thor_id: str) -> str:
    """The object type an AI2-THOR id names: its first field, or its last for
    basins (``Sink|x|y|z|SinkBasin`` -> ``SinkBasin``)."""
    parts = thor_id.split("|")
    return parts[-1] if len(parts) == 5 else parts[0]


@dataclass(frozen=True)
class Inventory:
    """The contents of one floor plan (no placement: that is :func:`build_world`'s job)."""

    floor_plan: int
    room_type: str
    #: every object type listed in ``-objects.json``, sorted.
    object_types: tuple[str, ...]
    #: static receptacle instances as (type, AI2-THOR id), sorted by type then id.
    #: Types present in ``-objects.json`` but without a pose in ``-openable.json``
    #: (e.g. StoveBurner, GarbageCan) get one instance whose id is the bare type.
    receptacles: tuple[tuple[str, str], ...]

    def has(self, obj_type: str) -> bool:
        return obj_type in self.object_types

    def receptacle_count(self, obj_type: str) -> int:
        return sum(1 for t, _ in self.receptacles if t == obj_type)


@lru_cache(maxsize=None)
def floor_plan_inventory(floor_plan: int) -> Inventory:
    """The object types and static receptacle instances of ``FloorPlan<floor_plan>``."""
    room = room_type(floor_plan)
    consts = alfred_constants()
    base = consts.layouts_dir / f"FloorPlan{floor_plan}"
    with open(f"{base}-objects.json", encoding="utf-8") as fh:
        types = sorted(set(json.load(fh)))
    with open(f"{base}-openable.json", encoding="utf-8") as fh:
        openable = json.load(fh)
    static = set(consts.val_receptacle_objects) - consts.movable_receptacles
    instances = {(thor_id_type(k), k) for k in openable}
    with_pose = {t for t, _ in instances}
    for t in types:
        if t in static and t not in with_pose:
            instances.add((t, t))
    type_set = set(types) | with_pose
    return Inventory(
        floor_plan=floor_plan,
        room_type=room,
        object_types=tuple(sorted(type_set)),
        receptacles=tuple(sorted(instances)),
    )
