"""Caveats every table carries: how much of each split a cell ran, how often the agent's
replies were unusable, and which settings the rows were run with.

A table cell can look more finished or healthier than it is: a ``limit=1`` cell prints like
a 50-episode one; a checkpoint whose every reply failed to parse scores like one that
planned badly; a row run with a stand-in agent or a smaller token budget sits beside the
others unmarked. :func:`of` computes, from the records alone, what
:mod:`harness.tables.render` then prints with every table (Markdown, LaTeX, CSV, JSON and the
report's HTML):

* **Episodes run of the split's total** per cell, ``n/N``. ``N`` is the number of episodes
  the suite's split held when the run started: the runner records it in the run's session
  provenance (``split_episodes``; :class:`harness.run.runner.Runner`); a column over several
  splits sums its splits, ``avg`` sums every column's. Runs written before that record say
  "total unknown" (never a guess). A value cell with ``n < N`` is marked :data:`PARTIAL`.
* **Coverage** per cell and metric (:func:`coverage`): where not every episode the metric
  applies to has a value of its own, how many were counted by the metric's error policy
  (errored or unanswered) and how many await a score (a judged answer not judged yet, an
  unreadable or failed verdict); a cell with unscored answers is marked :data:`PARTIAL` too.
* **Agent failures** per cell: the episodes with output errors (agent replies that yielded
  no usable action: unparseable replies) and the episodes that ran the agent's fallback
  actions (``extra["fallback_plans"]``). A cell is marked :data:`UNUSABLE` when **most of
  its agent replies were unusable**: more than half of the replies summed over its episodes
  (``planner_output_errors`` of ``agent_calls``; a fallback plan is an unusable reply
  too). Records that count no agent calls (older stores) use the episodes instead: more
  than half of the cell's episodes had output errors.
* **Settings** (:func:`settings`): per row, the run settings that are not at their
  defaults or that differ between rows: ``limit``, the trial ``seed`` offset, the declared
  ``repeat`` index, the agent (a stand-in such as ``planner=random`` in one row), the
  agent's parameters given on the command line or by the variant
  (``planner.params.max_new_tokens=64``), and the suite parameters that change results and
  differ from the suite's declared defaults or between rows. An experiment's table also
  names a row whose agent is not the one its declaration composes (:func:`declared_agents`).

The module names no suite: the facts come from the stored runs (spec, identity, the
provenance's resolved config) and the plugins' own declarations.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from harness import params
from harness.registry.catalog import SUITES
from harness.run.config import CONFIG_DIR
from harness.scoring import policy as scoring
from harness.stats.sequential import stopping_of

if TYPE_CHECKING:
    import pandas as pd

#: Marker appended to a value cell that ran only part of its split(s) (``n < N``).
PARTIAL = "°"
#: Marker appended to a value cell most of whose agent replies were unusable.
UNUSABLE = "§"
#: Record columns :func:`with_run_facts` adds (from the runs' stored facts).
SPLIT_EPISODES = "split_episodes"
RUN_SETTINGS = "run_settings"
#: Provenance key of the split's episode count (written by the runner at each session).
PROVENANCE_SPLIT_EPISODES = "split_episodes"
#: How a stored config writes a value it left unset (OmegaConf's ``MISSING``): never a setting's value.
_UNSET = "???"
#: Settings always worth naming when set (spec fields), with the value that is no caveat.
_SPEC_DEFAULTS = {"limit": None, "seed": 0, "repeat": 0}
#: The setting that says a row ran under ``stopping=sequential`` (and after how many episodes
#: it stopped); a row without it ran its split in full.
STOPPING = "stopping"
_FULL_RUN = "full run"


def _stopping_of(identity: Any) -> Any:
    return stopping_of(identity)


# --- facts of the stored runs ------------------------------------------------------------
def _flat(node: Any, prefix: str) -> dict[str, Any]:
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}.{k}"))
        return out
    return {prefix: node}


@lru_cache(maxsize=None)
def _suite_defaults(suite: str) -> dict[str, Any]:
    """The suite's declared parameter defaults (its plugin's declaration); {} where unknown."""
    try:
        declaration = SUITES.entry(str(suite)).params
        return {f.name: f.default for f in params.fields_of(declaration) if not f.required}
    except Exception:  # noqa: BLE001 - a suite not installed here: no defaults to compare with
        return {}


def run_settings(spec: Any, identity: Any, provenance: Any) -> dict[str, Any]:
    """The settings of one stored run worth naming in a table (see the module docstring):
    ``{key: value}`` with the keys ``limit``, ``seed``, ``repeat`` (when not at their
    defaults), ``agent``, ``<kind>.params.*`` (the agent parameters its config gave) and
    ``suite.params.*`` (result-changing suite parameters; ``suite_defaults`` marks the
    non-default ones)."""
    spec = json.loads(spec) if isinstance(spec, str) else dict(spec or {})
    identity = json.loads(identity) if isinstance(identity, str) else dict(identity or {})
    provenance = provenance if isinstance(provenance, Mapping) else {}
    out: dict[str, Any] = {}
    for key, default in _SPEC_DEFAULTS.items():
        if key == "limit" and spec.get("stopping"):  # stopping=sequential: the first round's, not a setting
            continue
        if spec.get(key, default) != default:
            out[key] = spec.get(key)
    out["agent"] = spec.get("agent") or identity.get("agent")
    kind = spec.get("agent_kind") or "planner"
    config = provenance.get("config") if isinstance(provenance.get("config"), Mapping) else {}
    node = config.get(kind) if isinstance(config.get(kind), Mapping) else {}
    given = spec.get("agent_params") if isinstance(spec.get("agent_params"), Mapping) else {}
    for key, value in _flat(node.get("params") or {}, f"{kind}.params").items():
        if value == _UNSET:  # a key the config left unset (a sweep's checkpoint, a variant's model): the value run
            name = key[len(f"{kind}.params."):]
            if name in given and given[name] not in (None, _UNSET):
                out[key] = given[name]
            continue
        out[key] = value
    suite_params = identity.get("suite_params") if isinstance(identity.get("suite_params"), Mapping) else {}
    defaults = _suite_defaults(spec.get("suite") or identity.get("suite") or "")
    for key, value in suite_params.items():
        out[f"suite.params.{key}"] = value
        if key not in defaults or _same(defaults[key], value):  # no declared default: no claim
            out.setdefault("_defaults", []).append(f"suite.params.{key}")
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        a = list(a)
    if isinstance(b, tuple):
        b = list(b)
    return a == b


def split_episodes(sessions: Any) -> int | None:
    """The split's episode count a run recorded (its latest session that says), else None."""
    if isinstance(sessions, Mapping):
        sessions = [sessions]
    for p in reversed(list(sessions or [])):
        if isinstance(p, Mapping) and isinstance(p.get(PROVENANCE_SPLIT_EPISODES), int):
            return int(p[PROVENANCE_SPLIT_EPISODES])
    return None


def with_run_facts(df: "pd.DataFrame", runs: "pd.DataFrame") -> "pd.DataFrame":
    """``df`` (records) with :data:`SPLIT_EPISODES` (the run's recorded split size, NaN where
    unknown) and :data:`RUN_SETTINGS` (JSON of :func:`run_settings`) per record, from
    ``runs`` (rows with ``run_id``, ``spec``, ``identity`` and ``provenance``)."""
    totals: dict[str, float] = {}
    settings: dict[str, str] = {}
    for r in runs.to_dict("records") if len(runs) else []:
        total = split_episodes(r.get("provenance"))
        totals[r["run_id"]] = float(total) if total is not None else math.nan
        settings[r["run_id"]] = json.dumps(run_settings(r.get("spec"), r.get("identity"), r.get("provenance")),
                                           sort_keys=True, default=str)
        if _stopping_of(r.get("identity")) is not None:  # how the row was run: stopped early by design
            episodes = int((df["run_id"] == r["run_id"]).sum()) if len(df) else 0
            values = json.loads(settings[r["run_id"]])
            values[STOPPING] = f"sequential, stopped after {episodes} episodes"
            settings[r["run_id"]] = json.dumps(values, sort_keys=True, default=str)
    return df.assign(**{SPLIT_EPISODES: df["run_id"].map(totals).astype(float),
                        RUN_SETTINGS: df["run_id"].map(settings).astype(object)})


# --- per cell ----------------------------------------------------------------------------
def _fallback(extra: Any) -> int:
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return 0
    return int((extra or {}).get("fallback_plans") or 0) if isinstance(extra, Mapping) else 0


def _cell(part: "pd.DataFrame") -> dict[str, Any]:
    """Counts of one cell's records (several splits: summed per split)."""
    import numpy as np

    n = int(len(part))
    errors = part["planner_output_errors"].fillna(0).astype(int).to_numpy() if "planner_output_errors" in part \
        else np.zeros(n, dtype=int)
    calls = part["agent_calls"].fillna(0).astype(int).to_numpy() if "agent_calls" in part else np.zeros(n, dtype=int)
    fallbacks = np.array([_fallback(e) for e in part["extra"]], dtype=int) if "extra" in part else np.zeros(n, int)
    counted = calls > 0
    unusable = int(np.minimum(errors, calls)[counted].sum())
    replies = int(calls.sum())
    total: int | None = 0
    if SPLIT_EPISODES in part.columns and n:
        per_split = part.groupby([part["suite"].astype(str), part["split"].astype(str), part["run_id"]],
                                 sort=True)[SPLIT_EPISODES].first()
        # one split, several runs (repeats): the split's size once per (suite, split)
        sizes: dict[tuple[str, str], float] = {}
        for (suite, split, _), size in per_split.items():
            known = sizes.get((suite, split))
            sizes[(suite, split)] = size if known is None or (isinstance(known, float) and math.isnan(known)) else known
        if any(isinstance(s, float) and math.isnan(s) for s in sizes.values()):
            total = None
        else:
            runs_per_split = part.groupby([part["suite"].astype(str), part["split"].astype(str)])["run_id"].nunique()
            total = int(sum(sizes[k] * runs_per_split[k] for k in sizes))
    else:
        total = None
    episodes_with_errors = int((errors > 0).sum())
    if replies:
        mostly = 2 * unusable > replies
    else:
        mostly = n > 0 and 2 * episodes_with_errors > n
    return {"episodes": n, "total": total, "output_error_episodes": episodes_with_errors,
            "fallback_episodes": int((fallbacks > 0).sum()), "replies": replies, "unusable_replies": unusable,
            "fallback_replies": int(fallbacks.sum()), "mostly_unusable": bool(mostly), "coverage": coverage(part)}


def coverage(part: "pd.DataFrame") -> list[dict[str, Any]]:
    """Per declared metric of the cell's suites whose episodes do not all have a value of their
    own (:func:`harness.scoring.policy.tally`): ``metric``, ``label``, ``n`` (episodes it applies to),
    ``valued``, ``missing`` (no value: counted as ``missing_value``, or left out where that is
    None), ``unscored`` (awaiting a score: left out)."""
    if not len(part) or "suite" not in part:
        return []
    values = scoring.value_rows(part)
    out = []
    for m in scoring.of_frame(part).declared(part["suite"].unique()).values():
        t = scoring.tally(m, values)
        if t.n and not t.complete:
            out.append({"metric": m.name, "label": m.label, "n": t.n, "valued": t.valued, "missing": t.missing,
                        "unscored": t.unscored, "missing_value": m.missing, "judged": m.judged})
    return out


def coverage_text(c: Mapping[str, Any]) -> str:
    """'S over 16 of 60 (4 without an answer count 0; 40 not scored)'."""
    counted = c["valued"] + (c["missing"] if c["missing_value"] is not None else 0)
    parts = []
    if c["missing"]:
        what = "without an answer (errored or empty)" if c["judged"] else "without a value (errored or unanswered)"
        parts.append(f"{c['missing']} {what} " + (f"count {c['missing_value']:g}" if c["missing_value"] is not None
                                                   else "left out"))
    if c["unscored"]:
        parts.append(f"{c['unscored']} not scored (not judged yet, or an unreadable or failed verdict), left out")
    return f"{c['label']} over {counted} of {c['n']}" + (f" ({'; '.join(parts)})" if parts else "")


def cells(df: "pd.DataFrame", row_of: "pd.Series", group_of: "pd.Series",
          extra_groups: Mapping[str, Sequence[str]] = {}, totals: bool = True) -> list[dict[str, Any]]:
    """One entry per (row, group) with records: :func:`_cell`'s counts plus ``row`` and
    ``group``. ``extra_groups``: more columns pooling others (``avg`` -> every column).
    ``totals=False``: cells that are part of a split (a task type's), with no split total
    (``total`` None, ``of_split`` False)."""
    frame = df.assign(_row=row_of.to_numpy(), _group=group_of.to_numpy())
    out = []
    for (row, group), part in frame.groupby(["_row", "_group"], sort=True, dropna=True):
        out.append({"row": row, "group": group, **_cell(part)})
        if not totals:
            out[-1].update(total=None, of_split=False)
    for label, groups in extra_groups.items():
        pooled = frame[frame["_group"].isin(list(groups)).to_numpy()]
        for row, part in pooled.groupby("_row", sort=True):
            out.append({"row": row, "group": label, **_cell(part)})
    return out


def settings(df: "pd.DataFrame", row_of: "pd.Series") -> list[dict[str, Any]]:
    """The settings worth naming, one entry per key: ``{"key", "rows": {row: value text}}``
    where the value is not a default (``limit``, ``seed``, ``repeat``, given agent
    parameters, non-default suite parameters) or differs between rows (any key); a row whose
    runs disagree on a key shows their values joined by " / "."""
    if RUN_SETTINGS not in df.columns or not len(df):
        return []
    runs_of: dict[Any, list[dict[str, Any]]] = {}
    defaults: dict[Any, set[str]] = {}
    pairs = set(zip(row_of.to_numpy(), df[RUN_SETTINGS].to_numpy()))  # each row's runs once
    for row, text in sorted(pairs, key=lambda p: (str(p[0]), str(p[1]))):
        if not isinstance(text, str):
            continue
        values = json.loads(text)
        defaults.setdefault(row, set()).update(values.pop("_defaults", []))
        runs_of.setdefault(row, []).append(values)
    if not runs_of:
        return []
    keys = sorted({k for runs in runs_of.values() for v in runs for k in v}, key=_key_order)
    out = []
    for key in keys:
        rows = {}
        for row, runs in runs_of.items():  # a run without the key ran at its default
            shown = [_value_text(v[key]) if key in v else _value_text(_SPEC_DEFAULTS[key]) if key in _SPEC_DEFAULTS
                     else _FULL_RUN if key == STOPPING else "(unset)" for v in runs]
            rows[row] = " / ".join(sorted(dict.fromkeys(shown)))
        differ = len(set(rows.values())) > 1
        always = (key in (*_SPEC_DEFAULTS, STOPPING) and any(key in v for runs in runs_of.values() for v in runs)) or (
            ".params." in key and not key.startswith("suite."))
        non_default = key.startswith("suite.params.") and not all(key in defaults.get(r, ()) for r in runs_of)
        if differ or always or non_default:
            out.append({"key": key, "rows": rows, "differ": differ})
    return out


def _key_order(key: str) -> tuple[int, str]:
    order = {"agent": 0, STOPPING: 1, "limit": 2, "seed": 3, "repeat": 4}
    return (order.get(key, 4 if not key.startswith("suite.") else 5), key)


def _value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def of(df: "pd.DataFrame", row_of: "pd.Series", group_of: "pd.Series",
       extra_groups: Mapping[str, Sequence[str]] = {}, settings_row_of: "pd.Series | None" = None) -> dict[str, Any]:
    """The caveats of a table (``table.attrs["caveats"]``): ``cells`` (:func:`cells`) and
    ``settings`` (:func:`settings`, by ``settings_row_of`` or the rows)."""
    agents: dict[Any, str] = {}
    if RUN_SETTINGS in df.columns:
        for row, text in sorted(set(zip(row_of.to_numpy(), df[RUN_SETTINGS].to_numpy())), key=str):
            if isinstance(text, str):
                agent = str(json.loads(text).get("agent"))
                agents[row] = agent if agents.get(row, agent) == agent else f"{agents[row]} / {agent}"
    return {"cells": cells(df, row_of, group_of, extra_groups),
            "settings": settings(df, row_of if settings_row_of is None else settings_row_of),
            "settings_by": "row" if settings_row_of is None else "group", "agents": agents}


def relabel(caveats: Mapping[str, Any], name: Callable[[Any], Any]) -> dict[str, Any]:
    """``caveats`` with its rows renamed (``name``: old row -> new)."""
    if not caveats:
        return {}
    by_group = caveats.get("settings_by") == "group"
    return {**caveats,
            "cells": [{**c, "row": name(c["row"])} for c in caveats.get("cells", [])],
            "settings": caveats.get("settings", []) if by_group else
            [{**s, "rows": {name(r): v for r, v in s["rows"].items()}} for s in caveats.get("settings", [])],
            "agents": {name(r): a for r, a in caveats.get("agents", {}).items()}}


# --- an experiment's declaration ---------------------------------------------------------
def declared_agents(experiment: Any) -> dict[str, str]:
    """Variant name -> the agent its declared overrides compose (``planner=X`` / ``policy=X``,
    or the agent a ``variant=NAME`` config selects with ``override /planner: X``); variants
    whose agent cannot be told from the files are left out."""
    import re

    out: dict[str, str] = {}
    for variant in getattr(experiment, "variants", ()):
        agent = None
        for ov in variant.overrides:
            key, _, value = ov.lstrip("+").partition("=")
            if key in ("planner", "policy") and value:
                agent = value
            elif key == "variant" and value and agent is None:
                path = CONFIG_DIR / "variant" / f"{value}.yaml"
                try:
                    text = path.read_text(encoding="utf-8")
                except OSError:
                    continue
                found = re.search(r"override\s+/(?:planner|policy)\s*:\s*([A-Za-z0-9_.-]+)", text)
                if found:
                    agent = found.group(1)
        if agent:
            out[variant.name] = agent
    return out


def against_declaration(table: "pd.DataFrame", experiment: Any) -> None:
    """Record in ``table.attrs["caveats"]["declared"]`` each row whose stored agent is not the
    one the experiment declares for it (a stand-in), ``{row: {"agent", "declared"}}``; drop
    the settings the experiment declares itself (``suite_overrides``) with the declared value."""
    caveats = table.attrs.get("caveats")
    if not caveats:
        return
    declared = declared_agents(experiment)
    labels = {v.name: v.label for v in getattr(experiment, "variants", ())}
    agents = caveats.get("agents", {})
    out = {}
    for name, agent in declared.items():
        row = labels.get(name, name)
        stored = agents.get(row)
        if stored is not None and stored != agent:
            out[row] = {"agent": stored, "declared": agent}
    caveats["declared"] = out
    # Settings the experiment itself declares (its suite_overrides) are its protocol, not caveats.
    given = {}
    for overrides in getattr(experiment, "suite_overrides", {}).values():
        for ov in overrides:
            key, sep, value = ov.lstrip("+").partition("=")
            if sep:
                given[key] = value
    caveats["settings"] = [s for s in caveats.get("settings", [])
                           if not (s["key"] in given and set(s["rows"].values()) == {given[s["key"]]})]


# --- rendering ---------------------------------------------------------------------------
def _cell_of(table: "pd.DataFrame") -> dict[tuple[Any, str], dict[str, Any]]:
    return {(c["row"], c["group"]): c for c in table.attrs.get("caveats", {}).get("cells", [])}


def marks(table: "pd.DataFrame", row: Any, group: str, metric: str | None = None) -> str:
    """The caveat marks of a value cell: :data:`UNUSABLE`, :data:`PARTIAL` (part of the split,
    or, for ``metric``, part of its answers scored: a judged cell over 16 of 60 answers)."""
    cell = _cell_of(table).get((row, group))
    if cell is None:
        return ""
    text = UNUSABLE if cell["mostly_unusable"] else ""
    unscored = any(x["metric"] == metric and x["unscored"] for x in cell.get("coverage", [])) if metric else False
    if (cell["total"] is not None and cell["episodes"] < cell["total"]) or unscored:
        text += PARTIAL
    return text


def episodes_text(cell: Mapping[str, Any]) -> str:
    """'1/50', or '3 (total unknown)'; a cell that is part of a split (a task type): '3'."""
    if cell["total"] is not None:
        return f"{cell['episodes']}/{cell['total']}"
    return str(cell["episodes"]) if cell.get("of_split") is False else f"{cell['episodes']} (total unknown)"


def _failures_text(cell: Mapping[str, Any]) -> str:
    text = (f"{cell['output_error_episodes']} of {cell['episodes']} episodes with output errors "
            f"({cell['unusable_replies']} of {cell['replies']} agent replies unusable), "
            f"{cell['fallback_episodes']} with fallback actions")
    if cell["mostly_unusable"]:
        text += "; most replies unusable: the value measures the handling of bad output, not the agent's plans"
    return text


def _row_order(table: "pd.DataFrame") -> dict[Any, int]:
    return {r: i for i, r in enumerate(table.index)}


def notes(table: "pd.DataFrame", avg_label: str | None = None) -> list[str]:
    """Footnote lines: episodes run per cell, agent failures per cell that had some, the
    settings, stand-ins against an experiment's declaration, and paper rows beside partial cells."""
    caveats = table.attrs.get("caveats")
    if not caveats:
        return []
    order = _row_order(table)
    columns = list(dict.fromkeys(g for g, _ in table.columns))
    col_pos = {g: i for i, g in enumerate(columns)}
    entries = sorted(caveats.get("cells", []), key=lambda c: (order.get(c["row"], 1 << 30),
                                                              col_pos.get(c["group"], 1 << 30)))
    lines = []
    per_row: dict[Any, list[str]] = {}
    for c in entries:
        if c["group"] in col_pos:
            per_row.setdefault(c["row"], []).append(f"{c['group']} {episodes_text(c)}")
    if per_row:
        partial = any(marks(table, c["row"], c["group"]).endswith(PARTIAL) for c in entries)
        lines.append("Episodes run / in the split: " + "; ".join(f"{row}: {', '.join(parts)}"
                                                                 for row, parts in per_row.items())
                     + (f" ({PARTIAL}: part of the split only)." if partial else "."))
    for c in entries:
        if c["group"] == avg_label or c["group"] not in col_pos:
            continue
        if c["output_error_episodes"] or c["fallback_episodes"]:
            mark = UNUSABLE + " " if c["mostly_unusable"] else ""
            lines.append(f"{mark}{c['row']}, {c['group']}: {_failures_text(c)}.")
        shown = {m for g, m in table.columns if g == c["group"]}
        cover = [coverage_text(x) for x in c.get("coverage", []) if x["metric"] in shown]
        if cover:
            lines.append(f"{c['row']}, {c['group']}: " + "; ".join(cover) + ".")
    rows_shown = [r for r in table.index]
    setting_lines = []
    for s in caveats.get("settings", []):
        rows = s["rows"]
        if caveats.get("settings_by") == "row":  # in the table's row order
            rows = {r: rows[r] for r in sorted((r for r in rows if r in order), key=order.get)}
        if not rows:
            continue
        values = set(rows.values())
        if len(values) == 1:
            setting_lines.append(f"{s['key']}={next(iter(values))} (every row)")
        else:
            setting_lines.append(f"{s['key']} (" + ", ".join(f"{r}: {v}" for r, v in rows.items()) + ")")
    if setting_lines:
        lines.append("Settings not at their defaults or not alike across rows: " + "; ".join(setting_lines) + ".")
    for row, d in (caveats.get("declared") or {}).items():
        if row in order:
            lines.append(f"{row}: run with agent {d['agent']}, a stand-in for the declared {d['declared']}.")
    paper = [r for r in rows_shown if str(r).endswith(" (paper)")]
    if paper and any(marks(table, c["row"], c["group"]).endswith(PARTIAL) for c in entries):
        lines.append(f"(paper) rows are the paper's full splits; measured cells marked {PARTIAL} ran only part "
                     "of theirs: not comparable as they stand.")
    return lines


def csv_text(table: "pd.DataFrame", row: Any) -> str:
    """A row's caveats in one CSV field: 'group: n/N[, k output-error episodes, j fallback][, mostly unusable]; ...'
    then its settings."""
    parts = []
    for c in table.attrs.get("caveats", {}).get("cells", []):
        if c["row"] != row:
            continue
        text = f"{c['group']}: {episodes_text(c)}"
        if c["output_error_episodes"] or c["fallback_episodes"]:
            text += (f", {c['output_error_episodes']} with output errors "
                     f"({c['unusable_replies']}/{c['replies']} replies), {c['fallback_episodes']} with fallback actions")
        if c["mostly_unusable"]:
            text += ", mostly unusable replies"
        shown = {m for g, m in table.columns if g == c["group"]}
        text += "".join(f", {coverage_text(x)}" for x in c.get("coverage", []) if x["metric"] in shown)
        parts.append(text)
    caveats = table.attrs.get("caveats", {})
    if caveats.get("settings_by") == "row":
        for s in caveats.get("settings", []):
            if row in s["rows"]:
                parts.append(f"{s['key']}={s['rows'][row]}")
    if row in (caveats.get("declared") or {}):
        parts.append(f"stand-in for {caveats['declared'][row]['declared']}")
    return "; ".join(parts)


def json_cell(table: "pd.DataFrame", row: Any, group: str) -> dict[str, Any]:
    """A cell's caveats for the JSON document (empty for a row with no records: paper rows)."""
    cell = _cell_of(table).get((row, group))
    if cell is None:
        return {}
    return {"episodes_total": cell["total"], "partial": None if cell["total"] is None else cell["episodes"] < cell["total"],
            "output_error_episodes": cell["output_error_episodes"], "fallback_episodes": cell["fallback_episodes"],
            "agent_replies": cell["replies"], "unusable_replies": cell["unusable_replies"],
            "mostly_unusable": cell["mostly_unusable"]}


def json_coverage(table: "pd.DataFrame", row: Any, group: str, metric: str) -> dict[str, Any] | None:
    """A metric's coverage in a cell (JSON): None where every episode it applies to has a value."""
    cell = _cell_of(table).get((row, group)) or {}
    for x in cell.get("coverage", []):
        if x["metric"] == metric:
            return {k: x[k] for k in ("n", "valued", "missing", "unscored", "missing_value")}
    return None


def json_row(table: "pd.DataFrame", row: Any) -> dict[str, Any]:
    """A row's settings (and stand-in) for the JSON document."""
    caveats = table.attrs.get("caveats", {})
    out: dict[str, Any] = {}
    if caveats.get("settings_by") == "row":
        out["settings"] = {s["key"]: s["rows"][row] for s in caveats.get("settings", []) if row in s["rows"]}
    if row in (caveats.get("declared") or {}):
        out["stand_in_for"] = caveats["declared"][row]["declared"]
    return out
