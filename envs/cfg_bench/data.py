"""CFG-Bench questions, captions and videos, read as the public release lays them out.

Layout (a data folder, e.g. the one ``harness fetch cfg_bench`` fills)::

    qa_pairs.json   a JSON list of question items
    caption.json    a JSON list (or JSON Lines) of {video_name, caption} records
    videos/         the clips (distributed on request; any depth, matched by file name)

What the originals' code confirms (CFG-Bench/CFG-Bench at b50bb6dbaa53f80444792e4c4924b4b48365b14d):

- the evaluators read ``./qa_pairs.json`` and ``./videos`` and the judge ``./caption.json``
  (the ``--input``/``--video-dir`` defaults of evaluate/open_source_mllms/eval_qwen_local.py
  ``main``; ``--qa-file``/``--caption-file`` of judge/judge_deepseek_r1.py ``main``);
- an item carries ``video_name``, ``question``, ``options`` (present and non-empty for multiple
  choice, full option texts), ``correct_answer`` and ``task_type``; an optional ``question_key``
  names it (judge_deepseek_r1.py:61-67); the eleven codes and their order are
  eval_qwen_local.py:55 (``TASK_TYPE_ORDER``), the multiple-choice ones judge_deepseek_r1.py:18;
- videos are indexed by file name under the video folder, searched recursively, with a
  lower-case fallback (eval_qwen_local.py:74-85);
- a caption record is keyed by the base name of ``video_name`` (or ``video_path``/``path``) and
  its text is ``caption`` (or ``caption_en``, or ``annotations.caption``); the file may be a JSON
  list or JSON Lines (judge_deepseek_r1.py:83-114).

What could not be confirmed here: the released data files themselves (the hub dataset was not
readable in this build). So this module reads exactly the schema above and refuses anything
else with one line (:class:`DataError`); docs/cfg_bench.md shows the schema.

Tiers (the paper's four cognitive abilities, each task in one):
Physical Interaction (FAU, CIA), Temporal-Causal Relation (TR, CR, CRS), Intentional
Understanding (FI, GI, CIT), Evaluative Judgment (PM, SE, CEU).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from envs.video_qa import read_json

#: The eleven task codes, in the originals' order (eval_qwen_local.py:55).
TASKS: tuple[str, ...] = ("FAU", "CIA", "TR", "CR", "CRS", "FI", "GI", "CIT", "PM", "SE", "CEU")

#: Tier -> its tasks (split names are these keys).
TIERS: Mapping[str, tuple[str, ...]] = {
    "physical_interaction": ("FAU", "CIA"),
    "temporal_causal": ("TR", "CR", "CRS"),
    "intentional": ("FI", "GI", "CIT"),
    "evaluative": ("PM", "SE", "CEU"),
}

#: Task -> tier.
TIER_OF: Mapping[str, str] = {task: tier for tier, tasks in TIERS.items() for task in tasks}

#: Multiple-choice tasks (judge_deepseek_r1.py:18, ``CLOSE_ENDED_TASK_TYPES``); the other eight are open-ended.
MC_TASKS: frozenset[str] = frozenset({"FAU", "TR", "CR"})

#: Open-ended tasks whose question carries a false premise; an answer that accepts it scores 0
#: (judge/CFG_JUDGE.py:19-27, the judge's first phase).
GATED_TASKS: frozenset[str] = frozenset({"CIA", "CRS"})

#: Every split name: ``all``, the four tiers, and each task code in lower case.
SPLITS: tuple[str, ...] = ("all", *TIERS, *(t.lower() for t in TASKS))

QA_FILE = "qa_pairs.json"
CAPTION_FILE = "caption.json"
VIDEO_DIR = "videos"
#: Video suffixes the originals index (eval_qwen_local.py:54).
VIDEO_SUFFIXES = frozenset({".mp4", ".avi", ".mov", ".mkv", ".wmv", ".flv", ".webm", ".m4v"})


class DataError(ValueError):
    """One-line description of bad input (the CLI prints it and exits 2)."""


class MissingData(DataError, FileNotFoundError):
    """The data is not here (no folder given, a folder without its files): not bad input, so
    ``harness run --dry-run`` lists it with every other missing prerequisite."""


@dataclass(frozen=True)
class Question:
    """One CFG-Bench item."""

    #: Stable id: the item's ``question_key`` if it has one, else ``<TASK>-<12 hex>`` of
    #: ``video_name||question`` (the same pair the originals key on, judge_deepseek_r1.py:61-67).
    qid: str
    video_name: str
    question: str
    task_type: str
    correct_answer: str
    #: Full option texts (multiple choice only; empty for open-ended tasks).
    options: tuple[str, ...] = ()
    #: The item's ``question_key`` field, or "".
    question_key: str = ""

    @property
    def tier(self) -> str:
        return TIER_OF[self.task_type]

    @property
    def is_mc(self) -> bool:
        return self.task_type in MC_TASKS

    @property
    def gated(self) -> bool:
        return self.task_type in GATED_TASKS

    def source_key(self) -> str:
        """The key the originals' judge matches answers on (judge_deepseek_r1.py:61-67)."""
        return self.question_key or f"{self.video_name.strip()}||{self.question.strip()}"


def _qid(task: str, video_name: str, question: str, question_key: str) -> str:
    if question_key:
        return question_key
    digest = hashlib.sha1(f"{video_name.strip()}||{question.strip()}".encode()).hexdigest()[:12]
    return f"{task}-{digest}"


def parse_item(item: Any, where: str) -> Question:
    """One ``qa_pairs.json`` item, checked; :class:`DataError` names ``where`` and the problem."""
    if not isinstance(item, dict):
        raise DataError(f"{where}: expected an object, got {type(item).__name__}")
    for key in ("video_name", "question", "task_type", "correct_answer"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise DataError(f"{where}: {key!r} must be a non-empty string")
    task = item["task_type"].strip().upper()
    if task not in TASKS:
        close = difflib.get_close_matches(task, TASKS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise DataError(f"{where}: unknown task_type {item['task_type']!r}{hint}; tasks: {', '.join(TASKS)}")
    raw_options = item.get("options") or []
    if not isinstance(raw_options, list) or not all(isinstance(o, str) and o.strip() for o in raw_options):
        raise DataError(f"{where}: 'options' must be a list of non-empty strings")
    options = tuple(raw_options)
    answer = item["correct_answer"]
    if task in MC_TASKS:
        if len(options) < 2:
            raise DataError(f"{where}: {task} is multiple choice and needs at least two options")
        stripped = [o.strip() for o in options]
        if len(set(stripped)) != len(stripped):
            raise DataError(f"{where}: two options have the same text")
        if answer.strip() not in stripped:
            raise DataError(f"{where}: correct_answer is not one of the options")
    elif options:
        raise DataError(f"{where}: {task} is open-ended but the item has options")
    key = item.get("question_key") or ""
    if not isinstance(key, str):
        raise DataError(f"{where}: 'question_key' must be a string")
    return Question(qid=_qid(task, item["video_name"], item["question"], key.strip()),
                    video_name=item["video_name"].strip(), question=item["question"], task_type=task,
                    correct_answer=answer, options=options, question_key=key.strip())


def load_questions(root: str | Path) -> list[Question]:
    """Every item of ``<root>/qa_pairs.json``; any malformed item fails the whole file with one line."""
    path = Path(root) / QA_FILE
    data = read_json(path, DataError, MissingData)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of question items")
    out = [parse_item(item, f"{path} item {i}") for i, item in enumerate(data)]
    seen: dict[str, int] = {}
    for i, q in enumerate(out):
        if q.qid in seen:
            raise DataError(f"{path} item {i}: the same question as item {seen[q.qid]} (id {q.qid})")
        seen[q.qid] = i
    return out


def select(questions: Iterable[Question], split: str) -> list[Question]:
    """The questions of ``split``: ``all``, a tier (``temporal_causal``), or a task (``crs`` / ``CRS``)."""
    name = split.strip()
    if name == "all":
        return list(questions)
    if name in TIERS:
        tasks = set(TIERS[name])
    elif name.upper() in TASKS:
        tasks = {name.upper()}
    else:
        close = difflib.get_close_matches(name.lower(), SPLITS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise DataError(f"unknown CFG-Bench split {split!r}{hint} (splits: {', '.join(SPLITS)})")
    return [q for q in questions if q.task_type in tasks]


def _caption_of(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    name = item.get("video_name") or item.get("video_path") or item.get("path")
    text = item.get("caption") or item.get("caption_en")
    if not text and isinstance(item.get("annotations"), dict):
        text = item["annotations"].get("caption")
    if not isinstance(name, str) or not name.strip() or not isinstance(text, str) or not text.strip():
        return None
    return Path(name.strip()).name, text.strip()


def load_captions(root: str | Path) -> dict[str, str]:
    """``<root>/caption.json``: video file name -> caption (JSON list or JSON Lines, the
    fields judge_deepseek_r1.py:83-114 accepts). A missing file is :class:`DataError`;
    records without a name or caption are skipped, as there."""
    path = Path(root) / CAPTION_FILE
    if not path.is_file():
        raise DataError(f"{path}: no such file (the judge reads each video's caption from it)")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else None
    except ValueError:
        records = None
    if records is None:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    raise DataError(f"{path} line {n}: neither a JSON list nor JSON Lines") from None
    out: dict[str, str] = {}
    for record in records:
        pair = _caption_of(record)
        if pair:
            out[pair[0]] = pair[1]
    return out


def video_index(root: str | Path) -> dict[str, Path]:
    """File name (and its lower-case form) -> path, for every video under ``<root>/videos``."""
    folder = Path(root) / VIDEO_DIR
    index: dict[str, Path] = {}
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.suffix.lower() in VIDEO_SUFFIXES and path.is_file():
                index.setdefault(path.name, path)
                index.setdefault(path.name.lower(), path)
    return index


def find_video(index: Mapping[str, Path], video_name: str) -> Path | None:
    """The video of ``video_name`` (its base name, then lower case), or None."""
    key = Path(video_name.strip()).name
    return index.get(key) or index.get(key.lower())


def caption_for(captions: Mapping[str, str], question: Question) -> str | None:
    """The caption of ``question``'s video (by file name, as judge_deepseek_r1.py:57-58 keys it),
    or None. A question without a caption can't be judged: the suite records it as not judged
    (``no_caption``) and counts it, where the originals write an error and drop it from the mean."""
    return captions.get(Path(question.video_name).name)
