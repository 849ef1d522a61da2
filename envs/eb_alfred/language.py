"""Instruction templates for generated episodes, in EB-ALFRED's six styles.

Written for this harness (not copied from EB-ALFRED's annotations). The styles
mirror what each EB-ALFRED subset tests:

- ``base``: a plain ALFRED-like command.
- ``common_sense``: objects named by what they are for ("something to drink coffee from").
- ``complex_instruction``: the command wrapped in an irrelevant or distracting clause.
- ``spatial``: objects named by where they are ("the mug in the cabinet").
- ``visual_appearance``: objects named by how they look ("the red round fruit").
- ``long_horizon``: the command spelled out as an ordered list of steps.
"""

from __future__ import annotations

import random
import re
from typing import Mapping

from envs.household import TaskSpec, World

#: Words for types whose CamelCase split reads badly.
_WORDS: Mapping[str, str] = {
    "CD": "CD", "SinkBasin": "sink", "BathtubBasin": "bathtub", "Glassbottle": "glass bottle",
    "CounterTop": "counter", "GarbageCan": "trash can", "TVStand": "TV stand", "ArmChair": "armchair",
    "KeyChain": "key chain", "CellPhone": "cell phone", "RemoteControl": "remote control",
    "BasketBall": "basketball", "SoapBar": "bar of soap", "ToiletPaper": "toilet paper roll",
    "StoveBurner": "stove burner", "DiningTable": "dining table", "CoffeeTable": "coffee table",
}

#: What things are for (common_sense style).
_PURPOSE: Mapping[str, str] = {
    "Apple": "a fruit that keeps the doctor away", "Bread": "something you make toast from",
    "Egg": "something a hen lays", "Lettuce": "the leafy base of a salad", "Potato": "the vegetable fries are made from",
    "Tomato": "the red fruit in ketchup", "Mug": "something to drink coffee from", "Cup": "something to drink water from",
    "Bowl": "something to eat cereal from", "Plate": "something to serve dinner on", "Pan": "something to fry eggs in",
    "Pot": "something to boil soup in", "Kettle": "something to boil water in", "Knife": "something sharp for cutting",
    "ButterKnife": "a blunt knife for spreading butter", "Fork": "something to eat spaghetti with",
    "Spoon": "something to eat soup with", "Ladle": "something for serving soup", "Spatula": "something to flip pancakes with",
    "DishSponge": "something to scrub dishes with", "SoapBar": "something to wash your hands with",
    "SoapBottle": "a bottle of liquid soap", "SprayBottle": "a bottle for spraying cleaner", "Cloth": "a rag for wiping",
    "HandTowel": "a small towel for drying hands", "ToiletPaper": "what you need in the bathroom",
    "Plunger": "the tool for unclogging a toilet", "TissueBox": "a box of tissues for a runny nose",
    "Candle": "something that gives light when lit", "Book": "something to read", "Newspaper": "today's news on paper",
    "Pen": "something to sign a letter with", "Pencil": "something to sketch with", "CD": "a disc that holds music",
    "CellPhone": "something to make calls with", "CreditCard": "something to pay with", "KeyChain": "the ring holding your keys",
    "RemoteControl": "the device for changing TV channels", "Laptop": "a portable computer", "Watch": "something that tells the time on your wrist",
    "AlarmClock": "something that wakes you up", "Pillow": "something soft to rest your head on",
    "BaseballBat": "something to hit a baseball with", "BasketBall": "a ball for shooting hoops",
    "TennisRacket": "something to hit a tennis ball with", "Box": "a cardboard container", "Vase": "something to hold flowers",
    "Statue": "a small decorative figure", "WateringCan": "something to water plants with",
    "WineBottle": "a bottle of wine", "Glassbottle": "a glass container for drinks", "SaltShaker": "the shaker of salt",
    "PepperShaker": "the shaker of pepper",
    # receptacles
    "Fridge": "the appliance that keeps food cold", "Microwave": "the appliance that reheats leftovers",
    "SinkBasin": "the place where you wash dishes", "BathtubBasin": "the place where you take a bath",
    "CounterTop": "the kitchen work surface", "DiningTable": "the table where meals are eaten",
    "CoffeeTable": "the low table in front of the sofa", "SideTable": "the small table beside the bed or sofa",
    "GarbageCan": "the place for rubbish", "Cabinet": "the cupboard", "Drawer": "the drawer",
    "Shelf": "the shelf", "Desk": "the place where you work or study", "Dresser": "the chest of drawers",
    "Sofa": "the couch", "ArmChair": "the comfy chair with arms", "Bed": "the place where you sleep",
    "Toilet": "the toilet", "Ottoman": "the footrest", "Safe": "the locked box for valuables",
    "CoffeeMachine": "the machine that brews coffee", "StoveBurner": "the stove", "Cart": "the rolling cart",
    "DeskLamp": "the small lamp on the desk", "FloorLamp": "the tall lamp standing on the floor",
}

#: What things look like (visual_appearance style).
_LOOK: Mapping[str, str] = {
    "Apple": "round red fruit", "Bread": "brown loaf", "Egg": "small white oval", "Lettuce": "green leafy head",
    "Potato": "lumpy brown tuber", "Tomato": "round red vegetable", "Mug": "handled ceramic cup", "Cup": "small clear cup",
    "Bowl": "round open dish", "Plate": "flat round dish", "Pan": "flat black pan", "Pot": "deep metal pot",
    "Kettle": "spouted metal kettle", "Knife": "long silver blade", "ButterKnife": "short silver blade",
    "Fork": "silver pronged utensil", "Spoon": "small silver scoop", "Ladle": "long-handled scoop",
    "Spatula": "flat-headed utensil", "DishSponge": "yellow rectangular sponge", "SoapBar": "small white bar",
    "SoapBottle": "pump-topped bottle", "SprayBottle": "bottle with a trigger", "Cloth": "folded piece of fabric",
    "HandTowel": "small folded towel", "ToiletPaper": "white paper roll", "Plunger": "rubber-cupped stick",
    "TissueBox": "square box with a tissue poking out", "Candle": "white wax cylinder", "Book": "thick bound volume",
    "Newspaper": "folded grey sheets", "Pen": "slim ink writer", "Pencil": "thin yellow stick", "CD": "shiny flat disc",
    "CellPhone": "small black slab", "CreditCard": "thin plastic card", "KeyChain": "jingling metal ring",
    "RemoteControl": "black buttoned stick", "Laptop": "folding black computer", "Watch": "strapped round dial",
    "AlarmClock": "round ticking clock", "Pillow": "soft square cushion", "BaseballBat": "long wooden club",
    "BasketBall": "orange bumpy ball", "TennisRacket": "stringed oval racket", "Box": "brown cardboard box",
    "Vase": "tall decorative vessel", "Statue": "small sculpted figure", "WateringCan": "spouted green can",
    "WineBottle": "dark green bottle", "Glassbottle": "clear glass bottle", "SaltShaker": "white-capped shaker",
    "PepperShaker": "dark-capped shaker",
    "Fridge": "tall white cold box", "Microwave": "boxy appliance with a glass door", "SinkBasin": "steel basin",
    "BathtubBasin": "long white tub", "CounterTop": "long flat work surface", "DiningTable": "large wooden table",
    "CoffeeTable": "low glass-topped table", "SideTable": "small square table", "GarbageCan": "round bin",
    "Cabinet": "wooden cupboard", "Drawer": "slide-out drawer", "Shelf": "flat wall shelf", "Desk": "wide wooden desk",
    "Dresser": "wide chest of drawers", "Sofa": "long cushioned couch", "ArmChair": "padded chair",
    "Bed": "big bed with a blanket", "Toilet": "white porcelain toilet", "Ottoman": "padded footstool",
    "Safe": "small metal safe", "CoffeeMachine": "black coffee maker", "StoveBurner": "round black burner",
    "Cart": "wheeled metal cart", "DeskLamp": "short lamp", "FloorLamp": "tall standing lamp",
}

_BASE: Mapping[str, tuple[str, ...]] = {
    "pick_and_place_simple": ("Put {o} in {p}.", "Move {o} to {p}.", "Place {o} on {p}."),
    "pick_two_obj_and_place": ("Put two {os} in {p}.", "Place two {os} on {p}.", "Move two {os} to {p}."),
    "look_at_obj_in_light": ("Examine {o} under {l}.", "Pick up {o} and turn on {l}.",
                             "Look at {o} in the light of {l}."),
    "pick_clean_then_place_in_recep": ("Put a clean {ow} in {p}.", "Rinse {o} and place it in {p}.",
                                       "Wash {o} and put it on {p}."),
    "pick_heat_then_place_in_recep": ("Put a heated {ow} in {p}.", "Warm up {o} and put it in {p}.",
                                      "Heat {o} in the microwave, then place it on {p}."),
    "pick_cool_then_place_in_recep": ("Put a cold {ow} in {p}.", "Chill {o} and place it in {p}.",
                                      "Cool {o} in the fridge, then put it on {p}."),
    "pick_and_place_with_movable_recep": ("Put {m} with {o} in it on {p}.",
                                          "Place {o} in {m} and move it to {p}.",
                                          "Carry {o} in {m} to {p}."),
}

_STEPS: Mapping[str, tuple[str, ...]] = {
    "pick_and_place_simple": ("find {o}", "pick it up", "put it in {p}"),
    "pick_two_obj_and_place": ("find {o}", "put it in {p}", "find another {ow}", "put it in {p} as well"),
    "look_at_obj_in_light": ("find {o}", "pick it up", "go to {l}", "switch it on while holding {o}"),
    "pick_clean_then_place_in_recep": ("pick up {o}", "rinse it in the sink with the faucet", "put it in {p}"),
    "pick_heat_then_place_in_recep": ("pick up {o}", "heat it in the microwave", "take it out",
                                      "put it in {p}"),
    "pick_cool_then_place_in_recep": ("pick up {o}", "put it in the fridge and close the door", "take it out",
                                      "put it in {p}"),
    "pick_and_place_with_movable_recep": ("pick up {o}", "put it in {m}", "pick up {m}", "put it on {p}"),
}

_COMPLEX: tuple[str, ...] = (
    "Although there's {d} nearby, {cmd}",
    "Ignore {d}; {cmd}",
    "The {dw} is not needed today. {Cmd}",
    "Once you have checked that {d} is where it belongs, {cmd}",
)


def word(obj_type: str) -> str:
    """A readable noun for an engine type: ``CoffeeTable -> coffee table``."""
    if obj_type in _WORDS:
        return _WORDS[obj_type]
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", obj_type).lower()


def plural(noun: str) -> str:
    if noun.endswith("knife"):
        return noun[:-5] + "knives"
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _article(phrase: str) -> str:
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _noun(obj_type: str, sliced: bool) -> str:
    return f"{word(obj_type)} slice" if sliced else word(obj_type)


def _phrase(obj_type: str, style: str, world: World, sliced: bool = False, definite: bool = False) -> str:
    """How ``style`` refers to an object (or receptacle) type."""
    noun = _noun(obj_type, sliced)
    if style == "common_sense" and obj_type in _PURPOSE:
        desc = _PURPOSE[obj_type]
        return f"a slice of {desc}" if sliced else desc
    if style == "visual_appearance" and obj_type in _LOOK:
        look = _LOOK[obj_type]
        return f"{'the' if definite else _article(look).split()[0]} {look}{' slice' if sliced else ''}"
    if style == "spatial":
        where = next((world.objects[o.parent].type for o in world.objects.values()
                      if o.type == obj_type and o.parent), None)
        if where is not None and not definite:
            return f"the {noun} from the {word(where)}"
    return f"the {noun}" if definite else _article(noun)


def make_instruction(task: TaskSpec, style: str, world: World, rng: random.Random) -> str:
    """An instruction for ``task`` in ``style`` (deterministic given ``rng``)."""
    sliced = task.object_sliced
    obj = task.object_target
    fill = {
        "o": _phrase(obj, style, world, sliced),
        "ow": _noun(obj, sliced),
        "os": plural(_noun(obj, sliced)),
        "p": _phrase(task.parent_target, style, world, definite=True) if task.parent_target else "",
        "m": _phrase(task.mrecep_target, style, world) if task.mrecep_target else "",
        "l": _phrase(task.toggle_target, style, world, definite=True) if task.toggle_target else "",
    }
    if style == "long_horizon":
        steps = [s.format(**fill) for s in _STEPS[task.task_type]]
        text = "First, " + steps[0] + ", then " + ", then ".join(steps[1:-1]) + ", and finally " + steps[-1] + "."
        return text.replace(", then , and", ", and")
    cmd = rng.choice(_BASE[task.task_type]).format(**fill)
    if style == "complex_instruction":
        used = {obj, task.parent_target, task.mrecep_target, task.toggle_target}
        others = sorted({o.type for o in world.objects.values() if o.pickupable and o.type not in used})
        distractor = rng.choice(others) if others else "Book"
        template = rng.choice(_COMPLEX)
        return template.format(d=_article(word(distractor)), dw=word(distractor),
                               cmd=cmd[0].lower() + cmd[1:], Cmd=cmd)
    return cmd[0].upper() + cmd[1:]
