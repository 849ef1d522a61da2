"""The household image as a planner gets it: 500 px (EmbodiedBench EBAlfEnv.py:97
``resolution=500``, b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04). The default (``image=frame``)
holds only what a camera frame shows, no text (EmbodiedBench's default is no detection boxes:
eb_alfred_evaluator.py:57 ``detection_box`` False); ``image=annotated`` is labelled with the
action list's names."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import envs.eb_alfred.env as env_mod
from envs.eb_alfred.suite import EBAlfredSuite
from envs.eb_alfred.skills import parse_skill
from envs.household import render
from envs.household.observe import receptacles_in_view, render_frame, start_view
from PIL import ImageDraw


def test_image_is_the_planner_size_and_labels_are_action_names(data_dir: Path, monkeypatch) -> None:
    suite = EBAlfredSuite(data_dir=str(data_dir), generated_per_split=0, image="annotated")
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


def _without_text(monkeypatch, draw_fn):
    """``draw_fn()`` with Pillow's text drawing switched off: the image without its text layer."""
    with monkeypatch.context() as m:
        m.setattr(ImageDraw.ImageDraw, "text", lambda self, *a, **k: None)
        return draw_fn()


def test_frame_holds_no_text_open_fridge_and_held_object(world_of, monkeypatch) -> None:
    w = world_of(("Fridge_1", None), ("Apple_1", "Fridge_1"), ("Egg_1", "Fridge_1"), ("Mug_1", None),
                 holding="Mug_1", at="Fridge_1")
    w.objects["Fridge_1"].is_open = True
    w.objects["Apple_1"].cooled = True
    frame = render_frame(w, size=500)
    assert np.array_equal(frame, _without_text(monkeypatch, lambda: render_frame(w, size=500)))
    # The annotated image does carry a text layer ("Fridge_1 (open)", "holding Mug_1"): the check can fail.
    annotated = render(w, size=500)
    assert not np.array_equal(annotated, _without_text(monkeypatch, lambda: render(w, size=500)))
    # Drawn states: the open door differs from the closed one, the held object from empty hands;
    # the bookkeeping mark (cooled) draws nothing.
    w.objects["Fridge_1"].is_open = False
    assert not np.array_equal(frame, render_frame(w, size=500))
    w.objects["Fridge_1"].is_open = True
    w.holding = None
    w.objects["Mug_1"].parent = "Fridge_1"
    assert not np.array_equal(frame, render_frame(w, size=500))
    w.objects["Mug_1"].parent, w.holding = None, "Mug_1"
    w.objects["Apple_1"].cooled = False
    assert np.array_equal(frame, render_frame(w, size=500))


def test_default_env_image_has_no_text_layer(data_dir: Path, monkeypatch) -> None:
    suite = EBAlfredSuite(data_dir=str(data_dir), generated_per_split=0)
    env = suite.make_env()
    env.reset(options={"episode": suite.episodes("base")[5]})
    for action in ("find a Fridge", "open the Fridge", "find a Cup", "pick up the Cup", "find a Fridge"):
        obs, *_ = env.step(action)
    assert env.world.holding is not None and env.world.objects[env.world.root(env.world.at)].is_open
    assert np.array_equal(obs["image"], _without_text(monkeypatch, env.render))


def test_reset_frame_shows_the_receptacles_in_view_from_the_start_pose(data_dir: Path) -> None:
    suite = EBAlfredSuite(data_dir=str(data_dir), generated_per_split=0)
    env = suite.make_env()
    spec = suite.episodes("base")[0]
    obs, _ = env.reset(options={"episode": spec})
    pose = start_view(env.world, spec.metadata["scene"]["start_pose"])
    seen = receptacles_in_view(env.world, pose)
    assert seen, "the start pose of base/00 faces receptacles"
    empty = render_frame(type(env.world)(env.world.floor_plan, 0, None, {}), size=500, pose=pose)
    assert not np.array_equal(obs["image"], empty)
    # The nearest receptacle is drawn last, over the others: its projected centre is drawn on,
    # and its type's colour is in the image.
    k, u, v, _ = seen[-1]
    from envs.household.observe import _colour
    x, y = min(int(250 * (1 + u)), 499), min(int(250 * (1 - v)), 499)
    assert tuple(obs["image"][y, x]) != tuple(empty[y, x])
    assert (obs["image"].reshape(-1, 3) == np.array(_colour(env.world.objects[k].type))).all(axis=1).any()
    # After find, the image shows what the agent faces instead.
    obs2, *_ = env.step(f"find a {env.world.objects[k].type}")
    assert not np.array_equal(obs["image"], obs2["image"])
