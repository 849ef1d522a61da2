"""ALFRED's action language in this suite: FLARE-style subgoal triplets and their expansion.

A planner writes a flat list of triplets ``(action, object, receptacle)`` with
``receptacle`` ``"0"`` when unused (FLARE's planner output format, snumprlab/flare),
over :data:`TRIPLET_ACTIONS`. The suite expands each triplet into low-level
steps the way FLARE's post-processing does: heating is Open, Put, Close, ToggleOn, ToggleOff,
Open, Pickup, Close on the Microwave; cooling the same on the Fridge without
the toggles; cleaning is Put into the SinkBasin, Faucet on, Faucet off, Pickup;
a Pickup from / Put into an openable receptacle is wrapped in Open / Close
(a Slice with a receptacle named is treated like a Pickup: ours, for objects
that lie in a closed receptacle).
Navigation is one ``GotoLocation`` step before each interaction site (FLARE
navigates with a semantic map; here it is a teleport, see :mod:`envs.alfred.env`).

Low-level steps are written ``"<Action> <Type>"`` (``"OpenObject Fridge"``);
``GotoLocation`` may carry a second type, a hint naming what the place should
hold (``"GotoLocation CounterTop Apple"``: a CounterTop with an Apple on it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

#: FLARE's planner actions (snumprlab/flare: PickupObject, PutObject, ToggleObject,
#: SliceObject, CleanObject, HeatObject, CoolObject) plus Open/Close, which this suite
#: adds so a planner can reach into closed receptacles explicitly.
TRIPLET_ACTIONS: tuple[str, ...] = (
    "PickupObject", "PutObject", "ToggleObject", "SliceObject", "CleanObject", "HeatObject", "CoolObject",
    "OpenObject", "CloseObject",
)
#: The receptacle slot's "unused" marker in FLARE's output.
NO_RECEPTACLE = "0"

#: Low-level steps (ALFRED / AI2-THOR interaction action names, plus navigation).
GOTO = "GotoLocation"
LOW_ACTIONS: tuple[str, ...] = (
    GOTO, "PickupObject", "PutObject", "OpenObject", "CloseObject", "ToggleObjectOn", "ToggleObjectOff",
    "SliceObject",
)
#: Receptacles ALFRED's state-change rules use (env/thor_env.py ``update_states``).
MICROWAVE, FRIDGE, SINK_BASIN, FAUCET = "Microwave", "Fridge", "SinkBasin", "Faucet"
#: Types whose receptacles open and close (ALFRED gen/constants.py ``OPENABLE_CLASS_LIST``).
OPENABLE_TYPES: frozenset[str] = frozenset({"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"})


@dataclass(frozen=True)
class Triplet:
    """One planner subgoal."""

    action: str
    obj: str
    receptacle: str = NO_RECEPTACLE

    def __post_init__(self) -> None:
        if self.action not in TRIPLET_ACTIONS:
            raise ValueError(f"unknown triplet action {self.action!r}; expected one of {TRIPLET_ACTIONS}")

    @property
    def text(self) -> str:
        return f"({self.action}, {self.obj}, {self.receptacle})"


@dataclass(frozen=True)
class LowAction:
    """One low-level step: an action on an object type (and a Goto hint)."""

    action: str
    obj: str
    hint: str | None = None

    @property
    def text(self) -> str:
        return f"{self.action} {self.obj}" + (f" {self.hint}" if self.hint else "")


_LOW = re.compile(r"^\s*([A-Za-z]+)\s+([A-Za-z]+)(?:\s+([A-Za-z]+))?\s*$")
_CANON_LOW = {a.casefold(): a for a in LOW_ACTIONS}


def parse_low_action(action: object) -> LowAction | None:
    """A :class:`LowAction` from its text (or itself); None for anything else."""
    if isinstance(action, LowAction):
        return action
    if not isinstance(action, str):
        return None
    m = _LOW.match(action)
    if not m or m.group(1).casefold() not in _CANON_LOW:
        return None
    verb = _CANON_LOW[m.group(1).casefold()]
    if m.group(3) and verb != GOTO:
        return None
    return LowAction(verb, m.group(2), m.group(3))


def _openable(obj_type: str) -> bool:
    return obj_type in OPENABLE_TYPES


def expand(triplet: Triplet) -> list[LowAction]:
    """FLARE's expansion of one triplet into low-level steps."""
    a, o, r = triplet.action, triplet.obj, triplet.receptacle
    has_r = r not in ("", NO_RECEPTACLE)
    if a == "PickupObject":
        if not has_r:
            return [LowAction(GOTO, o), LowAction("PickupObject", o)]
        steps = [LowAction(GOTO, r, o)]
        if _openable(r):
            return steps + [LowAction("OpenObject", r), LowAction("PickupObject", o), LowAction("CloseObject", r)]
        return steps + [LowAction("PickupObject", o)]
    if a == "PutObject":
        if not has_r:
            raise ValueError(f"{triplet.text}: PutObject needs a receptacle")
        steps = [LowAction(GOTO, r, o)]
        if _openable(r):
            return steps + [LowAction("OpenObject", r), LowAction("PutObject", r), LowAction("CloseObject", r)]
        return steps + [LowAction("PutObject", r)]
    if a == "HeatObject":
        m = MICROWAVE
        return [LowAction(GOTO, m), LowAction("OpenObject", m), LowAction("PutObject", m),
                LowAction("CloseObject", m), LowAction("ToggleObjectOn", m), LowAction("ToggleObjectOff", m),
                LowAction("OpenObject", m), LowAction("PickupObject", o), LowAction("CloseObject", m)]
    if a == "CoolObject":
        f = FRIDGE
        return [LowAction(GOTO, f), LowAction("OpenObject", f), LowAction("PutObject", f),
                LowAction("CloseObject", f), LowAction("OpenObject", f), LowAction("PickupObject", o),
                LowAction("CloseObject", f)]
    if a == "CleanObject":
        return [LowAction(GOTO, SINK_BASIN), LowAction("PutObject", SINK_BASIN),
                LowAction("ToggleObjectOn", FAUCET), LowAction("ToggleObjectOff", FAUCET),
                LowAction("PickupObject", o)]
    if a == "ToggleObject":
        return [LowAction(GOTO, o), LowAction("ToggleObjectOn", o)]
    if a == "SliceObject":
        # Like Pickup: at the receptacle named (opened and closed around the slice), else at the object.
        if not has_r:
            return [LowAction(GOTO, o), LowAction("SliceObject", o)]
        steps = [LowAction(GOTO, r, o)]
        if _openable(r):
            return steps + [LowAction("OpenObject", r), LowAction("SliceObject", o), LowAction("CloseObject", r)]
        return steps + [LowAction("SliceObject", o)]
    if a == "OpenObject":
        return [LowAction(GOTO, o), LowAction("OpenObject", o)]
    if a == "CloseObject":
        return [LowAction(GOTO, o), LowAction("CloseObject", o)]
    raise ValueError(a)  # pragma: no cover - Triplet validates


def expand_all(triplets: Iterable[Triplet]) -> list[str]:
    """The low-level plan (strings) of a triplet list."""
    return [step.text for t in triplets for step in expand(t)]


def low_actions_for(types: Sequence[str], pickupable: frozenset[str], receptacles: frozenset[str],
                    openable: frozenset[str], toggleable: frozenset[str], sliceable: frozenset[str]) -> list[str]:
    """Every low-level step over a scene's object types (the observation's action list)."""
    out: list[str] = []
    for t in sorted(set(types)):
        out.append(f"{GOTO} {t}")
        if t in pickupable:
            out.append(f"PickupObject {t}")
        if t in receptacles:
            out.append(f"PutObject {t}")
        if t in openable:
            out += [f"OpenObject {t}", f"CloseObject {t}"]
        if t in toggleable:
            out += [f"ToggleObjectOn {t}", f"ToggleObjectOff {t}"]
        if t in sliceable:
            out.append(f"SliceObject {t}")
    return out
