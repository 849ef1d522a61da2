"""Which runs a table shows, from one store or several read as one.

* **Run selection** (per store, as :func:`latest_frame`; :data:`SELECTION_RULE`): of the
  *families* of runs of one (variant, suite, split), a table shows the newest **complete**
  one -- each of its runs holds every episode of its split and none stopped early
  (``stopping=sequential``) -- and only where none is complete the newest family. A
  partial or sequential run is never shown over a complete one without saying so: every
  cell with several families gets a line (:func:`selection_lines`, printed in the table's
  footnotes) naming the run shown, each run not shown (partial ``n/N``, sequential, older)
  and the ``--run ID`` that shows it instead. A family is a run identity without its trial
  seed (``seed_offset``) and its declared repeat index (``repeat``): runs that differ only
  in ``seed=`` or ``repeat=`` are **repeats** of one cell, all shown (columns ``repeat``:
  the seed offset, ``repeat_index``: the repeat index); tables give their spread
  (harness.tables.paired, harness.stats.paired).
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from harness.judging import views as judge_views
from harness.scoring import policy as scoring
from harness.stats.sequential import stopping_of
from harness.store import ResultStore
from harness.tables import caveats
from harness.tables.caveats import split_episodes
from harness.types import PROTOCOL_EXPERT_LENGTH_UNIT

if TYPE_CHECKING:
    import pandas as pd

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


#: The rule :func:`current_runs` applies, as tables print it above the runs they name.
SELECTION_RULE = ("of several runs of one variant on one suite/split, a table shows the newest that ran its whole "
                  "split (not stopped early by stopping=sequential), else the newest; --run ID shows another")


@dataclass(frozen=True)
class RunFacts:
    """What run selection knows of one stored run: episodes stored, its split's size (None where
    the run recorded none) and whether it ran under ``stopping=sequential``."""

    episodes: int
    total: int | None
    sequential: bool

    @property
    def complete(self) -> bool:
        """Every episode of its split, run to the end (a sequential run stops early by design).
        A run that recorded no split size counts as complete (nothing says otherwise)."""
        return not self.sequential and (self.total is None or self.episodes >= self.total)

    def text(self) -> str:
        size = f"{self.episodes}/{self.total} episodes" if self.total is not None else f"{self.episodes} episodes"
        return f"sequential, stopped after {size}" if self.sequential else \
            (size if self.complete else f"partial, {size}")


def run_facts(store: "ResultStore", runs: "pd.DataFrame") -> dict[str, RunFacts]:
    """:class:`RunFacts` of each run of ``runs`` (rows of ``store.runs()``)."""
    out = {}
    for r in runs.itertuples():
        episodes = store.run_counts(r.run_id)[0]
        out[r.run_id] = RunFacts(episodes, split_episodes(store.provenance(r.run_id)),
                                 stopping_of(r.identity) is not None)
    return out


def current_runs(runs: "pd.DataFrame", facts: Mapping[str, RunFacts] | None = None,
                 picks: Mapping[tuple[str, str, str], str] | None = None,
                 ) -> tuple["pd.DataFrame", list[str], list[dict[str, Any]]]:
    """The runs of each cell's chosen family (all its repeats): the newest complete family, else
    the newest (:data:`SELECTION_RULE`; ``facts``: each run's :class:`RunFacts`, all complete
    where not given; ``picks``: cell -> family chosen with ``--run``). Returns the runs, notes
    naming the others, and one entry per cell with several families (:func:`selection_lines`)."""
    if runs.empty:
        return runs, [], []
    facts = facts or {}
    picks = picks or {}
    runs = with_families(runs).sort_values("last_started_at", kind="stable")
    complete = {r.run_id: facts[r.run_id].complete if r.run_id in facts else True for r in runs.itertuples()}
    kept: set[str] = set()
    choices: list[dict[str, Any]] = []
    for cell, group in runs.groupby(_CELL, sort=True):
        families = list(dict.fromkeys(reversed(list(group["family"]))))  # newest first
        whole = [f for f in families if all(complete[i] for i in group.loc[group["family"] == f, "run_id"])]
        picked = picks.get(tuple(cell))
        chosen = picked if picked in families else (whole[0] if whole else families[0])
        kept.update(group.loc[group["family"] == chosen, "run_id"])
        if len(families) > 1:
            def described(family: str) -> list[dict[str, Any]]:
                ids = list(group.loc[group["family"] == family, "run_id"])
                return [{"run_id": i, "facts": facts.get(i)} for i in ids]

            why = ("picked with --run" if picked in families else
                   "the newest complete run" if whole and chosen != families[0] else
                   "the newest run" + ("" if whole else "; no run of this cell is complete"))
            choices.append({"variant": cell[0], "suite": cell[1], "split": cell[2], "why": why,
                            "shown": described(chosen),
                            "others": [{"newer": families.index(f) < families.index(chosen), "runs": described(f)}
                                       for f in families if f != chosen]})
    notes = [f"run {r.run_id} ({r.variant} on {r.suite}/{r.split}) is not shown (--run {r.run_id[:12]} shows it)"
             for r in runs.itertuples() if r.run_id not in kept]
    return runs[runs["run_id"].isin(kept)], notes, choices


def selection_lines(choices: Sequence[Mapping[str, Any]]) -> list[str]:
    """Footnote lines of the run selection: the rule, then per cell with several runs which
    run is shown and why, and each run not shown with what it is and how to show it."""
    if not choices:
        return []

    def what(entry: Mapping[str, Any]) -> str:
        f = entry.get("facts")
        return f"run {entry['run_id'][:12]}" + (f" ({f.text()})" if f is not None else "")

    lines = [f"Runs: {SELECTION_RULE}."]
    for c in choices:
        shown = ", ".join(what(e) for e in c["shown"])
        others = "; ".join(", ".join(what(e) for e in o["runs"]) + (", newer" if o["newer"] else ", older")
                           + f": --run {o['runs'][0]['run_id'][:12]} shows it" for o in c["others"])
        lines.append(f"{c['variant']} on {c['suite']}/{c['split']}: shows {shown} ({c['why']}); "
                     f"not shown: {others}.")
    return lines


def latest_frame(store: "ResultStore") -> tuple["pd.DataFrame", list[str]]:
    """Records of the chosen run per (variant, suite, split) in ``store`` (:func:`current_runs`:
    the newest complete one, else the newest), and notes naming the runs not shown.

    If a variant was rerun on a split with something that changes results
    (a new checkpoint, prompt or protocol), the other run is left out of
    tables and named in a note, rather than mixed in. Runs that differ only
    in the trial seed (``seed=``) are repeats of one another, and kept.
    """
    runs = store.runs()
    if runs.empty:
        return store.frame([]), []
    latest, _notes, choices = current_runs(runs, run_facts(store, runs))
    return store.frame(latest["run_id"].tolist()), selection_lines(choices)


@dataclass
class Selection:
    frame: "pd.DataFrame"
    runs: "pd.DataFrame"
    notes: list[str]
    stores: list[str]
    #: Which judges' scores fill the judged metrics (:mod:`harness.judging.views`); None: not read.
    judges: Any = None
    #: Footnote lines naming, per cell with several runs, the run shown and the others
    #: (:func:`selection_lines`); every format prints them with the table.
    run_lines: list[str] = field(default_factory=list)


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
    ``judge``: whose verdicts fill the judged metrics' values (:mod:`harness.judging.views`:
    a name, ``A,B`` for their mean, ``all``; None: the only judge, or each of several).
    ``where``: ``frame -> frame``, the records a command shows (its --suite/--split/--variant),
    applied before the judges are read, so their counts and agreement are of those records only."""
    import pandas as pd

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
        choices: list[dict[str, Any]] = []
        current: dict[tuple[str, str, str], dict[str, str]] = {}  # cell -> store -> family
        by_path = dict(opened)
        for path, group in runs.groupby("store", sort=False):
            facts = run_facts(by_path[path], group)
            kept, _not_shown, store_choices = current_runs(group.drop(columns=["family", "repeat", "repeat_index"]),
                                                           facts, chosen)
            for r in kept.itertuples():
                current.setdefault((r.variant, r.suite, r.split), {})[path] = r.family
            choices += store_choices
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
    # The view's scoring (judges side by side or not) travels with its records: what their
    # tables declare depends on them alone, never on a table read before in the process.
    df = scoring.on_frame(caveats.with_run_facts(df, shown), view.scoring)
    lines = list(dict.fromkeys(selection_lines([c for c in choices if (c["variant"], c["suite"], c["split"])
                                                 in set(zip(df["variant"], df["suite"], df["split"]))])))
    return Selection(df, shown, sorted(set(notes)), [p for p, _ in opened], view, lines)


def _judged(df: "pd.DataFrame", verdicts: list["pd.DataFrame"], judge: str | None) -> tuple["pd.DataFrame", Any]:
    """``df`` with the chosen judges' values (:func:`harness.judging.views.apply`); the same
    verdict in two stores counts once."""
    import pandas as pd

    frame = pd.concat(verdicts, ignore_index=True) if verdicts else None
    if frame is not None:
        rank = frame["status"].map({"ok": 0, "unreadable": 1}).fillna(2)
        frame = (frame.assign(_rank=rank).sort_values("_rank", kind="stable")
                 .drop_duplicates([*judge_views.KEY, "judge_id"], keep="first").drop(columns="_rank"))
    suites = df["suite"].unique() if len(df) else ()
    labels = [m.label for m in scoring.PLAIN.declared(suites).values() if m.judged]
    try:
        df, view = judge_views.apply(df, frame, judge, labels)
    except judge_views.JudgeSelectionError as exc:
        raise SelectionError(str(exc)) from None
    return df, view
