"""What the one-step video-QA suites (cfg_bench, procobject) share: their data folder, the env
that shows one question and takes one answer, the reading of a JSON reply, and the oracle.

- :func:`data_root`: ``suite.params.data_dir``, else the suite's environment variable, else what
  ``harness fetch SUITE`` laid out; else one line saying how to give it.
- :func:`read_json_list`: a question file, a JSON list, or one line saying what is wrong.
- :class:`OneStepEnv`: ``reset`` shows the episode's question (a missing video fails the
  episode's record, not the run: :class:`VideoQAEnv`); the one ``step`` scores the answer
  (:meth:`OneStepEnv.answer`, the suite's) and ends the episode. The env never decodes a video.
- :func:`json_object`: the JSON object a model's reply holds.
- :func:`one_run` and :func:`export_main`: the suites' exports of a stored run in their
  benchmark's official format (``python -m envs.SUITE.export OUT FILE``).
- :class:`ReferenceOracle`: the privileged agent that replies with what the env reveals to it
  (the reference answer), to check the pipeline; the suites (and the example plugin's
  ``example_qa``) say only how the reply is written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym

from harness.types import (
    INFO_ACTION_OK, INFO_ANSWER, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, INFO_VALUES, EpisodeSpec,
)


# --- data ------------------------------------------------------------------------------
def data_root(suite: str, data_dir: str | None, env_var: str, error: type[Exception]) -> Path:
    """The data folder of ``suite``, or ``error`` (one line) saying how to give it."""
    root = data_dir or os.environ.get(env_var)
    if not root:  # what `harness fetch SUITE` laid out, when it completed
        from harness.registry.datasets import fetched_dir

        fetched = fetched_dir(suite)
        root = str(fetched) if fetched is not None else None
    if not root:
        raise error(f"{suite} needs its data: set suite.params.data_dir=FOLDER or ${env_var} "
                    f"(harness fetch {suite} lays it out)")
    return Path(root).expanduser()


def read_json(path: Path, error: type[Exception], missing: type[Exception] | None = None) -> Any:
    """The JSON value of the file at ``path``; ``error`` (one line) when it is unreadable, and
    ``missing`` (default ``error``) when it is not there."""
    if not path.is_file():
        raise (missing or error)(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise error(f"{path}: not readable JSON ({str(exc).splitlines()[0][:200]})") from None


# --- replies ---------------------------------------------------------------------------
def strip_fence(text: str) -> str:
    """``text`` without a surrounding Markdown code fence (```` ```json ```` or ```` ``` ````)."""
    text = (text or "").strip()
    if text.startswith("```json"):
        text = text[len("```json"):]
    elif text.startswith("```"):
        text = text[3:]
    if text.endswith("```"):
        text = text[:-3]
    return text.strip()


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply holds: the whole reply (fence removed), or the one object of a JSON
    list holding exactly one, else its first ``{`` to its last ``}``; None when none is a JSON
    object. A list of several objects is no answer (which one would it be?)."""
    body = strip_fence(text)
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, dict):
            return value
        if isinstance(value, list):
            return None
    return None


# --- the env ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Answered:
    """How the one step went: what :meth:`OneStepEnv.answer` returns."""

    #: The per-episode values (``info["values"]``, the record's ``values``).
    values: Mapping[str, float | None]
    success: bool
    #: Not a valid answer (unreadable, empty): counted as an invalid action.
    invalid: bool
    feedback: str
    #: The answer text kept in the record (``extra["answer"]``).
    stored: str
    #: Further info keys (none by default).
    info: Mapping[str, Any] = field(default_factory=dict)


class OneStepEnv(gym.Env):
    """One question per episode: ``reset`` shows it, the one ``step`` answers it and ends it.

    A suite's env says what the agent sees (:meth:`observation`), what an oracle is shown
    (:meth:`privileged`) and how an answer is scored (:meth:`answer`)."""

    def __init__(self) -> None:
        self._episode: EpisodeSpec | None = None

    def check(self, episode: EpisodeSpec) -> None:
        """Raise when ``episode`` can't be shown (its record then holds the error)."""

    def observation(self, episode: EpisodeSpec) -> dict[str, Any]:
        raise NotImplementedError

    def privileged(self, episode: EpisodeSpec) -> Any:
        raise NotImplementedError

    def answer(self, episode: EpisodeSpec, action: Any) -> Answered:
        raise NotImplementedError

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        episode = (options or {}).get("episode")
        if not isinstance(episode, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        self.check(episode)
        self._episode = episode
        info = {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0,
                INFO_TASK_TYPE: episode.metadata["task_type"], INFO_ACTION_OK: True, INFO_FEEDBACK: "",
                INFO_TERMINATION: None}
        if (options or {}).get("privileged"):
            info[INFO_PRIVILEGED] = self.privileged(episode)
        return self.observation(episode), info

    def step(self, action: Any):
        if self._episode is None:
            raise RuntimeError("step before reset")
        a = self.answer(self._episode, action)
        info = {INFO_SUCCESS: bool(a.success), INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0,
                INFO_INVALID_ACTIONS: int(a.invalid), INFO_TASK_TYPE: self._episode.metadata["task_type"],
                INFO_ACTION_OK: not a.invalid, INFO_FEEDBACK: a.feedback, INFO_TERMINATION: "answered",
                INFO_VALUES: dict(a.values), INFO_ANSWER: a.stored, **a.info}
        return self.observation(self._episode), float(a.success), True, False, info

    def close(self) -> None:
        self._episode = None


class VideoQAEnv(OneStepEnv):
    """A :class:`OneStepEnv` over a video: ``metadata["video"]`` (the file found in the data
    folder, or None). A missing file fails the episode at ``reset`` (one line naming
    ``metadata[video_key]``); the env never decodes the video."""

    suite = "?"
    #: The metadata key naming the video as the question file gives it.
    video_key = "video"
    #: Where the video was looked for (the end of the error message).
    video_folder = "the data folder"

    def check(self, episode: EpisodeSpec) -> None:
        video = episode.metadata.get("video")
        if not video or not Path(video).is_file():
            raise FileNotFoundError(f"{self.suite} {episode.episode_id}: video "
                                    f"{episode.metadata[self.video_key]!r} is not in {self.video_folder}")


def text_of(action: Any) -> str:
    """A text action as given; anything else is the empty answer."""
    return action if isinstance(action, str) else ""


# --- exports ---------------------------------------------------------------------------
def one_run(out: str | Path, suite: str, run_id: str | None, error: type[Exception],
            split: str | None = None) -> tuple[Any, Any]:
    """``(records, runs)`` of the store at ``out``: the records of ``suite`` (and ``split``), of
    run ``run_id`` when given; ``error`` when they span several runs."""
    from harness.store import ResultStore

    with ResultStore(out, readonly=True) as store:
        df = store.frame()
        runs = store.runs()
    df = df[df["suite"] == suite]
    if split is not None:
        df = df[df["split"] == split]
    if run_id is not None:
        df = df[df["run_id"] == run_id]
    if df["run_id"].nunique() > 1:
        raise error(f"{out} holds {df['run_id'].nunique()} {suite} runs: name one with --run")
    return df, runs


def export_main(argv: list[str] | None, prog: str, doc: str, target: str,
                write: Callable[[argparse.Namespace], Any], errors: tuple[type[Exception], ...],
                options: Sequence[str] = ()) -> int:
    """``prog OUT TARGET [--data-dir FOLDER] [--run RUN_ID] [OPTIONS]``: print what ``write``
    wrote; bad input (``errors``) is one line and exit 2."""
    from harness.store import StoreError

    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument(target)
    for option in ("--data-dir", "--run", *options):
        ap.add_argument(option)
    a = ap.parse_args(argv)
    try:
        print(write(a))
    except (*errors, OSError, StoreError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


# --- the oracle ------------------------------------------------------------------------
class ReferenceOracle:
    """Replies with what the env reveals to a privileged agent (``info["privileged_state"]``),
    written by :meth:`reply`; checks the pipeline end to end."""

    name = "oracle"
    privileged = True
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, **values: Any) -> None:
        pass

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def reply(self, request: Any, revealed: Any) -> str:
        raise NotImplementedError

    def act(self, requests: Sequence[Any]) -> list[list[str]]:
        return [[self.reply(r, r.info[INFO_PRIVILEGED])] for r in requests]
