"""ProcObject-10K questions, read as the release lays them out.

Layout (a data folder, e.g. the one ``harness fetch procobject`` fills)::

    data/testing.json   the test split: a JSON list of question records (1,050 in the release)
    videos/...          the source videos, at each record's ``video_path`` (layout not confirmed)

A record: ``id`` (an integer), ``video_path`` (``<corpus>/<path>``), ``clip_start`` and
``clip_end`` (seconds into that video: the question is about this window), ``question``,
``answer``, ``evidence`` (``[[s, e], ...]`` in seconds *from the clip's start*), ``qa_type`` (one
of the five reasoning types), ``reasoning`` (the temporal-search pattern), ``source`` (the corpus:
CaptainCook4D, EgoPER, HoloAssist, COIN), ``domain``, and ``task``.

Where these facts come from. The project page's asset builder reads ``data/testing.json`` of the
release and uses every field above: WenliangGuo/ProcObject-10K-Page at
21702a847363a58df645ba9919805befb91fc212, tools/make_explorer.py:80 (the file), :88-99 (``id``,
``clip_start``/``clip_end``, ``video_path`` split into corpus and path, ``evidence[0]`` used as a
time inside the cut clip: so evidence is clip-relative), :109-112 (``qa_type``, ``reasoning``,
``source``, ``domain``, ``task``, ``question``, ``answer``); its generated static/data/explorer.js
shows the values (``"qa_type": "Precondition Grounding"``, ``"reasoning": "Needle-in-a-Haystack"``).
The code repository (WenliangGuo/ProcObject-10K) and the hub dataset were not readable in this
build; where the videos sit in the hub dataset is not confirmed (:func:`video_file` tries
``videos/<video_path>`` then ``<video_path>``).

Breakdowns: the five reasoning types (:data:`QA_TYPES`, by their key) and the two search patterns
(:data:`PATTERNS`). An unknown value of either is refused (one line), not filed under "other".
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from envs.video_qa import read_json

#: ``qa_type`` value -> breakdown key (the paper's five reasoning types).
QA_TYPES: Mapping[str, str] = {
    "Precondition Grounding": "preconditions",
    "Object State Evolution": "state_evolution",
    "Counterfactual Reasoning": "counterfactuals",
    "Mistake Recognition": "mistakes",
    "Readiness Assessment": "readiness",
}
#: ``reasoning`` value -> breakdown key (the temporal-search pattern).
PATTERNS: Mapping[str, str] = {"Needle-in-a-Haystack": "needle", "Multi-hop Reasoning": "multi_hop"}

SPLIT_FILES: Mapping[str, str] = {"test": "data/testing.json"}
DEFAULT_SPLIT = "test"
#: Questions in the released test split.
TEST_SIZE = 1050


class DataError(ValueError):
    """One-line description of bad input (the CLI prints it and exits 2)."""


class MissingData(DataError, FileNotFoundError):
    """The data is not here (no folder given, a folder without its files): not bad input, so
    ``harness run --dry-run`` lists it with every other missing prerequisite."""


Span = tuple[float, float]


@dataclass(frozen=True)
class Item:
    qid: str
    video_path: str
    clip_start: float
    clip_end: float
    question: str
    answer: str
    #: Reference spans, seconds from the clip's start, as given (not merged).
    evidence: tuple[Span, ...]
    qa_type: str
    reasoning: str
    source: str = ""
    domain: str = ""
    task: str = ""

    @property
    def duration(self) -> float:
        return self.clip_end - self.clip_start

    @property
    def type_key(self) -> str:
        return QA_TYPES[self.qa_type]

    @property
    def pattern_key(self) -> str:
        return PATTERNS[self.reasoning]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _spans(raw: Any, where: str) -> tuple[Span, ...]:
    if not isinstance(raw, list):
        raise DataError(f"{where}: 'evidence' must be a list of [start, end] pairs")
    out = []
    for k, pair in enumerate(raw):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise DataError(f"{where}: evidence[{k}] is not a [start, end] pair")
        s, e = _number(pair[0]), _number(pair[1])
        if s is None or e is None:
            raise DataError(f"{where}: evidence[{k}] holds a non-number")
        if s < 0 or e < s:
            raise DataError(f"{where}: evidence[{k}] = [{s}, {e}] is negative or reversed")
        out.append((s, e))
    return tuple(out)


def _choice(value: Any, table: Mapping[str, str], field: str, where: str) -> str:
    if value not in table:
        close = difflib.get_close_matches(str(value), list(table), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise DataError(f"{where}: unknown {field} {value!r}{hint}")
    return value


def parse_item(rec: Any, where: str) -> Item:
    """One record, checked; :class:`DataError` names ``where`` and the problem."""
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}")
    if isinstance(rec.get("id"), bool) or not isinstance(rec.get("id"), (int, str)) or str(rec["id"]).strip() == "":
        raise DataError(f"{where}: 'id' must be an integer or a string")
    for key in ("video_path", "question", "answer"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise DataError(f"{where}: {key!r} must be a non-empty string")
    start, end = _number(rec.get("clip_start")), _number(rec.get("clip_end"))
    if start is None or end is None or start < 0 or end <= start:
        raise DataError(f"{where}: clip_start/clip_end must be numbers with 0 <= clip_start < clip_end")
    return Item(qid=str(rec["id"]).strip(), video_path=rec["video_path"].strip(), clip_start=start, clip_end=end,
                question=rec["question"], answer=rec["answer"], evidence=_spans(rec.get("evidence"), where),
                qa_type=_choice(rec.get("qa_type"), QA_TYPES, "qa_type", where),
                reasoning=_choice(rec.get("reasoning"), PATTERNS, "reasoning", where),
                source=str(rec.get("source") or ""), domain=str(rec.get("domain") or ""),
                task=str(rec.get("task") or ""))


def load_items(root: str | Path, split: str = DEFAULT_SPLIT) -> list[Item]:
    """Every record of ``split`` under ``root``; any malformed record fails the file with one line."""
    if split not in SPLIT_FILES:
        raise DataError(f"unknown ProcObject-10K split {split!r} (splits: {', '.join(SPLIT_FILES)})")
    path = Path(root) / SPLIT_FILES[split]
    data = read_json(path, DataError, MissingData)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of question records")
    out = [parse_item(rec, f"{path} record {i}") for i, rec in enumerate(data)]
    seen: dict[str, int] = {}
    for i, item in enumerate(out):
        if item.qid in seen:
            raise DataError(f"{path} record {i}: id {item.qid} repeats record {seen[item.qid]}")
        seen[item.qid] = i
    return out


def breakdown(items: Iterable[Item]) -> dict[str, dict[str, int]]:
    """Counts per reasoning type and per search pattern (every key present, zeros included)."""
    items = list(items)
    return {"qa_type": {k: sum(1 for i in items if i.type_key == k) for k in QA_TYPES.values()},
            "pattern": {k: sum(1 for i in items if i.pattern_key == k) for k in PATTERNS.values()}}


def video_file(root: str | Path, item: Item) -> Path | None:
    """The source video of ``item``: ``<root>/videos/<video_path>``, else ``<root>/<video_path>``, else None."""
    for candidate in (Path(root) / "videos" / item.video_path, Path(root) / item.video_path):
        if candidate.is_file():
            return candidate
    return None
