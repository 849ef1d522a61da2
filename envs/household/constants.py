"""ALFRED's protocol constants, shipped as package data.

``envs/household/data/`` holds what the engine reads of ALFRED's ``gen/constants.py``
(``constants.json``) and the per-floor-plan layout files (``layouts/``), generated from
alfworld==0.4.2 (which ships ALFRED's ``gen/``) by ``scripts/gen_household_data.py``; a test
regenerates them and compares byte for byte. The core install therefore needs neither
alfworld nor TextWorld's compiled dependencies. The few facts ALFRED keeps in code rather
than in ``constants.py`` are written here once, each with its source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

#: The seven ALFRED task types (ALFRED gen/constants.py ``GOALS``; env/tasks.py classes).
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "pick_two_obj_and_place",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_and_place_with_movable_recep",
)

#: Receptacles whose wrapper rule changes object state (ALFRED env/thor_env.py
#: ``update_states``): toggling a Faucet on cleans what is in the SinkBasin,
#: toggling a Microwave on heats its contents, closing a Fridge cools its contents.
CLEAN_SOURCE, CLEAN_BASIN = "Faucet", "SinkBasin"
HEAT_SOURCE = "Microwave"
COOL_SOURCE = "Fridge"

#: Fixed receptacles that hold only what fits them, where the engine keeps ALFRED's
#: VAL_RECEPTACLE_OBJECTS list as the put rule (a coffee machine takes a Mug, a towel
#: holder a towel). Every other fixed receptacle accepts any held object, as AI2-THOR's
#: forced ``PutObject`` does (ALFRED env/thor_env.py ``put``/``to_thor_api_exec`` sends
#: ``forceAction=True``; EmbodiedBench thor_connector.py:411 too): the json_2.1.0 experts
#: leave a Knife in a Fridge, Cabinet or GarbageCan and a ButterKnife in a Microwave, which
#: VAL_RECEPTACLE_OBJECTS does not list. The whitelist decides ALFRED's *goal* receptacles
#: and where scenes are sampled, not what the simulator accepts. Movable receptacles
#: (Bowl, Cup, Mug, Pan, Plate, Pot, Box) also keep the list: their size limits what fits.
SIZED_RECEPTACLES: frozenset[str] = frozenset({
    "CoffeeMachine", "Toaster", "ToiletPaperHanger", "HandTowelHolder", "TowelHolder",
})

#: Held object types that can slice (ALFRED's sliced tasks use Knife or
#: ButterKnife; AI2-THOR's SliceObject requires a knife in hand).
KNIFE_TYPES: frozenset[str] = frozenset({"Knife", "ButterKnife"})

#: Piece type produced by slicing, per sliceable type (AI2-THOR 2.1 object
#: types; ALFRED gen/constants.py ``OBJ_PARENTS`` maps the ``*Sliced`` types
#: back to their parents). An Egg "slices" into an EggCracked in AI2-THOR.
SLICED_TYPE: Mapping[str, str] = {
    "Apple": "AppleSliced",
    "Bread": "BreadSliced",
    "Egg": "EggCracked",
    "Lettuce": "LettuceSliced",
    "Potato": "PotatoSliced",
    "Tomato": "TomatoSliced",
}

#: Pieces created by one slice. AI2-THOR spawns several pieces whose count
#: varies by model; ALFRED's scoring only needs "at least one" (two for
#: pick_two_obj_and_place), so a fixed small count keeps worlds compact.
#: An Egg cracks into a single EggCracked.
SLICE_PIECES: Mapping[str, int] = {
    "Apple": 3,
    "Bread": 3,
    "Egg": 1,
    "Lettuce": 3,
    "Potato": 3,
    "Tomato": 3,
}


@dataclass(frozen=True)
class AlfredConstants:
    """The subset of ALFRED's ``gen/constants.py`` the engine uses."""

    objects: tuple[str, ...]
    receptacles: frozenset[str]
    movable_receptacles: frozenset[str]
    openable: frozenset[str]
    #: receptacle type -> object types ALFRED allows in it.
    val_receptacle_objects: Mapping[str, frozenset[str]]
    #: 'Heatable', 'Coolable', 'Cleanable', 'Toggleable', 'Sliceable' -> types.
    val_action_objects: Mapping[str, frozenset[str]]
    #: task type -> room types where ALFRED generates it.
    goals_valid: Mapping[str, frozenset[str]]
    #: room type -> floor-plan numbers.
    scene_type: Mapping[str, tuple[int, ...]]
    #: ALFRED's cap on duplicate instances when randomising a scene.
    max_num_of_obj_instances: int
    #: ALFRED's cap on instances of the pickup target.
    pickup_repeat_max: int
    #: folder of ``FloorPlan<N>-objects.json`` / ``-openable.json``.
    layouts_dir: Path
    #: every shipped constant by its gen/constants.py name (e.g. ``AGENT_STEP_SIZE``).
    raw: Mapping[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pickupable(self) -> frozenset[str]:
        """Types ALFRED places in receptacles: the union of VAL_RECEPTACLE_OBJECTS' values."""
        return frozenset().union(*self.val_receptacle_objects.values())

    def accepts(self, receptacle_type: str, obj_type: str) -> bool:
        """Whether a put of ``obj_type`` into ``receptacle_type`` succeeds (see
        :data:`SIZED_RECEPTACLES`): any object in a fixed receptacle, else the whitelist."""
        if obj_type in self.val_receptacle_objects.get(receptacle_type, ()):
            return True
        return (receptacle_type in self.val_receptacle_objects and receptacle_type not in self.movable_receptacles
                and receptacle_type not in SIZED_RECEPTACLES)

    @property
    def toggleable(self) -> frozenset[str]:
        """Lamps (VAL_ACTION_OBJECTS['Toggleable']) plus the Faucet and Microwave
        that ALFRED's wrapper rules toggle (env/thor_env.py ``update_states``)."""
        return self.val_action_objects["Toggleable"] | {CLEAN_SOURCE, HEAT_SOURCE}

    @property
    def sliceable(self) -> frozenset[str]:
        return self.val_action_objects["Sliceable"]


#: The household engine's package data (see the module docstring).
DATA_DIR = Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=1)
def alfred_constants() -> AlfredConstants:
    """ALFRED's constants from the shipped ``data/constants.json`` (cached)."""
    mod = json.loads((DATA_DIR / "constants.json").read_text(encoding="utf-8"))
    return AlfredConstants(
        objects=tuple(mod["OBJECTS"]),
        receptacles=frozenset(mod["RECEPTACLES"]),
        movable_receptacles=frozenset(mod["MOVABLE_RECEPTACLES"]),
        openable=frozenset(mod["OPENABLE_CLASS_LIST"]),
        val_receptacle_objects={k: frozenset(v) for k, v in mod["VAL_RECEPTACLE_OBJECTS"].items()},
        val_action_objects={k: frozenset(v) for k, v in mod["VAL_ACTION_OBJECTS"].items()},
        goals_valid={k: frozenset(v) for k, v in mod["GOALS_VALID"].items()},
        scene_type={k: tuple(v) for k, v in mod["SCENE_TYPE"].items()},
        max_num_of_obj_instances=int(mod["MAX_NUM_OF_OBJ_INSTANCES"]),
        pickup_repeat_max=int(mod["PICKUP_REPEAT_MAX"]),
        layouts_dir=DATA_DIR / "layouts",
        raw=mod,
    )
