"""Gymnasium spaces a suite's env declares, and how the conformance checker reads them.

A suite's env declares ``observation_space`` and ``action_space`` as Gymnasium envs do;
:func:`harness.check.conformance.check_suite` checks every observation it sees (at ``reset`` and after
every ``step``) against ``observation_space``, and every action the env judged valid against
``action_space`` (Gymnasium's ``check_env``, gymnasium/utils/env_checker.py ``check_env``:
``env.observation_space.contains(obs)`` after ``reset`` and ``step``).

Observations are usually dicts whose text and lists vary per episode, so these permissive
spaces are public (a plugin imports them from here):

- :class:`FreeText`: any string of at most ``max_length`` characters (``gymnasium.spaces.Text``
  limits the characters to its sampling charset; prose does not keep to one);
- :class:`TextList`: a list of strings; :class:`AnyValue`: pass-through data of a type;
- :class:`Record`: a ``Dict`` whose ``optional`` values may be ``None`` or absent (an image not
  rendered for an agent that reads none).

Action spaces say what an action *is*. A text action from a closed set (skills, moves) is a
:class:`FreeText` (or ``spaces.Text``): an unknown string must be refused (``action_ok=False``,
one invalid action counted). :class:`AnswerText` declares a **free-text answer**: any
non-empty text may be a valid answer, so the checker does not ask that an unknown string be
refused; it checks instead that an empty or unusable answer is refused or scored as such
(``action_ok=False`` and counted, or no success and no metric value above its worst end).
"""

from __future__ import annotations

import string
from typing import Any, Mapping

import numpy as np
from gymnasium import spaces

_CHARSET = string.ascii_letters + string.digits + " ,.'-_()"


class FreeText(spaces.Text):
    """Any ``str`` of at most ``max_length`` characters (instructions and scene text are not
    limited to a character set); samples are drawn from a small printable charset."""

    def __init__(self, max_length: int = 100_000, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.min_length}, {self.max_length})"


class AnswerText(FreeText):
    """A free-text answer as the action (a one-step QA suite's reply): any text may be a valid
    answer. See the module doc for what the conformance checker asks of such a suite."""


class TextList(spaces.Sequence):
    """A list (or tuple) of strings, e.g. a scene's numbered action list."""

    def __init__(self, seed: Any = None):
        super().__init__(FreeText(), seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, (list, tuple)) and all(isinstance(s, str) for s in x)

    def sample(self, *args: Any, **kwargs: Any) -> list[str]:
        return list(super().sample(*args, **kwargs))

    def __repr__(self) -> str:
        return "TextList()"


class AnyValue(spaces.Space):
    """Pass-through data the env forwards as it is (a simulator's raw observation dict, a
    coordinate dictionary): any value of ``kind``; samples are empty dicts."""

    def __init__(self, kind: type | tuple[type, ...] = dict, seed: Any = None):
        super().__init__(None, None, seed)
        self.kind = kind

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        return {}

    def contains(self, x: Any) -> bool:
        return isinstance(x, self.kind)

    def __repr__(self) -> str:
        return f"AnyValue({self.kind})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AnyValue) and other.kind == self.kind


class Record(spaces.Dict):
    """A ``Dict`` whose ``optional`` values may be ``None`` or absent: images are not rendered
    for an agent that reads none (reset option ``render=False``; gymnasium's own checks run with
    images on, where every key is present). Every value present must be in its subspace."""

    def __init__(self, required: Mapping[str, spaces.Space], optional: Mapping[str, spaces.Space] = (),
                 seed: Any = None):
        self.optional = tuple(dict(optional))
        super().__init__({**dict(required), **dict(optional)}, seed=seed)

    def contains(self, x: Any) -> bool:
        return _dict_outside(self, x, "") is None


def is_answer_space(space: Any) -> bool:
    """Whether ``space`` declares a free-text answer (:class:`AnswerText`)."""
    return isinstance(space, AnswerText)


def declared(space: Any) -> bool:
    return isinstance(space, spaces.Space)


def outside(space: spaces.Space, value: Any, path: str = "") -> str | None:
    """Where ``value`` is outside ``space`` (``"['text']: ..."``), None when it is inside."""
    if isinstance(space, spaces.Dict):
        return _dict_outside(space, value, path)
    if isinstance(space, spaces.Tuple) and isinstance(value, (tuple, list)) and len(value) == len(space.spaces):
        for i, (sub, v) in enumerate(zip(space.spaces, value)):
            where = outside(sub, v, f"{path}[{i}]")
            if where is not None:
                return where
        return None
    try:
        inside = bool(space.contains(value))
    except Exception:  # noqa: BLE001 - a value the space cannot even read is outside it
        inside = False
    return None if inside else f"{path or 'the value'}: {_brief(value)} not in {space!r}"


def _dict_outside(space: spaces.Dict, value: Any, path: str) -> str | None:
    optional = getattr(space, "optional", ())
    if not isinstance(value, Mapping):
        return f"{path or 'the value'}: a {type(value).__name__}, not a dict"
    extra = sorted(map(str, set(value) - set(space.spaces)))
    if extra:
        return f"{path or 'the value'}: key {extra[0]!r} is not in the declared space"
    for key, sub in space.spaces.items():
        if key not in value or value[key] is None and key in optional:
            if key not in optional:
                return f"{path}[{key!r}]: missing"
            continue
        where = outside(sub, value[key], f"{path}[{key!r}]")
        if where is not None:
            return where
    return None


def action_outside(space: spaces.Space, action: Any) -> str | None:
    """Where an action the env judged valid is outside its declared ``action_space``; None when
    inside. Numbers are compared by value (an agent's list or float array of whole numbers is
    a ``MultiDiscrete`` action); a text space's charset is its sampling alphabet, so only the
    length of a text action is checked (and an id into the env's action list is not)."""
    if isinstance(space, spaces.Text):
        if not isinstance(action, str):
            return None  # an env of text actions may also take an id into its action list
        if not space.min_length <= len(action) <= space.max_length:
            return f"{_brief(action)} has {len(action)} characters, outside {space!r}"
        return None
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.Discrete, spaces.MultiBinary)):
        try:
            arr = np.asarray(action, dtype=float)
        except (TypeError, ValueError):
            return f"{_brief(action)} is not numeric ({space!r})"
        if isinstance(space, spaces.Discrete):
            ok = arr.shape == () and float(arr).is_integer() and space.start <= arr < space.start + space.n
        elif isinstance(space, spaces.Box):
            ok = arr.shape == space.shape and bool(np.all(arr >= space.low) and np.all(arr <= space.high))
        elif isinstance(space, spaces.MultiDiscrete):
            ok = (arr.shape == space.shape and bool(np.all(arr == np.round(arr)))
                  and bool(np.all(arr >= space.start) and np.all(arr < space.start + space.nvec)))
        else:
            ok = arr.shape == tuple(np.atleast_1d(space.n)) and bool(np.all((arr == 0) | (arr == 1)))
        return None if ok else f"{_brief(action)} is outside {space!r}"
    return outside(space, action, "the action")


def _brief(value: Any, width: int = 60) -> str:
    if isinstance(value, np.ndarray):
        text = f"array(shape={value.shape}, dtype={value.dtype})"
    else:
        text = repr(value).replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."
