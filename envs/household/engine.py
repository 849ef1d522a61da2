"""Transition rules: the primitives ALFRED's wrapper applies to AI2-THOR.

Every primitive returns an :class:`ActionResult` and never raises for a
legal-but-failing action (unknown ids included). Reach: the agent can act on
what it faces; an object is in reach when it shares the faced object's
outermost receptacle (the agent at ``CounterTop_1`` reaches the Apple in the
Bowl on it), and a Faucet and its SinkBasin are in reach of each other.

State-changing wrapper rules (ALFRED env/thor_env.py ``update_states``):
toggling a Faucet on cleans everything in its own SinkBasin (``World.basins_of``);
toggling a Microwave on heats everything in it; closing a Fridge cools
everything in it. Placing an object into an already running sink/microwave or
an already closed fridge changes nothing, as in ALFRED.

A Microwave cannot be turned on while open (AI2-THOR refuses ToggleObjectOn on
an open microwave; ALFRED's and EB-ALFRED's gold plans always close it first).
Slicing (AI2-THOR ``SliceObject``; sources as read for ai2thor 2.1.0, whose build
thor-201909061227 ALFRED and EmbodiedBench run):

- AI2-THOR's ``SliceObject`` action checks only that the target is visible, not
  in the agent's hand, and has ``CanBeSliced`` (allenai/ai2thor
  006ea978d1e5c9c90e66a1478c7a9024970d8e5e,
  unity/Assets/Scripts/PhysicsRemoteFPSAgentController.cs ``SliceObject``): no
  knife. The held-knife check is ALFRED's wrapper (askforalfred/alfred
  f91f4c0c96c7a29f33d0557f86b0a21035379b3b env/thor_env.py:449-453,
  ``to_thor_api_exec``), hence ``slice(..., knife_required=True)`` by default and
  ``False`` for callers that send a bare ``SliceObject`` (EB-ALFRED).
- The whole object stays in the metadata with ``isSliced`` set, beside the new
  pieces: ``SliceObject.Slice()`` deactivates only the whole's child objects
  (colliders, meshes), "so we can continue to report back isSliced meta info"
  (allenai/ai2thor 00f4a767a196e561ea26a3cf6731518162d0bae6
  unity/Assets/Scripts/SliceObject.cs:56-70; the same in every stored version,
  the UniqueID-era ones included), and the object list is every active
  ``SimObjPhysics`` (``generateObjectMetadata``, ``FindObjectsOfType``). ALFRED
  reads that entry after a slice (env/reward.py:187-190,
  gen/game_states/game_state_base.py:813-816).
- The whole stays in its receptacle's ``receptacleObjectIds``: containment is
  the receptacle trigger box's ``CurrentlyContains`` list, emptied only by
  ``OnTriggerExit`` (unity/Assets/Scripts/Contains.cs), which Unity does not send
  for a collider deactivated inside the trigger. It keeps its cleaned / heated /
  cooled marks (ALFRED keeps object ids in those sets), so ALFRED's goal checks
  (env/tasks.py, substring selection) still count it; it can no longer be seen,
  reached, picked up or sliced (``Obj.inactive``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from envs.household.constants import (
    CLEAN_SOURCE, COOL_SOURCE, HEAT_SOURCE, KNIFE_TYPES, SLICE_PIECES, SLICED_TYPE,
    alfred_constants,
)
from envs.household.world import Obj, World


@dataclass(frozen=True, slots=True)
class ActionResult:
    """Outcome of one primitive: ``message`` is the failure reason, "" on success."""

    ok: bool
    message: str = ""


OK = ActionResult(True, "")

#: Names of the engine's primitives, in a fixed order.
PRIMITIVES: tuple[str, ...] = (
    "goto", "pickup", "put", "drop", "open", "close", "toggle_on", "toggle_off", "slice",
)


class HouseholdEngine:
    """Applies primitives to ``self.world`` (the live state, mutated in place)."""

    __slots__ = ("world", "_consts")

    def __init__(self, world: World) -> None:
        self.world = world
        self._consts = alfred_constants()

    # --- helpers ----------------------------------------------------------------
    def _lookup(self, obj_id: str) -> tuple[Obj | None, ActionResult | None]:
        o = self.world.objects.get(obj_id)
        if o is None:
            return None, ActionResult(False, f"There is no {obj_id} in this scene.")
        if o.inactive:
            return None, ActionResult(False, f"{obj_id} has been sliced; only its pieces remain.")
        return o, None

    def _mark(self, recep_id: str, attr: str) -> None:
        world = self.world
        for k in world.contents(recep_id, recursive=True):
            setattr(world.objects[k], attr, True)

    # --- primitives ----------------------------------------------------------------
    def goto(self, obj_id: str) -> ActionResult:
        """Face ``obj_id`` (teleport, as EB-ALFRED's ``find``)."""
        o, err = self._lookup(obj_id)
        if err:
            return err
        if self.world.is_held(obj_id):
            return ActionResult(False, f"{obj_id} is in your hand.")
        self.world.at = obj_id
        return OK

    def pickup(self, obj_id: str) -> ActionResult:
        """Pick up a pickupable object in reach, with empty hands, not inside a closed receptacle.
        A movable receptacle's contents come along."""
        o, err = self._lookup(obj_id)
        if err:
            return err
        world = self.world
        if world.holding is not None:
            return ActionResult(False, f"Your hands are full: you are holding {world.holding}.")
        if not o.pickupable:
            return ActionResult(False, f"{obj_id} cannot be picked up.")
        if not self.world.in_reach(obj_id):
            return ActionResult(False, f"{obj_id} is not in reach; go to it first.")
        closed = self.world.closed_container(obj_id)
        if closed is not None:
            return ActionResult(False, f"{obj_id} is inside {closed}, which is closed.")
        root = world.root(obj_id)
        if world.at is not None and (world.at == obj_id or world.is_inside(world.at, obj_id)):
            # The agent keeps facing the place it took the object from.
            world.at = root if root != obj_id else None
        o.parent = None
        world.holding = obj_id
        return OK

    def put(self, recep_id: str, force: bool = False) -> ActionResult:
        """Put the held object into ``recep_id``: open, in reach, and accepted as
        AI2-THOR's forced put accepts it (:meth:`AlfredConstants.accepts`). ``force``
        skips the reach check, as AI2-THOR's ``forceAction`` skips visibility (EB-ALFRED's
        retry on the next-closest instance, thor_connector.py:353-411)."""
        r, err = self._lookup(recep_id)
        if err:
            return err
        world = self.world
        held = world.holding
        if held is None:
            return ActionResult(False, "You are not holding anything.")
        if not r.receptacle:
            return ActionResult(False, f"{recep_id} is not a receptacle.")
        if world.is_held(recep_id):
            return ActionResult(False, f"{recep_id} is in your hand.")
        if not force and not self.world.in_reach(recep_id):
            return ActionResult(False, f"{recep_id} is not in reach; go to it first.")
        if r.openable and not r.is_open:
            return ActionResult(False, f"{recep_id} is closed.")
        closed = self.world.closed_container(recep_id)
        if closed is not None:
            return ActionResult(False, f"{recep_id} is inside {closed}, which is closed.")
        h = world.objects[held]
        if not self._consts.accepts(r.type, h.type):
            return ActionResult(False, f"{h.type} cannot be put in a {r.type}.")
        h.parent = recep_id
        world.holding = None
        return OK

    def drop(self) -> ActionResult:
        """Drop the held object on the floor (ALFRED DropHandObject)."""
        world = self.world
        if world.holding is None:
            return ActionResult(False, "You are not holding anything.")
        world.objects[world.holding].parent = None
        world.holding = None
        return OK

    def _open_close(self, obj_id: str, want_open: bool) -> ActionResult:
        o, err = self._lookup(obj_id)
        if err:
            return err
        verb = "opened" if want_open else "closed"
        if not o.openable:
            return ActionResult(False, f"{obj_id} cannot be {verb}.")
        if self.world.is_held(obj_id):
            return ActionResult(False, f"{obj_id} is in your hand.")
        if not self.world.in_reach(obj_id):
            return ActionResult(False, f"{obj_id} is not in reach; go to it first.")
        if o.is_open == want_open:
            return ActionResult(False, f"{obj_id} is already {'open' if want_open else 'closed'}.")
        closed = self.world.closed_container(obj_id)
        if closed is not None:
            return ActionResult(False, f"{obj_id} is inside {closed}, which is closed.")
        o.is_open = want_open
        if not want_open and o.type == COOL_SOURCE:
            self._mark(obj_id, "cooled")
        return OK

    def open(self, obj_id: str) -> ActionResult:
        """Open an openable object in reach."""
        return self._open_close(obj_id, True)

    def close(self, obj_id: str) -> ActionResult:
        """Close an openable object in reach; closing a Fridge cools its contents."""
        return self._open_close(obj_id, False)

    def _toggle(self, obj_id: str, on: bool) -> ActionResult:
        o, err = self._lookup(obj_id)
        if err:
            return err
        if not o.toggleable:
            return ActionResult(False, f"{obj_id} cannot be turned {'on' if on else 'off'}.")
        if not self.world.in_reach(obj_id):
            return ActionResult(False, f"{obj_id} is not in reach; go to it first.")
        if o.is_on == on:
            return ActionResult(False, f"{obj_id} is already {'on' if on else 'off'}.")
        if on and o.type == HEAT_SOURCE and o.openable and o.is_open:
            return ActionResult(False, f"{obj_id} is open; close it before turning it on.")
        o.is_on = on
        if on:
            if o.type == CLEAN_SOURCE:
                for basin in self.world.basins_of(obj_id):
                    self._mark(basin, "cleaned")
            elif o.type == HEAT_SOURCE:
                self._mark(obj_id, "heated")
        return OK

    def toggle_on(self, obj_id: str) -> ActionResult:
        """Turn on; a Faucet cleans its SinkBasin's contents, a Microwave heats its own."""
        return self._toggle(obj_id, True)

    def toggle_off(self, obj_id: str) -> ActionResult:
        """Turn off."""
        return self._toggle(obj_id, False)

    def slice(self, obj_id: str, knife_required: bool = True) -> ActionResult:
        """Slice a sliceable object in reach (not the held one). ``knife_required``:
        a Knife/ButterKnife must be in hand (ALFRED's wrapper); False is AI2-THOR's
        own ``SliceObject``, which needs none. Its ``<Type>Sliced`` pieces appear
        where it was (new ids, so they are not cleaned/heated/cooled: ALFRED tracks
        those by object id); the whole stays in the state with ``is_sliced`` set,
        its parent and its marks (module docstring)."""
        o, err = self._lookup(obj_id)
        if err:
            return err
        world = self.world
        held = world.holding
        if held == obj_id:
            return ActionResult(False, f"{obj_id} is in your hand.")
        if knife_required and (held is None or world.objects[held].type not in KNIFE_TYPES):
            return ActionResult(False, "You need to hold a Knife or ButterKnife to slice.")
        if not o.sliceable or o.type not in SLICED_TYPE:
            return ActionResult(False, f"{obj_id} cannot be sliced.")
        if not self.world.in_reach(obj_id):
            return ActionResult(False, f"{obj_id} is not in reach; go to it first.")
        closed = self.world.closed_container(obj_id)
        if closed is not None:
            return ActionResult(False, f"{obj_id} is inside {closed}, which is closed.")
        piece_type = SLICED_TYPE[o.type]
        pieces = []
        o.is_sliced = True
        for _ in range(SLICE_PIECES[o.type]):
            pid = world.next_id(piece_type)
            world.objects[pid] = Obj(pid, piece_type, o.parent, is_sliced=True, pickupable=True)
            pieces.append(pid)
        if world.at == obj_id:
            world.at = pieces[0]
        return OK

    # --- dispatch ---------------------------------------------------------------
    def execute(self, primitive: str, obj_id: str | None = None) -> ActionResult:
        """Run a primitive by name (``drop`` takes no object)."""
        fn: Callable[..., ActionResult] | None = getattr(self, primitive, None) if primitive in PRIMITIVES else None
        if fn is None:
            return ActionResult(False, f"Unknown primitive {primitive!r}; expected one of {PRIMITIVES}.")
        if primitive == "drop":
            return fn()
        if obj_id is None:
            return ActionResult(False, f"{primitive} needs an object id.")
        return fn(obj_id)
