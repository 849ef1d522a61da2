"""Shared helpers for the household engine tests: hand-built worlds."""

from __future__ import annotations

from typing import Callable

import pytest

from envs.household import Obj, TaskSpec, World, alfred_constants


def make_obj(obj_id: str, parent: str | None = None, **flags: bool) -> Obj:
    """An object whose capability flags follow ALFRED's constants for its type."""
    c = alfred_constants()
    t = obj_id.rsplit("_", 1)[0]
    base = dict(
        receptacle=t in c.val_receptacle_objects,
        openable=t in c.openable,
        toggleable=t in c.toggleable,
        sliceable=t in c.sliceable,
        pickupable=t in c.pickupable,
    )
    base.update(flags)
    return Obj(obj_id, t, parent, **base)


@pytest.fixture
def world_of() -> Callable[..., World]:
    """``world_of(("Apple_1", "CounterTop_1"), ("CounterTop_1", None), holding=..., at=...)``."""

    def build(*specs: tuple, holding: str | None = None, at: str | None = None,
              task: TaskSpec | None = None) -> World:
        objects = {}
        for spec in specs:
            obj_id, parent, *rest = spec
            flags = rest[0] if rest else {}
            objects[obj_id] = make_obj(obj_id, parent, **flags)
        return World(1, 0, task, objects, holding=holding, at=at)

    return build
