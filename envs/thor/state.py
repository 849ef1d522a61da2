"""The household World rebuilt from AI2-THOR object metadata, and ALFRED's state marks.

Goal conditions on the AI2-THOR backend are counted by the same
:func:`envs.household.goal_conditions_met` as on the household backend: this
module turns ``event.metadata`` into a :class:`~envs.household.World`.

- objects: ``objectId`` (id), ``objectType`` (type), the capability and state
  flags (``receptacle``, ``openable``/``isOpen``, ``toggleable``/``isToggled``,
  ``sliceable``/``isSliced``, ``pickupable``);
- containment: AI2-THOR lists every receptacle an object is physically in
  (``parentReceptacles``: an Apple in a Bowl on a CounterTop has both); the
  household world stores the innermost one and makes "inside" transitive, which
  gives back the same relation;
- the held object: ``inventoryObjects[0]``;
- ``at`` (what the agent faces): a visible toggled-on object when there is one
  (ALFRED's look-at condition asks for a toggled lamp that is ``visible``),
  else the object the agent last went to;
- cleaned / heated / cooled: ALFRED's wrapper bookkeeping (env/thor_env.py
  ``update_states``), reproduced by :class:`StateMarks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from envs.household import Obj, TaskSpec, World
from envs.thor.thor_env import closest_visible


@dataclass
class StateMarks:
    """ALFRED ``ThorEnv.cleaned_objects`` / ``heated_objects`` / ``cooled_objects``."""

    cleaned: set[str] = field(default_factory=set)
    heated: set[str] = field(default_factory=set)
    cooled: set[str] = field(default_factory=set)

    def update(self, action: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        """After a successful step: Faucet on cleans the contents of the closest visible
        SinkBasin; Microwave on heats the first Microwave's contents; closing a Fridge
        cools the first Fridge's contents (ALFRED env/thor_env.py:161-184 ``update_states``).
        As there, a receptacle whose ``receptacleObjectIds`` is None empties the set
        (:172, :177, :182 union the contents only when they are not None)."""
        if not metadata.get("lastActionSuccess"):
            return
        name, oid = action.get("action"), str(action.get("objectId", ""))
        objects = metadata.get("objects", [])
        if name == "ToggleObjectOn" and "Faucet" in oid:
            basin = closest_visible("SinkBasin", oid, metadata)
            if basin is not None:
                self.cleaned = _joined(self.cleaned, basin)
        elif name == "ToggleObjectOn" and "Microwave" in oid:
            first = next((o for o in objects if o["objectType"] == "Microwave"), None)
            if first is not None:
                self.heated = _joined(self.heated, first)
        elif name == "CloseObject" and "Fridge" in oid:
            first = next((o for o in objects if o["objectType"] == "Fridge"), None)
            if first is not None:
                self.cooled = _joined(self.cooled, first)


def _joined(marked: set[str], receptacle: Mapping[str, Any]) -> set[str]:
    ids = receptacle.get("receptacleObjectIds")
    return marked | set(ids) if ids is not None else set()


def innermost_parent(obj: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> str | None:
    parents = [p for p in (obj.get("parentReceptacles") or []) if p in by_id]
    if not parents:
        return None
    # The innermost receptacle is the one that is itself inside the most others.
    return max(parents, key=lambda p: (len(by_id[p].get("parentReceptacles") or []), p))


def world_from_metadata(metadata: Mapping[str, Any], floor_plan: int, task: TaskSpec | None,
                        marks: StateMarks, at: str | None = None) -> World:
    objects_md = list(metadata.get("objects", []))
    by_id = {o["objectId"]: o for o in objects_md}
    objects: dict[str, Obj] = {}
    for o in objects_md:
        oid = o["objectId"]
        objects[oid] = Obj(
            oid, o["objectType"], innermost_parent(o, by_id),
            receptacle=bool(o.get("receptacle")), openable=bool(o.get("openable")), is_open=bool(o.get("isOpen")),
            toggleable=bool(o.get("toggleable")), is_on=bool(o.get("isToggled")),
            sliceable=bool(o.get("sliceable")), is_sliced=bool(o.get("isSliced")),
            pickupable=bool(o.get("pickupable")), cleaned=oid in marks.cleaned, heated=oid in marks.heated,
            cooled=oid in marks.cooled,
        )
    inventory = metadata.get("inventoryObjects") or []
    holding = inventory[0]["objectId"] if inventory and inventory[0]["objectId"] in objects else None
    if holding is not None:
        objects[holding].parent = None
    lit = next((o["objectId"] for o in objects_md if o.get("toggleable") and o.get("isToggled") and o.get("visible")),
               None)
    face = lit or (at if at in objects else None)
    return World(floor_plan, 0, task, objects, holding=holding, at=face)


def refresh(world: World, fresh: World) -> None:
    """Update ``world`` in place from ``fresh`` (executors keep a reference to ``world``)."""
    world.objects.clear()
    world.objects.update(fresh.objects)
    world.holding, world.at, world.task = fresh.holding, fresh.at, fresh.task
