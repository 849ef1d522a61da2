"""EB-ALFRED's skills as EmbodiedBench sends them to AI2-THOR 2.1.0 (backend ``thor``).

The controller calls (``reset`` / ``step``, action names and arguments, in order) are
those of EmbodiedBench's ``EBAlfEnv`` + ``ThorConnector`` + ``ThorEnv`` for the same
skill strings and the same controller answers. Every rule below cites the file and
line of EmbodiedBench at commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04, under
``embodiedbench/envs/eb_alfred/`` (``EBAlfEnv.py``, ``thor_connector.py``,
``env/thor_env.py``, ``gen/constants.py``, ``gen/utils/game_util.py``, ``utils.py``).
``tests/envs/eb_alfred/test_thor_differential.py`` runs the original classes and
this module over the same recording stand-in and compares the calls.

- **restore** (``EBAlfEnv.py:255-260``): ALFRED's restore (:mod:`envs.thor.restore`:
  reset + Initialize, Initialize, toggles, dirty/empty, SetObjectPoses), then
  ``GetReachablePositions`` (``thor_connector.py:34-44``: a KD-tree over them), then
  the trajectory's ``init_action`` without ``rotateOnTeleport`` and with ``standing=True``.
- **names** (``EBAlfEnv.py:304-307``): in a find/open/close the last word is replaced
  by its object id when the scene's instance names hold it (the action list's
  ``Cabinet_2``, or a bare ``Cabinet`` in a scene with several); other names go
  through ``natural_word_to_ithor_name`` (``utils.py:109-119``: digits kept, ``CD``
  kept, else each word capitalised, ``CounterTop`` -> ``Countertop``).
- **instance choice** (``get_obj_id_from_name``, ``thor_connector.py:247-295``):
  a name with digits is the first object whose metadata ``name`` contains it; else
  the object whose id's first field equals the name (case-insensitive) with the
  least ``distance`` + penalties: 100000 inside a closed openable, 10000 an
  occupied StoveBurner, 1000 not visible (find, pick), -100 a sliced piece once
  something was sliced (find, pick).
- **find** (``nav_obj``, ``thor_connector.py:159-245``): up to 20 ``TeleportFull``
  to the 1st, 2nd, ... nearest reachable position; a Fridge or Microwave skips,
  during the first 10 tries, positions whose facing differs from the object's
  rotation by other than about 90/270 (Fridge) or 0/180 (Microwave) degrees, then
  starts again from the nearest; rotation and horizon as ``:208-233``.
- **pick** (``:297-336``) ``PickupObject(forceAction=False)``; **put** (``:338-426``)
  up to 2 x 7 x 2 forced ``PutObject`` (the found receptacle, then the next-closest
  other one; the basin before the sink for ``Sink``/``Bathtub``) with the recovery
  moves of :data:`PUT_MOVES` before each retry; **open** (``:446-494``) up to 4
  ``OpenObject`` with MoveBack / MoveBack+MoveRight / MoveLeft x2 between;
  **close**, **turn on/off**, **slice** (bare, no knife), **drop** (forced).
- ``LookUp`` / ``LookDown`` become a ``TeleportFull`` at the current pose with the
  horizon moved by 15 degrees (``env/thor_env.py:145-148, 338-365``); turning on a
  Faucet is followed by ``Pass`` and a ``CleanObject`` for each dirty object in the
  closest visible SinkBasin (``:156-161, 465-480``).
- **messages** as the original's, including ``get_env_feedback``'s rewrite of
  "is not visible because it is in <id>" (``EBAlfEnv.py:344-366``).

Deliberate differences: the put counter (``put_count_dict``) and the "something was
sliced" flag live per episode here (EmbodiedBench keeps them for a whole subset:
``EBAlfEnv.py:105``); see docs/eb_alfred.md. Goal conditions are counted from the
simulator's metadata by the household goal code (:mod:`envs.thor.state`).
"""

from __future__ import annotations

import math
import string
from typing import Any, Mapping, Sequence

import numpy as np

from envs.eb_alfred.executor import SkillExecutor
from envs.eb_alfred.skills import SceneVocabulary, Skill
from envs.household import ActionResult, TaskSpec, alfred_constants
from envs.thor.restore import restore_calls as alfred_restore_calls
from envs.thor.state import StateMarks, refresh, world_from_metadata
from envs.thor.thor_env import after_faucet_on, env_action, get_object

#: Enters the run identity of thor runs (the suite's protocol): bump it when a rule here changes.
#: 1 (suite 1.5.0): EmbodiedBench's calls; before, the household executor over AI2-THOR primitives.
SKILLS_PROTOCOL = "EmbodiedBench b24793607b7c EBAlfEnv/ThorConnector/ThorEnv calls, v1"
#: ``thor_connector.py:27`` ``self.agent_height``: the y of every find teleport.
AGENT_HEIGHT = 0.9
#: ``thor_connector.py:187`` ``max_attempts`` of a find.
TELEPORT_ATTEMPTS = 20
#: ``thor_connector.py:204, 214``: the first 10 teleports of a find try only facings whose
#: difference from the object's rotation (degrees, 0-180) falls in one of these open ranges.
FACING_RANGES: Mapping[str, tuple[tuple[float, float], ...]] = {
    "Fridge": ((70.0, 110.0), (250.0, 290.0)),
    "Microwave": ((160.0, 200.0), (-20.0, 20.0)),
}
#: ``thor_connector.py:228``: the horizon aims at 90% of the angle down to the object.
HORIZON_SCALE = 0.9
#: ``thor_connector.py:383-409``: the moves before the j-th try of a put (j = 0..6).
PUT_MOVES: tuple[tuple[Mapping[str, Any], ...], ...] = (
    (),
    ({"action": "LookUp"},) * 2,
    ({"action": "LookDown"},) * 4,
    ({"action": "LookUp"},) * 2 + ({"action": "MoveBack"},),
    ({"action": "MoveAhead"},) + ({"action": "MoveRight"},) * 4,
    ({"action": "MoveLeft"},) * 8,
    ({"action": "MoveRight"},) * 4 + ({"action": "RotateHand", "x": 40},),
)
#: ``thor_connector.py:481-489``: the moves after the i-th failed OpenObject (i = 0..3).
OPEN_MOVES: tuple[tuple[str, ...], ...] = (("MoveBack",), ("MoveBack", "MoveRight"), ("MoveLeft", "MoveLeft"), ())
#: ``thor_connector.py:105``: from the 3rd put on a name, a put message longer than 16
#: characters (any failure) drops the object.
PUT_MESSAGE_DROP_LEN, PUT_DROPS_AFTER = 16, 3
#: ``thor_connector.py:276-288``: penalties added to an object's distance.
CLOSED_PARENT_PENALTY, OCCUPIED_BURNER_PENALTY, NOT_VISIBLE_PENALTY, SLICED_BONUS = 100000, 10000, 1000, -100


def restore_calls(traj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """EmbodiedBench's restore of ``traj`` (``EBAlfEnv.py:255-260``; ``thor_connector.py:34-44``):
    ALFRED's calls with ``GetReachablePositions`` before the start teleport, which loses
    ``rotateOnTeleport`` and gains ``standing=True``. The Initialize steps equal ALFRED's:
    ``gen/constants.py:11, 90-101`` carries ALFRED's values."""
    *calls, (kind, init) = alfred_restore_calls(traj)
    init = dict(init)
    if init.get("action") == "TeleportFull":
        del init["rotateOnTeleport"]  # a KeyError where the file has none, as in the original
        init["standing"] = True
    return [*calls, ("step", {"action": "GetReachablePositions"}), (kind, init)]


def ithor_name(word: str) -> str:
    """``utils.py:109-119`` ``natural_word_to_ithor_name``."""
    if any(ch.isdigit() for ch in word) or word == "CD":
        return word
    return "".join(string.capwords(x) for x in word.split())


def _angle_diff(x: float, y: float) -> float:
    """``thor_connector.py:153-157``: the signed difference of two angles in degrees."""
    x, y = math.radians(x), math.radians(y)
    return math.degrees(math.atan2(math.sin(x - y), math.cos(x - y)))


class ThorSkillExecutor(SkillExecutor):
    """Runs EB-ALFRED skills on a :class:`~envs.thor.session.ThorSession` as EmbodiedBench does.

    A :class:`SkillExecutor` for everything that plans (``copy()`` gives a household
    executor on a copy of the world rebuilt from the simulator's metadata, for the expert
    length and the oracle); :meth:`execute` is EmbodiedBench's. ``world`` is refreshed
    from the metadata after every skill; ``vocab`` holds the scene's instance names in
    metadata order (``EBAlfEnv.py:146-212``).
    """

    def __init__(self, session: Any, traj: Mapping[str, Any], floor_plan: int, task: TaskSpec | None) -> None:
        self.session = session
        self.floor_plan, self.task = floor_plan, task
        self.metadata: Mapping[str, Any] = session.run_with_restarts(lambda: self._restore(traj))
        world = world_from_metadata(self.metadata, floor_plan, task, self.marks)
        super().__init__(world, SceneVocabulary(world))
        #: EmbodiedBench's connector state (``thor_connector.py:28-32``), per episode.
        self.cur_receptacle: str | None = None
        self.put_counts: dict[str, int] = {}
        self.sliced = False
        #: the object the last successful find faced (:func:`world_from_metadata`'s ``at``).
        self.at: str | None = None

    # --- the simulator -----------------------------------------------------------------------
    def _restore(self, traj: Mapping[str, Any]) -> Mapping[str, Any]:
        from scipy.spatial import KDTree  # extra `thor`

        self.marks = StateMarks()  # ThorEnv.reset clears the bookkeeping (env/thor_env.py:82-93)
        metadata: Mapping[str, Any] = {}
        for kind, arg in restore_calls(traj):
            metadata = (self.session.reset(arg) if kind == "reset" else self.session.step(arg)).metadata
            if kind == "step" and arg["action"] == "GetReachablePositions":
                self.reachable = np.array([[p["x"], p["y"], p["z"]] for p in metadata["actionReturn"]])
                self.kdtree = KDTree(self.reachable)
        return metadata

    def _step(self, action: Mapping[str, Any]) -> Mapping[str, Any]:
        """One controller step; ALFRED's cleaned/heated/cooled marks follow it (``env/thor_env.py:163-186``)."""
        self.metadata = self.session.step(dict(action)).metadata
        self.marks.update(action, self.metadata)
        return self.metadata

    def _env_step(self, action: Mapping[str, Any]) -> Mapping[str, Any]:
        """``ThorEnv.step`` (``env/thor_env.py:129-154``): a look is a teleport at the current pose."""
        return self._step(env_action(action, self.metadata))

    def _nearest_reachable(self, loc: Sequence[float], nth: int) -> Any:
        """``thor_connector.py:67-70``: the ``nth`` nearest reachable position (1 = nearest)."""
        _, idx = self.kdtree.query(loc, k=nth + 1)
        return self.reachable[idx[nth - 1]]

    def _prop(self, id_part: str, prop: str) -> Any:
        """``thor_connector.py:147-151``: ``prop`` of the first object whose id contains ``id_part``."""
        return next((o[prop] for o in self.metadata["objects"] if id_part in o["objectId"]), None)

    def _object_named(self, name: str, *, pickupable: bool = False, toggleable: bool = False,
                      sliced_first: bool = False, inherited: bool = False, visible_first: bool = False,
                      exclude: str | None = None) -> tuple[str | None, Mapping[str, Any] | None]:
        """``get_obj_id_from_name`` (``thor_connector.py:247-295``)."""
        objects = self.metadata["objects"]
        if any(ch.isdigit() for ch in name):
            hit = next((o for o in objects if name in o["name"]), None)
            return (hit["objectId"], hit) if hit is not None else (None, None)
        best: Mapping[str, Any] | None = None
        least = 1e8
        for o in objects:
            oid = o["objectId"]
            if oid == exclude or oid.split("|")[0].casefold() != name.casefold():
                continue
            if (pickupable and not o["pickupable"]) or (toggleable and not o["toggleable"]):
                continue
            if inherited and len(oid.split("|")) != 5:
                continue
            if not o["distance"] < least:
                continue
            penalty = 0
            for p in o["parentReceptacles"] or ():
                if self._prop(p, "openable") is True and self._prop(p, "isOpen") is False:
                    penalty += CLOSED_PARENT_PENALTY
                    break
            if name.casefold() == "stoveburner" and len(o["receptacleObjectIds"]) > 0:
                penalty += OCCUPIED_BURNER_PENALTY
            if visible_first and o["visible"] is False:
                penalty += NOT_VISIBLE_PENALTY
            if sliced_first and "_Slice" in o["name"]:
                penalty += SLICED_BONUS
            if o["distance"] + penalty < least:
                least, best = o["distance"] + penalty, o
        return (best["objectId"], best) if best is not None else (None, None)

    # --- skills ------------------------------------------------------------------------------
    def execute(self, skill: Skill) -> ActionResult:
        """One skill as ``EBAlfEnv.step`` runs it; the message is the feedback's reason ("" on success)."""
        text = skill.text
        if "find" in text or "open" in text or "close" in text:  # EBAlfEnv.py:304-307
            words = text.split(" ")
            if words[-1] in self.vocab.instance_ids:
                text = " ".join(words[:-1] + [self.vocab.instance_ids[words[-1]]])
        message = self._interact(text)
        refresh(self.world, world_from_metadata(self.metadata, self.floor_plan, self.task, self.marks, at=self.at))
        return ActionResult(not message, self._feedback(message))

    def _interact(self, text: str) -> str:
        """``llm_skill_interact`` (``thor_connector.py:72-145``)."""
        if not (text.startswith("put down ") or text.startswith("open ")):
            self.cur_receptacle = None
        if text.startswith("find "):
            name = text.replace("find a ", "").replace("find an ", "")
            self.cur_receptacle = name
            return self._nav_obj(ithor_name(name))
        if text.startswith("pick up "):
            return self._pick(ithor_name(text.replace("pick up the ", "")))
        if text.startswith("put down "):
            if self.cur_receptacle is None:
                return self._drop_held()
            key = self.cur_receptacle
            self.put_counts[key] = self.put_counts.get(key, 0) + 1
            message = self._put(ithor_name(key))
            if len(message) > PUT_MESSAGE_DROP_LEN and self.put_counts[key] >= PUT_DROPS_AFTER:
                self._drop_held()
                message += ". The robot dropped the object instead."
            return message
        if text.startswith("open "):
            return self._open_obj(ithor_name(text.replace("open the ", "")))
        if text.startswith("close "):
            return self._close_obj(ithor_name(text.replace("close the ", "")))
        if text.startswith("turn on "):
            return self._toggle_on(ithor_name(text.replace("turn on the ", "")))
        if text.startswith("turn off "):
            return self._toggle_off(ithor_name(text.replace("turn off the ", "")))
        if text.startswith("slice "):
            message = self._slice_obj(ithor_name(text.replace("slice the ", "")))
            self.sliced = True
            return message
        if text.startswith("drop"):
            return self._drop_held()
        raise ValueError(f"not an EB-ALFRED skill: {text!r}")

    def _feedback(self, message: str) -> str:
        """``get_env_feedback``'s rewrite (``EBAlfEnv.py:356-362``): the receptacle id of a
        "not visible" message becomes its instance name, else its type, and the advice follows."""
        if "is not visible" in message and "|" in message:
            recep_id = message.split("because it is in ")[1].split(". Note")[0]
            where = self.vocab.id_names.get(recep_id, recep_id.split("|")[0])
            return message.split(recep_id)[0] + where + ". Go there to pick the object instead."
        return message

    def _nav_obj(self, target: str) -> str:
        """``nav_obj`` (``thor_connector.py:159-245``)."""
        if "|" in target:
            obj_id, target = target, target.split("|")[0]
            piece_id, _ = self._object_named(target, visible_first=True, sliced_first=self.sliced)
            if piece_id is not None and "Sliced" in piece_id and obj_id in piece_id:
                obj_id = piece_id  # the instance was sliced: find its nearest piece (:170-173)
        else:
            obj_id, _ = self._object_named(target, visible_first=True, sliced_first=self.sliced)
        obj = get_object(obj_id, self.metadata) if obj_id is not None else None
        if obj is None:
            return f"Cannot find {target}. This object may not exist in this scene. Try to explore other instances instead."
        loc, obj_rot = obj["position"], obj["rotation"]["y"]
        camera_height = AGENT_HEIGHT + alfred_constants().raw["CAMERA_HEIGHT_OFFSET"]
        nth = 0
        for i in range(TELEPORT_ATTEMPTS):
            nth += 1
            if i == 10 and target in FACING_RANGES:
                nth -= 10
            spot = self._nearest_reachable([loc["x"], loc["y"], loc["z"]], nth)
            rotation = math.atan2(-(loc["x"] - spot[0]), loc["z"] - spot[2])
            if rotation > 0:
                rotation -= 2 * math.pi
            rotation = -(180 / math.pi) * rotation
            if i < 10 and target in FACING_RANGES:
                diff = abs(_angle_diff(rotation, obj_rot))
                if not any(lo < diff < hi for lo, hi in FACING_RANGES[target]):
                    continue
            xz_dist = math.hypot(loc["x"] - spot[0], loc["z"] - spot[2])
            horizon = math.atan2((loc["y"] - camera_height), xz_dist)
            horizon = (180 / math.pi) * horizon
            horizon *= HORIZON_SCALE
            md = self._env_step({"action": "TeleportFull", "x": spot[0], "y": AGENT_HEIGHT, "z": spot[2],
                                 "rotation": rotation, "horizon": -horizon})
            if md["lastActionSuccess"]:
                self.at = obj_id
                return ""
        return f"Cannot move to {target}"

    def _pick(self, name: str) -> str:
        """``pick`` (``thor_connector.py:297-336``)."""
        obj_id, obj = self._object_named(name, pickupable=True, visible_first=True, sliced_first=self.sliced)
        if obj_id is None or obj is None:
            return f"Cannot find {name} to pick up. Find the object before picking up it"
        message = ""
        hidden_in = obj["parentReceptacles"] if obj["visible"] is False else None
        if hidden_in:
            message = (f"{name} is not visible because it is in {hidden_in[0]}. "
                       f"Note: multiple instances of {hidden_in[0]} may exist")
        md = self._env_step({"action": "PickupObject", "objectId": obj_id, "forceAction": False})
        if not hidden_in and not md["lastActionSuccess"]:
            held = md["inventoryObjects"]
            message = f"Robot is currently holding {held[0]['objectType']}" if held else "Robot is not holding any object"
        return "" if md["lastActionSuccess"] else message

    def _put(self, receptacle: str) -> str:
        """``put`` (``thor_connector.py:338-426``): up to 2 rounds (the found receptacle, then
        the next-closest other one) x 7 poses (:data:`PUT_MOVES`) x 2 lookups (plain and
        basin ids, the basin first for a Sink or Bathtub)."""
        if len(self.metadata["inventoryObjects"]) == 0:
            return "Robot is not holding any object"
        held = self.metadata["inventoryObjects"][0]["objectId"]
        given, message = receptacle, ""
        last_tried: str | None = None
        exclude: str | None = None
        for k in range(2):
            for j in range(7):
                for i in range(2):
                    if k == 1 and exclude is None:
                        exclude = last_tried
                    if k == 0 and "|" in given:
                        if i == 1:
                            continue
                        recep_id, receptacle = given, given.split("|")[0]
                    else:
                        # plain name first, then basin ids (``|SinkBasin``); the other way round for a sink
                        basin_first = "Sink" in receptacle or "Bathtub" in receptacle
                        inherited = i == 0 if basin_first else i == 1
                        recep_id, _ = self._object_named(receptacle, inherited=inherited, exclude=exclude)
                    if not recep_id:
                        message = (f"Putting the object on {receptacle} failed. First check whether the receptacle "
                                   "is open or not. Also try other instances of the receptacle")
                        continue
                    for move in PUT_MOVES[j]:
                        self._env_step(move)
                    md = self._env_step({"action": "PutObject", "objectId": held, "receptacleObjectId": recep_id,
                                         "forceAction": True})
                    last_tried = recep_id
                    if md["lastActionSuccess"]:
                        return ""
                    message = (f"Putting the object on {receptacle} failed. First check the receptacle is open or "
                               "not. Also try other instances of the receptacle")
        return message

    def _drop_held(self) -> str:
        """``drop`` (``thor_connector.py:428-444``)."""
        md = self._env_step({"action": "DropHandObject", "forceAction": True})
        if md["lastActionSuccess"]:
            return ""
        return "Robot is not holding any object" if len(md["inventoryObjects"]) == 0 else "Drop action failed"

    def _target(self, name: str) -> tuple[str | None, str]:
        """An id as given (from the instance names), else the nearest by name (``:451-455``, ``:499-503``)."""
        if "|" in name:
            return name, name.split("|")[0]
        return self._object_named(name)[0], name

    def _open_obj(self, name: str) -> str:
        """``open`` (``thor_connector.py:446-494``): up to 4 tries with :data:`OPEN_MOVES` between."""
        obj_id, name = self._target(name)
        if obj_id is None:
            return f"Cannot find {name} to open. Find the object before opening it"
        was_open = any(o["objectId"] == obj_id and o["openable"] and o["isOpen"] for o in self.metadata["objects"])
        message = ""
        for moves in OPEN_MOVES:
            if self._env_step({"action": "OpenObject", "objectId": obj_id})["lastActionSuccess"]:
                return ""
            message = f"Open action failed. The {name} is already open" if was_open else "Open action failed."
            for move in moves:
                self._env_step({"action": move})
        return message

    def _close_obj(self, name: str) -> str:
        """``close`` (``thor_connector.py:496-521``)."""
        obj_id, name = self._target(name)
        if obj_id is None:
            return f"Cannot find {name} to close"
        md = self._env_step({"action": "CloseObject", "objectId": obj_id})
        if md["lastActionSuccess"]:
            return ""
        shut = any(o["objectId"] == obj_id and o["openable"] and not o["isOpen"] for o in md["objects"])
        return "Close action failed" + (f". The {name} is already closed" if shut else "")

    def _toggle_on(self, name: str) -> str:
        """``toggleon`` (``thor_connector.py:523-541``) with ThorEnv's faucet rules: the closest
        visible SinkBasin's contents are marked cleaned (``env/thor_env.py:170-174``; none
        visible raises, which toggleon reports as a failed turn-on), then ``Pass`` and a
        ``CleanObject`` per dirty object in it (``check_clean``, ``:465-480``)."""
        obj_id, _ = self._object_named(name, toggleable=True)
        if obj_id is None:
            return f"Cannot find {name} to turn on"
        md = self._env_step({"action": "ToggleObjectOn", "objectId": obj_id})
        if md["lastActionSuccess"] and "Faucet" in obj_id:
            cleaned = after_faucet_on(self._env_step, obj_id, md)
            if cleaned is None:
                return "Turn on action failed"
            md = cleaned
        return "" if md["lastActionSuccess"] else "Turn on action failed"

    def _toggle_off(self, name: str) -> str:
        """``toggleoff`` (``thor_connector.py:543-558``)."""
        obj_id, _ = self._object_named(name, toggleable=True)
        if obj_id is None:
            return f"Cannot find {name} to turn off"
        md = self._env_step({"action": "ToggleObjectOff", "objectId": obj_id})
        return "" if md["lastActionSuccess"] else "Turn off action failed"

    def _slice_obj(self, name: str) -> str:
        """``slice`` (``thor_connector.py:560-575``): a bare SliceObject, nothing checked in hand."""
        obj_id, _ = self._object_named(name)
        if obj_id is None:
            return f"Cannot find {name} to slice"
        md = self._env_step({"action": "SliceObject", "objectId": obj_id})
        return "" if md["lastActionSuccess"] else "Slice action failed"
