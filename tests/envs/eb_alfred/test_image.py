"""The household image as a planner gets it: 500 px (EmbodiedBench EBAlfEnv.py:97
``resolution=500``, b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04), labelled with the action list's names."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import envs.eb_alfred.env as env_mod
from envs.eb_alfred.suite import EBAlfredSuite
from envs.eb_alfred.skills import parse_skill
from envs.household import render


def test_image_is_the_planner_size_and_labels_are_action_names(data_dir: Path, monkeypatch) -> None:
    suite = EBAlfredSuite(data_dir=str(data_dir), generated_per_split=0)
    env = suite.make_env()
    labels: list[str] = []
    real = env_mod.render

    def spy(world, size, name=None):
        assert name is not None
        labels.extend(name(k) for k in world.objects)
        return real(world, size=size, name=name)

    monkeypatch.setattr(env_mod, "render", spy)
    obs, _ = env.reset(options={"episode": suite.episodes("base")[5]})
    assert obs["image"].shape == (500, 500, 3) and obs["image"].dtype == np.uint8
    for action in ("find a Cabinet", "find a Sink", "find a Cup"):
        obs, *_ = env.step(action)
    targets = {parse_skill(a).target.casefold() for a in obs["actions"] if parse_skill(a).target}
    types = {o.type for o in env.world.objects.values()}
    assert labels
    # Every label is a name the action list uses, or the bare type of an object the list
    # does not name (a Window); never an engine id such as 'CounterTop_1'.
    unknown = {x for x in labels if x.casefold() not in targets and x not in types}
    assert not unknown, sorted(unknown)[:10]
    assert "CounterTop" in labels and "CounterTop_1" not in labels


def test_labels_are_drawn_from_the_namer(world_of) -> None:
    w = world_of(("CounterTop_1", None), ("Apple_1", "CounterTop_1"), at="CounterTop_1")
    a = render(w, size=500)
    b = render(w, size=500, name=lambda k: k.split("_")[0])
    assert a.shape == b.shape == (500, 500, 3) and not np.array_equal(a, b)
