"""The episode browser's data: one light summary line per episode (on the page) and each
episode's details (instruction, step history, agent calls as chat turns, links to the frames the
model saw and the videos) for the chunk files loaded on demand; the search index over them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.registry.catalog import SUITES

#: Episodes per detail file (``data/<build>/episodes-<k>.js``).
CHUNK = 50
#: Episodes per page of the browser's list.
PAGE = 100


def _artifact_file(path: Any, store_dir: Path) -> Path:
    """Where a recorded artifact lies: an absolute path as it is; a relative one is
    relative to the store's folder (how runs record them). Stores written before that
    kept paths relative to the run's working directory (``out/artifacts/...``): when
    the store-relative file does not exist, the tail from an ``artifacts`` folder is
    tried against the store's folder, then the path against this working directory."""
    p = Path(str(path))
    if p.is_absolute():
        return p
    candidates = [store_dir / p]
    candidates += [store_dir.joinpath(*p.parts[i:]) for i, part in enumerate(p.parts) if part == "artifacts" and i]
    candidates.append(Path.cwd() / p)
    return next((c for c in candidates if c.exists()), candidates[0])


def _artifact_link(path: Any, report_dir: Path, store_dir: Path) -> str:
    """A relative link from the report folder to a store artifact (see :func:`_artifact_file`)."""
    return Path(os.path.relpath(os.path.abspath(_artifact_file(path, store_dir)),
                                os.path.abspath(report_dir))).as_posix()


def _messages(prompt: Any) -> list[dict[str, Any]] | None:
    """A recorded prompt as chat turns ``[{role, parts: [{type: text|image, ...}]}]``.

    Prompts are stored as text or as the JSON of the model's messages (role and
    content parts, images replaced by their size); plain text is one user turn.
    """
    if prompt is None or (isinstance(prompt, float) and math.isnan(prompt)):
        return None
    value = prompt
    if isinstance(prompt, str):
        try:
            value = json.loads(prompt) if prompt.lstrip()[:1] in "[{" else prompt
        except ValueError:
            value = prompt
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        turns = []
        for m in value:
            content = m.get("content")
            parts = []
            for part in (content if isinstance(content, list) else [content]):
                if isinstance(part, dict) and part.get("type") in ("image", "image_url"):
                    parts.append({"type": "image", "size": part.get("size")})
                elif isinstance(part, dict):
                    parts.append({"type": "text", "text": str(part.get("text", ""))})
                elif part is not None:
                    parts.append({"type": "text", "text": str(part)})
            turns.append({"role": str(m["role"]), "parts": parts})
        return turns
    return [{"role": "user", "parts": [{"type": "text", "text": str(value)}]}]


def _call_payload(t: Mapping[str, Any], report_dir: Path, store_dir: Path) -> dict[str, Any]:
    images = []
    for im in t.get("images") or []:
        entry = {"name": im.get("name"), "size": [im.get("width"), im.get("height")]}
        if im.get("path"):
            entry["src"] = _artifact_link(im["path"], report_dir, store_dir)
        else:
            entry["skipped"] = im.get("skipped") or "not recorded"
        images.append(entry)
    return {"call": t["call"], "step": t["step"], "raw": t.get("raw_output"), "error": t.get("output_error"),
            "actions": t.get("actions"), "messages": _messages(t.get("prompt")), "images": images,
            "latency_s": t.get("latency_s"), "batch": t.get("batch"),
            "prompt_tokens": t.get("prompt_tokens"), "output_tokens": t.get("output_tokens")}


def episode_payload(df: Any, classes: Sequence[str], transcripts: Mapping[tuple, list[dict]],
                     instructions: Mapping[tuple, str], report_dir: Path,
                     store_dir: Path | Mapping[str, Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(summaries, details): one light summary per episode (the page) and one
    detail each (the chunk files), in the same order; ``id`` is the position.
    ``store_dir``: the folder artifact paths are relative to, or one per value of
    the records' ``store`` column (several stores read as one)."""
    summaries, details = [], []
    dirs = store_dir if isinstance(store_dir, Mapping) else None
    for rec, cls in zip(df.to_dict("records"), classes):
        if dirs is not None:
            store_dir = dirs[rec["store"]]
        key = (rec["run_id"], rec["suite"], rec["split"], rec["episode_id"], int(rec["seed"]))
        extra = rec.get("extra") or {}
        artifacts = extra.get("artifacts") or {}
        video = None
        if isinstance(artifacts, Mapping) and artifacts.get("video"):
            video = _artifact_link(artifacts["video"], report_dir, store_dir)
        calls = [_call_payload(t, report_dir, store_dir) for t in transcripts.get(key, [])]
        tokens = [c["prompt_tokens"] for c in calls if c["prompt_tokens"] is not None]
        out_tokens = [c["output_tokens"] for c in calls if c["output_tokens"] is not None]
        eid = len(summaries)
        summaries.append({
            "id": eid, "run": rec["run_id"], "variant": str(rec["variant"]), "suite": rec["suite"],
            "split": rec["split"], "episode": rec["episode_id"], "seed": int(rec["seed"]),
            "task_type": _text(rec.get("task_type")), "success": bool(rec["success"]),
            "termination": _text(rec.get("termination")), "error": _text(rec.get("error_kind")),
            "goals": [int(rec.get("gc_satisfied") or 0), int(rec.get("gc_total") or 0)],
            "steps": int(rec.get("steps") or 0), "invalid": int(rec.get("invalid_actions") or 0),
            "output_errors": int(rec.get("planner_output_errors") or 0), "failure": cls,
            "calls": len(calls), "video": video is not None,
            "seconds": round(float(rec.get("wall_time_s") or 0.0), 3),
            "tokens": [sum(tokens), sum(out_tokens)] if tokens or out_tokens else None,
        })
        details.append({
            "id": eid, "instruction": extra.get("instruction") or instructions.get(key[1:4]) or "",
            "error_message": _text(rec.get("error_message")), "history": extra.get("history") or [],
            "calls": calls, "video": video, "task": extra.get("task") or None,
            "actions": extra.get("actions") or [],
        })
    return summaries, details


def search_index(details: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """What the browser's search reads besides the list's fields: each episode's
    instruction, each distinct text once (variants, trials and seeds of one task share it);
    ``of[id]`` is the position of episode ``id``'s text (-1: none)."""
    texts: dict[str, int] = {}
    of = []
    for d in details:
        text = d.get("instruction") or ""
        of.append(texts.setdefault(text, len(texts)) if text else -1)
    return {"texts": list(texts), "of": of}


def _text(value: Any) -> str:
    """A record's optional text field as a string ('' for None / NaN from pandas)."""
    return value if isinstance(value, str) else ""


def instructions_from_suites(store: Any, df: Any) -> dict[tuple[str, str, str], str]:
    """Instructions of episodes whose records carry none (stores written before
    ``extra["instruction"]``), from each run's suite where it can be built here."""
    need = df[[not (e or {}).get("instruction") for e in df["extra"]]]
    out: dict[tuple[str, str, str], str] = {}
    if need.empty:
        return out
    runs = store.runs().set_index("run_id")
    for run_id, group in need.groupby("run_id"):
        if run_id not in runs.index:
            continue
        spec = json.loads(runs.loc[run_id, "spec"])
        try:
            suite = SUITES.build(spec["suite"], **dict(spec.get("suite_params") or {}))
            for e in suite.episodes(spec["split"]):
                out[(e.suite, e.split, e.episode_id)] = e.instruction
        except Exception:  # noqa: BLE001 - best effort: the browser then shows no instruction
            continue
    return out
