"""The controller calls of the ``thor`` backend against ALFRED's own ``ThorEnv``.

ALFRED's env/thor_env.py (askforalfred/alfred f91f4c0c96c7a29f33d0557f86b0a21035379b3b, from
$ALFRED_DIR) is imported with a recording stand-in as ``ai2thor.controller.Controller``; it and
our engine (envs/thor/engine.py) each drive their own FAKE controller (tests/envs/alfred/
walking_fake.py: payloads from the real trajectory files, not AI2-THOR) through every low-level
action of the 213 EB-ALFRED trajectories: ALFRED's side restores with its evaluation's
``setup_scene`` calls (models/eval/eval.py:110-115) and acts as ``va_interact`` does
(env/thor_env.py:494-587: navigation without a mask, ``smooth_nav`` off as
models/eval/eval_seq2seq.py:40 defaults it; an interaction's object id goes to
``to_thor_api_exec``, an exception is a failure); ours restores with envs/thor/restore.py and
acts through the engine's primitives. Each action must send the same calls, in order, and
succeed or fail alike.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Mapping

import pytest

from envs.household.restore import coordinate_position, id_position
from envs.household.scene import thor_id_type
from envs.thor.episode import start_engine
from envs.thor.session import ThorSession
from tests.envs.alfred.alfred_source import alfred_thor_env, checkout_or_skip
from tests.envs.alfred.walking_fake import WalkingFake

NAVIGATION = ("MoveAhead", "RotateLeft", "RotateRight", "LookUp", "LookDown")
#: Our engine's method for each interaction of ALFRED's ``to_thor_api_exec``.
ENGINE_METHOD = {"PickupObject": "pickup", "PutObject": "put", "OpenObject": "open", "CloseObject": "close",
                 "ToggleObjectOn": "toggle_on", "ToggleObjectOff": "toggle_off", "SliceObject": "slice"}


class StandIn:
    """What ALFRED's ThorEnv extends: each call goes to the fake in ``StandIn.fake``."""

    fake: WalkingFake | None = None

    def __init__(self, quality: str | None = None, **_: Any) -> None:
        self._fake = type(self).fake
        self.last_event: Any = None

    def start(self, **_: Any) -> None:
        return None

    def reset(self, scene_name: str) -> Any:
        self.last_event = self._fake.reset(scene_name)
        return self.last_event

    def step(self, action: Mapping[str, Any], raise_for_failure: bool = False) -> Any:
        self.last_event = self._fake.step(dict(action))
        return self.last_event


def fake_id_resolver(traj: Mapping[str, Any], objects: list[Mapping[str, Any]]) -> Callable[[str], str]:
    """The fake's id for an id of the expert's plan: the same where the fake has it, else the
    fake's object of that type nearest where the plan recorded it (``coordinate*ObjectId``),
    slice pieces following their whole (the fake names them ``<whole>|<Type>Sliced_<k>``)."""
    recorded: dict[str, tuple[float, float, float]] = {}
    for step in traj["plan"]["high_pddl"]:
        a = step["planner_action"]
        for key, coords in (("objectId", "coordinateObjectId"), ("receptacleObjectId", "coordinateReceptacleObjectId")):
            if a.get(key) and a.get(coords):
                recorded.setdefault(a[key], coordinate_position(a[coords][1]))
    ids = {o["objectId"] for o in objects}

    def resolve(oid: str) -> str:
        if oid in ids or not oid:
            return oid
        parts = oid.split("|")
        sliced = len(parts) > 4 and "Sliced" in parts[4]
        whole, piece = ("|".join(parts[:4]), "|" + parts[4]) if sliced else (oid, "")
        if whole in ids:
            return whole + piece
        where = recorded.get(whole) or id_position(whole)
        kind = parts[4] if len(parts) > 4 and not sliced else thor_id_type(whole)  # "Sink|x|y|z|SinkBasin"
        same = [o for o in objects if o["objectType"] == kind]
        if not same:
            return oid
        p = min(same, key=lambda o: math.dist(where or (0.0, 0.0, 0.0),
                                              (o["position"]["x"], o["position"]["y"], o["position"]["z"])))
        return p["objectId"] + piece

    return resolve


def _ours(engine: Any, name: str, oid: str) -> bool:
    if name in NAVIGATION:
        return engine.primitive(name).ok
    return getattr(engine, ENGINE_METHOD[name])(oid).ok


def _alfred(env: Any, discrete: str, name: str, oid: str) -> bool:
    if name in NAVIGATION:  # va_interact without a mask: to_thor_api_exec(action, "", smooth_nav)
        return bool(env.va_interact(discrete, interact_mask=None, smooth_nav=False)[0])
    try:  # va_interact, once its mask named the object (env/thor_env.py:566-587)
        event, _ = env.to_thor_api_exec(discrete, oid, smooth_nav=False)
    except Exception:  # noqa: BLE001 - ALFRED's failure path
        return False
    return bool(event.metadata["lastActionSuccess"])


def restored_pair(thor_env: Any, traj: Mapping[str, Any]) -> tuple[Any, WalkingFake, Any, WalkingFake]:
    """(ALFRED's ThorEnv, its fake, our engine, its fake), both restored to ``traj``'s start."""
    theirs, ours = WalkingFake(traj), WalkingFake(traj)
    StandIn.fake = theirs
    env = thor_env.ThorEnv()
    scene = traj["scene"]
    env.reset(f"FloorPlan{scene['scene_num']}")  # models/eval/eval.py:110-115 (setup_scene)
    env.restore_scene(scene["object_poses"], scene["object_toggles"], scene["dirty_and_empty"])
    env.step(dict(scene["init_action"]))
    engine = start_engine(ThorSession(lambda: ours), traj, int(scene["scene_num"]), None)
    assert ours.calls == theirs.calls, "restore"
    return env, theirs, engine, ours


def compare_trajectory(thor_env: Any, traj: Mapping[str, Any]) -> dict[str, int]:
    """Restore and replay ``traj`` on both sides; AssertionError at the first difference."""
    env, theirs, engine, ours = restored_pair(thor_env, traj)
    resolve = fake_id_resolver(traj, theirs.metadata["objects"])
    counts = {"actions": 0, "calls": 0, "succeeded": 0, "clean_calls": 0, "look_teleports": 0}
    for i, low in enumerate(traj["plan"]["low_actions"]):
        api = low["api_action"]
        name = api["action"]
        oid = resolve(api.get("receptacleObjectId") or api.get("objectId") or "")
        n_theirs, n_ours = len(theirs.calls), len(ours.calls)
        ok_theirs = _alfred(env, low["discrete_action"]["action"], name, oid)
        ok_ours = _ours(engine, name, oid)
        sent = theirs.calls[n_theirs:]
        assert ours.calls[n_ours:] == sent, (i, name, oid)
        assert ok_ours == ok_theirs, (i, name, oid)
        counts["actions"] += 1
        counts["calls"] += len(sent)
        counts["succeeded"] += ok_ours
        counts["clean_calls"] += sum(a["action"] in ("Pass", "CleanObject") for _, a in sent)
        counts["look_teleports"] += name in ("LookUp", "LookDown") and sent[0][1]["action"] == "TeleportFull"
    return counts


def _compare(data_dir: Path, stride: int) -> dict[str, int]:
    root = checkout_or_skip()
    files = sorted((data_dir / "json_2.1.0").glob("*/*/pp/ann_*.json"))
    assert len(files) == 213
    totals: dict[str, int] = {}
    with alfred_thor_env(root, StandIn) as thor_env:
        for path in files[::stride]:
            for k, v in compare_trajectory(thor_env, json.loads(path.read_text())).items():
                totals[k] = totals.get(k, 0) + v
    return totals


def test_low_level_actions_send_alfreds_calls(data_dir: Path) -> None:
    """A third of the trajectories (every one in the slow test below)."""
    totals = _compare(data_dir, 3)
    assert totals["actions"] > 3000 and totals["look_teleports"] > 0 and totals["clean_calls"] > 0


@pytest.mark.slow
def test_every_low_level_action_of_the_213_trajectories_sends_alfreds_calls(data_dir: Path) -> None:
    totals = _compare(data_dir, 1)
    print("ALFRED ThorEnv vs thor backend:", totals)
    assert totals["actions"] == 11854  # every low action of the 213 trajectories
    assert totals["calls"] == 11982
    assert totals["look_teleports"] == 679 + 467  # every LookDown / LookUp became look_angle's TeleportFull
    assert totals["clean_calls"] == 128  # check_clean's Pass and CleanObject after a Faucet turned on
    assert totals["succeeded"] == 11854  # on the fake; both sides alike


def test_a_difference_is_caught(data_dir: Path) -> None:
    """The comparison fails when our engine sends a look as a plain LookDown."""
    root = checkout_or_skip()
    traj = json.loads(next((data_dir / "json_2.1.0").glob("*/*/pp/ann_0.json")).read_text())
    from envs.thor import engine as engine_module

    class PlainLooks(engine_module.ThorEngine):
        def primitive(self, name: str):  # type: ignore[override]
            return self._step({"action": name, "forceAction": True})

    with alfred_thor_env(root, StandIn) as thor_env, pytest.MonkeyPatch.context() as mp:
        mp.setattr("envs.thor.episode.ThorEngine", PlainLooks)
        with pytest.raises(AssertionError, match="Look"):
            compare_trajectory(thor_env, traj)


def test_a_faucet_with_no_basin_in_view_fails_as_in_alfreds_thor_env(data_dir: Path) -> None:
    """update_states (env/thor_env.py:169-172) finds no visible SinkBasin and raises: the toggle
    was sent, the action fails, and no Pass or CleanObject follows. Both sides, same fake state."""
    root = checkout_or_skip()
    ladle = "pick_clean_then_place_in_recep-Ladle-None-CounterTop-8/trial_T20190909_121908_219603"
    traj = json.loads((data_dir / "json_2.1.0" / ladle / "pp" / "ann_0.json").read_text())
    with alfred_thor_env(root, StandIn) as thor_env:
        env, theirs, engine, ours = restored_pair(thor_env, traj)
        for fake in (theirs, ours):  # every SinkBasin out of view from now on
            seen = fake._visible
            fake._visible = lambda o, by_id, seen=seen: seen(o, by_id) and o["objectType"] != "SinkBasin"
        faucet = next(o["objectId"] for o in theirs.metadata["objects"] if o["objectType"] == "Faucet")
        n_theirs, n_ours = len(theirs.calls), len(ours.calls)
        assert not _alfred(env, "ToggleObjectOn", "ToggleObjectOn", faucet)
        assert not _ours(engine, "ToggleObjectOn", faucet)
        sent = [{"action": "ToggleObjectOn", "objectId": faucet}]
        assert [a for _, a in theirs.calls[n_theirs:]] == [a for _, a in ours.calls[n_ours:]] == sent


def test_a_basin_listing_an_unknown_id_fails_as_in_alfreds_check_clean(data_dir: Path) -> None:
    """check_clean (env/thor_env.py:463-478) reads each id in the basin with get_object, which
    gives None for an id the metadata does not list, and the read raises: the toggle and the
    Pass were sent, the action fails, no CleanObject follows. Both sides, same fake state."""
    root = checkout_or_skip()
    ladle = "pick_clean_then_place_in_recep-Ladle-None-CounterTop-8/trial_T20190909_121908_219603"
    traj = json.loads((data_dir / "json_2.1.0" / ladle / "pp" / "ann_0.json").read_text())
    with alfred_thor_env(root, StandIn) as thor_env:
        env, theirs, engine, ours = restored_pair(thor_env, traj)
        for fake in (theirs, ours):  # every SinkBasin lists first an id no object has
            snapshot = fake._snapshot

            def with_ghost(*args: Any, snapshot: Any = snapshot) -> dict[str, Any]:
                md = snapshot(*args)
                for o in md["objects"]:
                    if o["objectType"] == "SinkBasin":
                        o["receptacleObjectIds"] = ["Ghost|+0.00|+0.00|+0.00", *o["receptacleObjectIds"]]
                return md

            fake._snapshot = with_ghost
        faucet = next(o["objectId"] for o in theirs.metadata["objects"] if o["objectType"] == "Faucet")
        n_theirs, n_ours = len(theirs.calls), len(ours.calls)
        assert not _alfred(env, "ToggleObjectOn", "ToggleObjectOn", faucet)
        assert not _ours(engine, "ToggleObjectOn", faucet)
        sent = [{"action": "ToggleObjectOn", "objectId": faucet}, {"action": "Pass"}]
        assert [a for _, a in theirs.calls[n_theirs:]] == [a for _, a in ours.calls[n_ours:]] == sent


@pytest.mark.parametrize("contents", [None, [], ["Apple|1|1|1"]])
def test_state_marks_are_alfreds_update_states(contents) -> None:
    """ALFRED's update_states (env/thor_env.py:161-184) and our StateMarks on the same events:
    a receptacle whose contents are None empties the marks there (the union is skipped)."""
    root = checkout_or_skip()
    from envs.thor.state import StateMarks

    def obj(oid: str, otype: str, ids: Any) -> dict:
        return {"objectId": oid, "objectType": otype, "visible": True, "receptacleObjectIds": ids,
                "position": {"x": 0.0, "y": 0.0, "z": 0.0}}

    metadata = {"lastActionSuccess": True, "objects": [
        obj("Faucet|0|0|0", "Faucet", None), obj("Sink|0|0|0|SinkBasin", "SinkBasin", contents),
        obj("Microwave|0|0|0", "Microwave", contents), obj("Fridge|0|0|0", "Fridge", contents)]}
    events = [{"action": "ToggleObjectOn", "objectId": "Faucet|0|0|0"},
              {"action": "ToggleObjectOn", "objectId": "Microwave|0|0|0"},
              {"action": "CloseObject", "objectId": "Fridge|0|0|0"}]
    with alfred_thor_env(root, StandIn) as thor_env:
        StandIn.fake = None
        env = thor_env.ThorEnv()
        env.last_event = SimpleNamespace(metadata=metadata)
        ours = StateMarks()
        for marks in (ours, env):
            setattr(marks, "cleaned_objects" if marks is env else "cleaned", {"Old|0|0|0"})
            setattr(marks, "heated_objects" if marks is env else "heated", {"Old|0|0|0"})
            setattr(marks, "cooled_objects" if marks is env else "cooled", {"Old|0|0|0"})
        for action in events:
            env.update_states(action)
            ours.update(action, metadata)
        assert (ours.cleaned, ours.heated, ours.cooled) == (env.cleaned_objects, env.heated_objects,
                                                            env.cooled_objects)
        assert ours.cleaned == (set() if contents is None else {"Old|0|0|0", *contents})
