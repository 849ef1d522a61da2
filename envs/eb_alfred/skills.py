"""EB-ALFRED's skill language: the action strings, their parsing, and scene names.

Facts (not code) taken from the public EmbodiedBench repository, first public
release (commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04):

- ``embodiedbench/envs/eb_alfred/utils.py``: the object lists below, in order.
- ``embodiedbench/envs/eb_alfred/EBAlfEnv.py`` ``get_global_action_space``: the
  global list is ``find a X`` for the 80 findable objects, ``pick up the X`` for
  the 53 pickable ones, ``put down the object in hand``, ``drop the object in
  hand``, ``open the X`` / ``close the X`` (7), ``turn on the X`` / ``turn off
  the X`` (4), ``slice the X`` (5): 162 actions.
- ``EBAlfEnv.generate_additional_action_space``: types with two or more
  instances in a scene get instance names (the first instance keeps the bare
  type name, the others are ``Type_2``, ``Type_3`` ...), for receptacles and for
  non-receptacle pickupables; the per-scene list appends ``find a <name>`` for
  the extra receptacle names (sorted as strings), ``open``/``close`` for those
  whose type is openable, then ``find a <name>`` for the extra pickable names.
- ``thor_connector.py``: object names are matched case-insensitively; a sliced
  object keeps its parent's name (``Apple`` addresses an ``AppleSliced`` piece
  once something was sliced), and ``Sink`` / ``Bathtub`` address the basins
  (AI2-THOR ids ``Sink|...|SinkBasin``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from envs.household import World

# --- EB-ALFRED's object lists (EmbodiedBench embodiedbench/envs/eb_alfred/utils.py) --------
#: ``alfred_objs``: targets of ``find a X`` (80).
FIND_OBJECTS: tuple[str, ...] = (
    "Cart", "Potato", "Faucet", "Ottoman", "CoffeeMachine", "Candle", "CD", "Pan", "Watch",
    "HandTowel", "SprayBottle", "BaseballBat", "CellPhone", "Kettle", "Mug", "StoveBurner", "Bowl",
    "Toilet", "DiningTable", "Spoon", "TissueBox", "Shelf", "Apple", "TennisRacket", "SoapBar",
    "Cloth", "Plunger", "FloorLamp", "ToiletPaperHanger", "CoffeeTable", "Spatula", "Plate", "Bed",
    "Glassbottle", "Knife", "Tomato", "ButterKnife", "Dresser", "Microwave", "CounterTop",
    "GarbageCan", "WateringCan", "Vase", "ArmChair", "Safe", "KeyChain", "Pot", "Pen", "Cabinet",
    "Desk", "Newspaper", "Drawer", "Sofa", "Bread", "Book", "Lettuce", "CreditCard", "AlarmClock",
    "ToiletPaper", "SideTable", "Fork", "Box", "Egg", "DeskLamp", "Ladle", "WineBottle", "Pencil",
    "Laptop", "RemoteControl", "BasketBall", "DishSponge", "Cup", "SaltShaker", "PepperShaker",
    "Pillow", "Bathtub", "SoapBottle", "Statue", "Fridge", "Sink",
)
#: ``alfred_pick_obj``: targets of ``pick up the X`` (53).
PICKUP_OBJECTS: tuple[str, ...] = (
    "KeyChain", "Potato", "Pot", "Pen", "Candle", "CD", "Pan", "Watch", "Newspaper", "HandTowel",
    "SprayBottle", "BaseballBat", "Bread", "CellPhone", "Book", "Lettuce", "CreditCard", "Mug",
    "AlarmClock", "Kettle", "ToiletPaper", "Bowl", "Fork", "Box", "Egg", "Spoon", "TissueBox",
    "Apple", "TennisRacket", "Ladle", "WineBottle", "Cloth", "Plunger", "SoapBar", "Pencil",
    "Laptop", "RemoteControl", "BasketBall", "DishSponge", "Cup", "Spatula", "SaltShaker",
    "Plate", "PepperShaker", "Pillow", "Glassbottle", "SoapBottle", "Knife", "Statue", "Tomato",
    "ButterKnife", "WateringCan", "Vase",
)
#: ``alfred_open_obj``: targets of ``open the X`` / ``close the X`` (7).
OPEN_OBJECTS: tuple[str, ...] = ("Safe", "Laptop", "Fridge", "Box", "Microwave", "Cabinet", "Drawer")
#: ``alfred_toggle_obj``: targets of ``turn on the X`` / ``turn off the X`` (4).
TOGGLE_OBJECTS: tuple[str, ...] = ("Microwave", "DeskLamp", "FloorLamp", "Faucet")
#: ``alfred_slice_obj``: targets of ``slice the X`` (5).
SLICE_OBJECTS: tuple[str, ...] = ("Potato", "Lettuce", "Tomato", "Apple", "Bread")

#: The two object-free actions (EBAlfEnv.py ``get_global_action_space``).
PUT_DOWN = "put down the object in hand"
DROP = "drop the object in hand"

#: Size of the global action list (EmbodiedBench paper / EBAlfEnv.py: 80+53+2+14+8+5).
NUM_GLOBAL_ACTIONS = 162

#: Skill names that address a basin (thor_connector.py: ``Sink`` matches the
#: ``Sink|...|SinkBasin`` id prefix and ``put`` tries the basin first).
BASIN_ALIASES: Mapping[str, str] = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}
#: Sliceable skill name -> the engine's piece type (ALFRED's ``<Type>Sliced``).
SLICED_PIECE: Mapping[str, str] = {o: f"{o}Sliced" for o in SLICE_OBJECTS}

# --- verbs ----------------------------------------------------------------------------------
FIND, PICK_UP, PUT, DROP_VERB = "find", "pick_up", "put_down", "drop"
OPEN, CLOSE, TURN_ON, TURN_OFF, SLICE = "open", "close", "turn_on", "turn_off", "slice"
#: verb -> how the action string is written ({} is the object name).
VERB_TEMPLATES: Mapping[str, str] = {
    FIND: "find a {}", PICK_UP: "pick up the {}", PUT: PUT_DOWN, DROP_VERB: DROP,
    OPEN: "open the {}", CLOSE: "close the {}", TURN_ON: "turn on the {}",
    TURN_OFF: "turn off the {}", SLICE: "slice the {}",
}

_NAME = r"([A-Za-z]+(?:_\d+)?)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (FIND, re.compile(rf"find (?:a|an) {_NAME}", re.I)),
    (PICK_UP, re.compile(rf"pick up the {_NAME}", re.I)),
    (PUT, re.compile(r"put down the object in hand", re.I)),
    (DROP_VERB, re.compile(r"drop the object in hand", re.I)),
    (OPEN, re.compile(rf"open the {_NAME}", re.I)),
    (CLOSE, re.compile(rf"close the {_NAME}", re.I)),
    (TURN_ON, re.compile(rf"turn on the {_NAME}", re.I)),
    (TURN_OFF, re.compile(rf"turn off the {_NAME}", re.I)),
    (SLICE, re.compile(rf"slice the {_NAME}", re.I)),
)


@dataclass(frozen=True)
class Skill:
    """One parsed action: a verb and (except put down / drop) an object name as written."""

    verb: str
    target: str | None = None

    @property
    def text(self) -> str:
        """The canonical action string."""
        template = VERB_TEMPLATES[self.verb]
        return template.format(self.target) if self.target is not None else template


def parse_skill(text: str) -> Skill | None:
    """Parse an action string (whitespace- and case-tolerant, trailing '.' ignored).

    Returns None for anything that is not one of the nine skill forms. Whether the
    object exists in the scene is :class:`SceneVocabulary`'s question.
    """
    if not isinstance(text, str):
        return None
    norm = " ".join(text.strip().rstrip(".").split())
    for verb, pattern in _PATTERNS:
        m = pattern.fullmatch(norm)
        if m:
            return Skill(verb, m.group(1) if m.groups() else None)
    return None


def global_actions() -> tuple[str, ...]:
    """EB-ALFRED's 162 global actions, in EBAlfEnv.py's order."""
    actions = [f"find a {o}" for o in FIND_OBJECTS]
    actions += [f"pick up the {o}" for o in PICKUP_OBJECTS]
    actions += [PUT_DOWN, DROP]
    for o in OPEN_OBJECTS:
        actions += [f"open the {o}", f"close the {o}"]
    for o in TOGGLE_OBJECTS:
        actions += [f"turn on the {o}", f"turn off the {o}"]
    actions += [f"slice the {o}" for o in SLICE_OBJECTS]
    return tuple(actions)


def split_instance(name: str) -> tuple[str, int]:
    """``"Cabinet_2" -> ("Cabinet", 2)``; ``"Cabinet" -> ("Cabinet", 1)``."""
    base, sep, num = name.rpartition("_")
    if sep and num.isdigit() and base:
        return base, int(num)
    return name, 1


def _id_order(obj_id: str) -> tuple[str, int]:
    return split_instance(obj_id)


class SceneVocabulary:
    """The skill-language names of one scene, fixed when an episode starts.

    Instance names (EBAlfEnv.py ``generate_additional_action_space``, lines 146-212): for
    each type with two or more receptacle instances, or two or more non-receptacle
    pickupable instances, the k-th instance is named ``Type`` (k=1) or ``Type_k``. The
    order is the household engine's id order (``Type_<n>``); a world rebuilt from
    AI2-THOR metadata (backend ``thor``: ids ``Type|x|y|z``) keeps the metadata order, as
    the original reads ``event.metadata['objects']``.
    """

    def __init__(self, world: World) -> None:
        by_type: dict[str, list[str]] = {}
        extra_recep: list[str] = []
        extra_pick: list[str] = []
        for oid, o in world.objects.items():
            if o.receptacle or o.pickupable:
                by_type.setdefault(o.type, []).append(oid)
        self.instance_ids: dict[str, str] = {}
        for otype, ids in by_type.items():
            if len(ids) < 2:
                continue
            if not any("|" in oid for oid in ids):
                ids = sorted(ids, key=_id_order)
            receptacle = world.objects[ids[0]].receptacle
            for k, oid in enumerate(ids, start=1):
                name = otype if k == 1 else f"{otype}_{k}"
                self.instance_ids[name] = oid
                if k > 1:
                    (extra_recep if receptacle else extra_pick).append(name)
        self.id_names: dict[str, str] = {v: k for k, v in self.instance_ids.items()}
        self._casefold = {k.casefold(): k for k in self.instance_ids}
        extra_recep = sorted(set(extra_recep))
        extra_pick = sorted(set(extra_pick))
        actions = list(global_actions())
        actions += [f"find a {n}" for n in extra_recep]
        for n in extra_recep:
            if split_instance(n)[0] in OPEN_OBJECTS:
                actions += [f"open the {n}", f"close the {n}"]
        actions += [f"find a {n}" for n in extra_pick if split_instance(n)[0] in PICKUP_OBJECTS]
        #: the per-scene numbered action list (index = action id).
        self.actions: tuple[str, ...] = tuple(actions)
        self._action_set = frozenset(a.casefold() for a in actions)

    def instance(self, name: str) -> str | None:
        """The engine id an instance name addresses (``Cabinet_2``, or a bare
        ``Cabinet`` when the scene has several), else None."""
        key = self._casefold.get(name.casefold())
        return self.instance_ids[key] if key is not None else None

    def is_listed(self, action: str) -> bool:
        """True if ``action`` (any case) is in this scene's action list."""
        return " ".join(action.strip().rstrip(".").split()).casefold() in self._action_set

    def display_name(self, world: World, obj_id: str) -> str:
        """The name a planner would use for an engine id (feedback text)."""
        if obj_id in self.id_names:
            return self.id_names[obj_id]
        otype = world.objects[obj_id].type if obj_id in world.objects else split_instance(obj_id)[0]
        for name, basin in BASIN_ALIASES.items():
            if otype == basin:
                return name
        for name, piece in SLICED_PIECE.items():
            if otype == piece:
                return name
        return otype


def known_names() -> frozenset[str]:
    """Every object name of the global list (casefolded)."""
    names: Iterable[str] = (*FIND_OBJECTS, *PICKUP_OBJECTS, *OPEN_OBJECTS, *TOGGLE_OBJECTS, *SLICE_OBJECTS)
    return frozenset(n.casefold() for n in names)


def numbered(actions: Sequence[str]) -> str:
    """The list as EB-ALFRED's prompt writes it: ``action id 0: find a Cart, ...``."""
    return ", ".join(f"action id {i}: {a}" for i, a in enumerate(actions))
