"""Failure rules of ALFRED's task family, shared by the suites whose tasks are ALFRED's.

A suite's failure reader (:class:`harness.interfaces.FailureRules`) is its action
language (:meth:`AlfredTaskRules.read`, in the suite's own ``failures`` module) plus
these task rules, which read the task's ALFRED ``pddl_params`` (``object_target``,
``parent_target``, ``mrecep_target``, ``toggle_target``, ``object_sliced``) and the
history's generic steps. Object names compare by type: an instance suffix
(``Cabinet_8``) is dropped, a ``Basin`` suffix too (``find a Sink`` reaches the
``SinkBasin``), case is ignored.

The classes these rules name (:data:`FAILURE_CLASSES`, which both suites' plugins declare;
applied after the core's generic ones of :mod:`harness.scoring.failures`, in this order):

5. ``hallucinated_object`` - at least half of the invalid environment actions
   (and at least one) named an object absent from the scene. An object type is
   absent once an action on it was answered that the scene has none; every
   action naming that type (before or after) counts.

6. ``target_not_found`` - the task's target object (``object_target``) was never
   reached: no successful action names its type.
7. ``target_not_picked`` - the target was reached (a successful ``find`` /
   ``open`` naming it) but never picked up.
8. ``skipped_step`` - the target (or, for movable-receptacle tasks, the
   movable receptacle) was put down at the task's receptacle without the
   required step done before: clean (target put down at a Sink, then the
   Faucet turned on), heat (put down at a Microwave, then the Microwave turned
   on), cool (put down at a Fridge), slice (a successful slice of the target);
   for ``look_at_obj_in_light``: the lamp never turned on while holding the
   target (judged at the end of the episode).
9. ``wrong_receptacle`` - the target (or the movable receptacle) was put down,
   but never at the task's receptacle (``parent_target``) nor at a place the
   task needs on the way (a Sink / Microwave / Fridge for clean / heat / cool,
   the movable receptacle).
10. ``out_of_steps`` (a generic class) - also when the step limit ended the episode after
    the task's target (any object, without the task's facts) was picked up.

An episode without a stored history is left to the core (``no_history``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from harness.interfaces import FailedEpisode, FailureClass

#: The classes ALFRED's family adds to the core's generic ones (order between them: 100-799).
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    FailureClass("hallucinated_object", "acted on objects absent from the scene", 100, "#ff725c"),
    FailureClass("target_not_found", "never found the target object", 110, "#efb118"),
    FailureClass("target_not_picked", "found the target but never picked it up", 120, "#a463f2"),
    FailureClass("skipped_step", "skipped clean/heat/cool/slice/toggle before placing", 130, "#9c6b4e"),
    FailureClass("wrong_receptacle", "put the object down at the wrong receptacle", 140, "#4269d0"),
)

#: The verbs of :class:`HistoryStep` these rules reason about (anything else is ``other``).
STEP_VERBS: tuple[str, ...] = ("find", "pick", "put", "open", "close", "on", "off", "slice", "other")


@dataclass(frozen=True)
class HistoryStep:
    """One ``(action, feedback)`` of an episode's stored history, as its suite reads it."""

    #: One of :data:`STEP_VERBS`.
    verb: str
    #: The object type the action names, normalised as :func:`obj_type` does; None: none.
    obj: str | None
    #: The action succeeded (judged from its feedback).
    ok: bool
    #: The feedback says the named object does not exist in the scene.
    absent: bool

#: Task families (ALFRED task_type) and the step they require before placing.
REQUIRED_STEP = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
}
#: Where each step puts the object (ALFRED's clean/heat/cool wrapper rules).
STEP_PLACE = {"clean": "sink", "heat": "microwave", "cool": "fridge"}
STEP_TOGGLE = {"clean": "faucet", "heat": "microwave"}


def obj_type(name: str) -> str:
    """``Cabinet_8`` -> ``cabinet``; ``SinkBasin`` -> ``sink``; ``AppleSliced`` -> ``apple``."""
    base = name.split("_", 1)[0].strip().casefold()
    for suffix in ("basin", "sliced"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    return base


class AlfredTaskRules:
    """The task rules of ALFRED's family; a suite's subclass reads its action language."""

    def read(self, action: Any, feedback: str) -> HistoryStep:
        """One stored history entry in the suite's action language: verb, object, success, absent."""
        raise NotImplementedError

    def read_history(self, history: Sequence[Sequence[Any]]) -> list[HistoryStep]:
        return [self.read(item[0], str(item[1] if len(item) > 1 else "")) for item in history]

    def classify(self, episode: FailedEpisode) -> str | None:
        """Rules 5-10 of the module docstring (None: the core's generic rules decide)."""
        if not episode.history:
            return None
        steps = self.read_history(episode.history)
        absent = {s.obj for s in steps if not s.ok and s.absent}
        env_invalid = [s for s in steps if not s.ok]
        hallucinated = sum(1 for s in env_invalid if s.obj in absent)
        if hallucinated and 2 * hallucinated >= len(env_invalid):
            return "hallucinated_object"
        if episode.task:
            verdict = self.task_failure(steps, episode.task, episode.task_type)
            if verdict is not None:
                return verdict
            target = self.target(episode.task)
            picked_target = any(s.ok and s.verb == "pick" and s.obj == target for s in steps)
        else:
            picked_target = any(s.ok and s.verb == "pick" for s in steps)
        if episode.termination == "max_steps" and picked_target:
            return "out_of_steps"
        return None

    def task_of(self, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return metadata.get("pddl_params") or None

    def target(self, task: Mapping[str, Any]) -> str:
        return obj_type(str(task.get("object_target") or ""))

    def task_failure(self, steps: Sequence[HistoryStep], task: Mapping[str, Any], task_type: str) -> str | None:
        """Rules 6-9 for one read history (None: none of them applies)."""
        target = self.target(task)
        parent = obj_type(str(task.get("parent_target") or ""))
        mrecep = obj_type(str(task.get("mrecep_target") or ""))
        toggle = obj_type(str(task.get("toggle_target") or ""))
        sliced = bool(task.get("object_sliced"))
        if not target:
            return None
        if not any(s.ok and s.obj == target for s in steps):
            return "target_not_found"
        if not any(s.ok and s.verb == "pick" and s.obj == target for s in steps):
            return "target_not_picked"

        # Walk the history: what is held, where the agent stands, which steps are done.
        carried = {target, mrecep} - {""}
        holding: str | None = None
        at: str | None = None
        done = {"clean": False, "heat": False, "cool": False, "slice": False}
        placed_at: list[tuple[str, str | None, bool]] = []  # (object, place, required step done then)
        in_place: dict[str, str | None] = {}  # object type -> where it was last put down
        lamp_on_holding = False
        required = REQUIRED_STEP.get(task_type)
        for s in steps:
            if not s.ok:
                continue
            if s.verb == "find":
                at = s.obj
            elif s.verb == "pick":
                holding = s.obj
                in_place.pop(s.obj or "", None)
            elif s.verb == "slice" and s.obj == target:
                done["slice"] = True
            elif s.verb == "put":
                if s.obj is not None:  # a put that names the receptacle
                    at = s.obj
                if holding is not None:
                    ready = (required is None or done[required]) and (not sliced or done["slice"])
                    if holding in carried:
                        placed_at.append((holding, at, ready))
                    in_place[holding] = at
                holding = None
            elif s.verb == "on":
                # clean: the target in a sink, then the faucet on; heat: in the microwave, then it on.
                for step, place in STEP_PLACE.items():
                    if STEP_TOGGLE.get(step) == s.obj and in_place.get(target) == place:
                        done[step] = True
                if toggle and s.obj == toggle and holding == target:
                    lamp_on_holding = True
            if in_place.get(target) == "fridge":
                done["cool"] = True
        if task_type == "look_at_obj_in_light":
            return "skipped_step" if not lamp_on_holding else None
        final = mrecep if mrecep else target
        at_parent = [p for p in placed_at if p[0] == final and p[1] == parent]
        if parent and at_parent and not any(ready for _, _, ready in at_parent):
            return "skipped_step"
        if parent and not at_parent:
            allowed = {parent, mrecep} | ({STEP_PLACE[required]} if required else set())
            if any(obj == final and place not in allowed for obj, place, _ in placed_at):
                return "wrong_receptacle"
            if mrecep and any(obj == target and place not in allowed for obj, place, _ in placed_at):
                return "wrong_receptacle"
        return None
