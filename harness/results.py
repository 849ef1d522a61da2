"""Which runs a table shows, from one store or several read as one.

* **Supersession** (per store, as :func:`latest_frame`): for each
  (variant, suite, split) the newest run's *family* is shown and older
  families are named in a note. A family is a run identity without its trial
  seed (``seed_offset``) and its declared repeat index (``repeat``): runs that
  differ only in ``seed=`` or ``repeat=`` are **repeats** of one cell, all shown
  (columns ``repeat``: the seed offset, ``repeat_index``: the repeat index), not
  superseded; tables give their spread (harness.tables, harness.stats).
* **Several stores**: a run (same identity, hence same run id) found in two
  stores counts once, its episodes de-duplicated by key (:func:`merge_stores`): a
  finished row over an error record; two finished rows whose results disagree are
  refused in one line naming the first such episode, unless ``prefer`` (store paths,
  as given) says whose rows win -- never the order of the stores. Two stores whose
  current families differ for the same variant, suite and split are refused
  in one line unless ``picks`` (run ids, or unique prefixes) chooses one; a
  pick also overrides supersession within a store.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from harness.types import PROTOCOL_EXPERT_LENGTH_UNIT

if TYPE_CHECKING:
    import pandas as pd

    from harness.store import ResultStore

_CELL = ["variant", "suite", "split"]


class SelectionError(ValueError):
    """Runs that cannot be shown together; ``str()`` is one line naming the fix."""


def family_of(identity: Any) -> tuple[str, int, int]:
    """(family hash, seed offset, repeat index) of a run identity (JSON text or dict)."""
    data = json.loads(identity) if isinstance(identity, str) else dict(identity or {})
    offset = int(data.pop("seed_offset", 0) or 0)
    index = int(data.pop("repeat", 0) or 0)
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16], offset, index


def with_families(runs: "pd.DataFrame") -> "pd.DataFrame":
    """``runs`` with ``family``, ``repeat`` (seed offset) and ``repeat_index`` (declared repeat)."""
    triples = [family_of(i) for i in runs["identity"]]
    return runs.assign(family=[t[0] for t in triples], repeat=[t[1] for t in triples],
                       repeat_index=[t[2] for t in triples])


def current_runs(runs: "pd.DataFrame") -> tuple["pd.DataFrame", list[str]]:
    """The runs of each cell's newest family (all its repeats), and notes naming the others."""
    if runs.empty:
        return runs, []
    runs = with_families(runs).sort_values("last_started_at", kind="stable")
    newest = runs.groupby(_CELL, sort=False).tail(1)[[*_CELL, "family"]]
    keep = runs.merge(newest, on=[*_CELL, "family"], how="inner")["run_id"]
    kept = set(keep)
    notes = [f"superseded run {r.run_id} ({r.variant} on {r.suite}/{r.split}) is not shown"
             for r in runs.itertuples() if r.run_id not in kept]
    return runs[runs["run_id"].isin(kept)], notes


def latest_frame(store: "ResultStore") -> tuple["pd.DataFrame", list[str]]:
    """Records of the newest run per (variant, suite, split) in ``store``, and notes on superseded runs.

    If a variant was rerun on a split with something that changes results
    (a new checkpoint, prompt or protocol), the older run is left out of
    tables and named in a note, rather than mixed in. Runs that differ only
    in the trial seed (``seed=``) are repeats of the newest run, and kept
    (:func:`current_runs`).
    """
    runs = store.runs()
    if runs.empty:
        return store.frame([]), []
    latest, notes = current_runs(runs)
    return store.frame(latest["run_id"].tolist()), notes


@dataclass
class Selection:
    frame: "pd.DataFrame"
    runs: "pd.DataFrame"
    notes: list[str]
    stores: list[str]
    #: Which judges' scores fill the judged metrics (:mod:`harness.judge_views`); None: not read.
    judges: Any = None


def _resolve_picks(runs: "pd.DataFrame", picks: Sequence[str]) -> dict[tuple[str, str, str], str]:
    """cell -> picked family, from run ids or unique prefixes."""
    out: dict[tuple[str, str, str], str] = {}
    ids = sorted(set(runs["run_id"]))
    for pick in picks:
        matches = [r for r in ids if r.startswith(pick)]
        if len(matches) != 1:
            raise SelectionError(f"--run {pick}: {'matches no run' if not matches else 'matches several runs'} "
                                 f"(runs: {', '.join(r[:12] for r in ids)})")
        row = runs[runs["run_id"] == matches[0]].iloc[0]
        cell = (row["variant"], row["suite"], row["split"])
        if cell in out and out[cell] != row["family"]:
            raise SelectionError(f"--run picks two different runs for {cell[0]} on {cell[1]}/{cell[2]}")
        out[cell] = row["family"]
    return out


#: The fields of an episode row that carry its result: two stores holding the same episode of
#: the same run must agree on them (timings, messages and ``extra`` may differ).
RESULT_FIELDS = ("success", "gc_satisfied", "gc_total", "steps", "agent_calls", "invalid_actions",
                 "expert_length", "path_length", "termination", "error_kind", "planner_output_errors",
                 "empty_plan", "task_type")
EPISODE_KEY = ["run_id", "suite", "split", "episode_id", "seed"]


def _norm(value: Any) -> Any:
    try:
        import pandas as pd

        if value is None or (not isinstance(value, (str, bytes)) and pd.isna(value)):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        value = value.item()
    return int(value) if isinstance(value, bool) else value


def merge_stores(df: "pd.DataFrame", prefer: Sequence[str] = ()) -> "pd.DataFrame":
    """One row per episode key from rows of several stores (column ``store``), independent of
    the stores' order.

    Of one key's rows: the stores in ``prefer`` (in that order) win outright; otherwise a
    finished row wins over an error record, and finished rows must agree on
    :data:`RESULT_FIELDS` -- if they do not, :class:`SelectionError` names the first such
    episode (by key) and the stores. Rows that agree (or error records only) keep the one of
    the store whose path sorts first, so the choice never depends on argument order.
    """
    if df.empty or "store" not in df.columns:
        return df.drop_duplicates(EPISODE_KEY, keep="first")
    rank = {p: i for i, p in enumerate(dict.fromkeys(str(p) for p in prefer))}
    order = df.assign(_pref=[rank.get(str(s), len(rank)) for s in df["store"]],
                      _err=df["error_kind"].notna(), _store=df["store"].astype(str))
    order = order.sort_values([*EPISODE_KEY, "_pref", "_err", "_store"], kind="stable")
    dup = order.duplicated(EPISODE_KEY, keep=False)
    if dup.any():
        fields = [c for c in RESULT_FIELDS if c in order.columns]
        for _, group in order[dup & ~order["_err"]].groupby(EPISODE_KEY, sort=True):
            if len(group) < 2 or group["_pref"].iloc[0] < len(rank):
                continue
            rows = [tuple(_norm(v) for v in r) for r in group[fields].itertuples(index=False)]
            differing = [f for i, f in enumerate(fields) if len({r[i] for r in rows}) > 1]
            if differing:
                first = group.iloc[0]
                stores = list(dict.fromkeys(group["_store"]))
                what = ", ".join(f"{f} {' vs '.join(str(r[fields.index(f)]) for r in rows)}" for f in differing[:3])
                raise SelectionError(
                    f"run {first['run_id']} episode {first['suite']}/{first['split']}/{first['episode_id']} "
                    f"seed {int(first['seed'])} differs between stores {' and '.join(stores)} ({what}): "
                    f"keep one store's records with --prefer {stores[0]} (or another of them)")
    out = order.drop_duplicates(EPISODE_KEY, keep="first")
    return out.drop(columns=["_pref", "_err", "_store"])


def protocol_fact(identity: Any, key: str) -> Any:
    """``key`` of a run identity's suite protocol (JSON text or dict); None where absent."""
    data = json.loads(identity) if isinstance(identity, str) else dict(identity or {})
    protocol = data.get("protocol")
    return protocol.get(key) if isinstance(protocol, dict) else None


def load(paths: Sequence[str], picks: Sequence[str] = (), prefer: Sequence[str] = (),
         judge: str | None = None, where: Any = None) -> Selection:
    """The shown records of the stores at ``paths``, with columns ``repeat``, ``repeat_index``,
    ``store`` and ``expert_length_unit`` (the run's protocol fact, None where it states none).
    ``prefer``: stores whose rows win where stores disagree on an episode (:func:`merge_stores`).
    ``judge``: whose verdicts fill the judged metrics' values (:mod:`harness.judge_views`:
    a name, ``A,B`` for their mean, ``all``; None: the only judge, or each of several).
    ``where``: ``frame -> frame``, the records a command shows (its --suite/--split/--variant),
    applied before the judges are read, so their counts and agreement are of those records only."""
    import pandas as pd

    from harness.store import ResultStore

    opened = []
    try:
        for path in paths:
            opened.append((str(path), ResultStore(path, readonly=True)))
        all_runs = []
        for path, store in opened:
            runs = store.runs()
            if not runs.empty:
                all_runs.append(with_families(runs).assign(store=path))
        if not all_runs:
            return Selection(opened[0][1].frame([]).assign(repeat=[], repeat_index=[], store=[],
                                                           **{PROTOCOL_EXPERT_LENGTH_UNIT: []}),
                             pd.DataFrame(), [], [p for p, _ in opened])
        runs = pd.concat(all_runs, ignore_index=True)
        chosen = _resolve_picks(runs, picks)
        notes: list[str] = []
        current: dict[tuple[str, str, str], dict[str, str]] = {}  # cell -> store -> family
        for path, group in runs.groupby("store", sort=False):
            kept, store_notes = current_runs(group.drop(columns=["family", "repeat", "repeat_index"]))
            for r in kept.itertuples():
                current.setdefault((r.variant, r.suite, r.split), {})[path] = r.family
            notes += [n for n in store_notes if not any(pick in n for pick in picks)]
        families = {}
        for cell, by_store in current.items():
            if cell in chosen:
                families[cell] = chosen[cell]
                continue
            distinct = sorted(set(by_store.values()))
            if len(distinct) > 1:
                example = {fam: next(r for r in runs.itertuples() if r.family == fam and
                                     (r.variant, r.suite, r.split) == cell).run_id for fam in distinct}
                where = "; ".join(f"{p}: run {example[f]}" for p, f in sorted(by_store.items()))
                raise SelectionError(
                    f"{cell[0]} on {cell[1]}/{cell[2]} was run with different identities ({where}): "
                    f"keep one with --run {example[distinct[0]]} (or the other's id)")
            families[cell] = distinct[0]
        keep = runs[[families.get((r.variant, r.suite, r.split)) == r.family for r in runs.itertuples()]]
        frames = []
        verdicts = []
        provenance: dict[str, Any] = {}
        for path, store in opened:
            ids = sorted(set(keep.loc[keep["store"] == path, "run_id"]))
            if ids:
                frames.append(store.frame(ids).assign(store=path))
                judged = store.judgements()
                if len(judged):
                    verdicts.append(judged[judged["run_id"].isin(ids)])
            for run_id in ids:  # the latest session's provenance (git commit, versions, resolved config)
                sessions = store.provenance(run_id)
                provenance.setdefault(run_id, sessions[-1] if sessions else {})
    finally:
        for _, store in opened:
            store.close()
    df = pd.concat(frames, ignore_index=True) if frames else opened[0][1].frame([]).assign(store=[])
    # The same run in two stores counts once: a completed row over an error row; disagreeing rows refused.
    unknown = [p for p in prefer if str(p) not in {path for path, _ in opened}]
    if unknown:
        raise SelectionError(f"--prefer {unknown[0]} is not one of the stores read ({', '.join(p for p, _ in opened)})")
    key = EPISODE_KEY
    df = merge_stores(df, prefer).sort_values(key, kind="stable")
    repeat = dict(zip(keep["run_id"], keep["repeat"]))
    index = dict(zip(keep["run_id"], keep["repeat_index"]))
    units = {r.run_id: protocol_fact(r.identity, PROTOCOL_EXPERT_LENGTH_UNIT) for r in keep.itertuples()}
    df = df.assign(repeat=df["run_id"].map(repeat).astype(int),
                   repeat_index=df["run_id"].map(index).astype(int),
                   **{PROTOCOL_EXPERT_LENGTH_UNIT: df["run_id"].map(units).astype(object)}).reset_index(drop=True)
    shown = keep.sort_values("store", kind="stable").groupby("run_id", sort=False).agg(
        {**{c: "first" for c in keep.columns if c not in ("run_id", "store")},
         "store": lambda s: sorted(set(s))}).reset_index()
    shown["provenance"] = shown["run_id"].map(provenance)
    if where is not None and len(df):
        df = where(df)
    df, view = _judged(df, verdicts, judge)
    from harness import caveats  # each record's split size and its run's settings (table footnotes)

    df = caveats.with_run_facts(df, shown)
    return Selection(df, shown, sorted(set(notes)), [p for p, _ in opened], view)


def _judged(df: "pd.DataFrame", verdicts: list["pd.DataFrame"], judge: str | None) -> tuple["pd.DataFrame", Any]:
    """``df`` with the chosen judges' values (:func:`harness.judge_views.apply`); the same
    verdict in two stores counts once."""
    import pandas as pd

    from harness import judge_views, scoring

    frame = pd.concat(verdicts, ignore_index=True) if verdicts else None
    if frame is not None:
        rank = frame["status"].map({"ok": 0, "unreadable": 1}).fillna(2)
        frame = (frame.assign(_rank=rank).sort_values("_rank", kind="stable")
                 .drop_duplicates([*judge_views.KEY, "judge_id"], keep="first").drop(columns="_rank"))
    suites = df["suite"].unique() if len(df) else ()
    scoring.set_judge_columns(())
    labels = [m.label for m in scoring.declared(suites).values() if m.judged]
    try:
        df, view = judge_views.apply(df, frame, judge, labels)
    except judge_views.JudgeSelectionError as exc:
        raise SelectionError(str(exc)) from None
    scoring.set_judge_columns(view.tags, view.shared_values)
    return df, view
