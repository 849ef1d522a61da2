"""FLARE triplets and their expansion into low-level steps (golden sequences)."""

from __future__ import annotations

import pytest

from envs.alfred.language import LowAction, Triplet, expand, expand_all, parse_low_action


def texts(t: Triplet) -> list[str]:
    return [s.text for s in expand(t)]


def test_heat_expansion_closes_the_microwave_before_toggling() -> None:
    assert texts(Triplet("HeatObject", "Apple")) == [
        "GotoLocation Microwave", "OpenObject Microwave", "PutObject Microwave", "CloseObject Microwave",
        "ToggleObjectOn Microwave", "ToggleObjectOff Microwave", "OpenObject Microwave", "PickupObject Apple",
        "CloseObject Microwave"]


def test_cool_and_clean_expansions() -> None:
    assert texts(Triplet("CoolObject", "Lettuce")) == [
        "GotoLocation Fridge", "OpenObject Fridge", "PutObject Fridge", "CloseObject Fridge",
        "OpenObject Fridge", "PickupObject Lettuce", "CloseObject Fridge"]
    assert texts(Triplet("CleanObject", "Mug")) == [
        "GotoLocation SinkBasin", "PutObject SinkBasin", "ToggleObjectOn Faucet", "ToggleObjectOff Faucet",
        "PickupObject Mug"]


def test_pickup_and_put_wrap_openables() -> None:
    assert texts(Triplet("PickupObject", "Cup", "Cabinet")) == [
        "GotoLocation Cabinet Cup", "OpenObject Cabinet", "PickupObject Cup", "CloseObject Cabinet"]
    assert texts(Triplet("PickupObject", "Cup", "CounterTop")) == ["GotoLocation CounterTop Cup", "PickupObject Cup"]
    assert texts(Triplet("PickupObject", "Cup", "0")) == ["GotoLocation Cup", "PickupObject Cup"]
    assert texts(Triplet("PutObject", "Cup", "Fridge")) == [
        "GotoLocation Fridge Cup", "OpenObject Fridge", "PutObject Fridge", "CloseObject Fridge"]
    assert texts(Triplet("PutObject", "Cup", "Shelf")) == ["GotoLocation Shelf Cup", "PutObject Shelf"]
    with pytest.raises(ValueError, match="needs a receptacle"):
        expand(Triplet("PutObject", "Cup", "0"))


def test_toggle_slice_open_close() -> None:
    assert texts(Triplet("ToggleObject", "DeskLamp")) == ["GotoLocation DeskLamp", "ToggleObjectOn DeskLamp"]
    assert texts(Triplet("SliceObject", "Apple")) == ["GotoLocation Apple", "SliceObject Apple"]
    assert texts(Triplet("SliceObject", "Apple", "Fridge")) == [
        "GotoLocation Fridge Apple", "OpenObject Fridge", "SliceObject Apple", "CloseObject Fridge"]
    assert texts(Triplet("OpenObject", "Drawer")) == ["GotoLocation Drawer", "OpenObject Drawer"]
    assert texts(Triplet("CloseObject", "Drawer")) == ["GotoLocation Drawer", "CloseObject Drawer"]
    assert len(expand_all([Triplet("PickupObject", "Apple", "CounterTop"), Triplet("HeatObject", "Apple")])) == 11


def test_triplet_rejects_unknown_actions_and_low_actions_parse() -> None:
    with pytest.raises(ValueError):
        Triplet("FlyObject", "Apple")
    assert parse_low_action("pickupobject apple") == LowAction("PickupObject", "apple")
    assert parse_low_action("GotoLocation CounterTop Apple") == LowAction("GotoLocation", "CounterTop", "Apple")
    for bad in ("PickupObject Apple CounterTop", "Jump Apple", "", None, 3, "PickupObject"):
        assert parse_low_action(bad) is None
