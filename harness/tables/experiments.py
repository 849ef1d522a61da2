"""Experiments: a paper table's runs and layout declared once, in ``configs/experiment/NAME.yaml``.

An experiment file follows Hydra's experiment pattern (``# @package _global_``,
selected with ``+experiment=NAME``) and holds one node, ``experiment``:

* ``runs``: suite -> the splits it runs (in table order);
* ``suite_overrides``: suite -> overrides given to that suite's runs only
  (``suite.params.trials=50``);
* ``variants``: name -> ``label`` (the row's display label) and ``overrides``
  (what makes the variant: ``variant=base``, ``policy=remote ...``), in row order;
  the stored variant name is always the key (``variant.name=KEY`` is added);
  optionally ``serve`` (``url``, ``checkpoint``: the variant's policy server);
* ``serve`` (optional): ``command`` (a template the harness starts each variant's
  server with, one variant at a time), ``ready_timeout_s``, ``stop_timeout_s``
  (:mod:`harness.run.servers`: the placeholders ``{url}``, ``{checkpoint_id}`` ...
  in a variant's overrides are filled from its ``serve``);
* ``table``: ``baseline``, ``metrics``, ``columns`` (each a ``label``, a
  ``suite`` and optionally some of its ``splits``; a column is the mean over
  its splits; optionally its own ``metrics``, among its suite's, instead of the
  table's, and a ``role``, ``diagnostic`` or ``transfer``: with both roles the
  table adds, below it, the association of diagnostic Δ and transfer Δ across
  variants, :mod:`harness.tables.joint`), ``average`` (an overall average column), ``delta`` (``each``:
  a Δ beside every column; ``average``: only beside the average; ``none``),
  ``stats`` (paired statistics, printed in a footnote);
* ``paper`` (optional): numbers a paper reports, ``source`` and ``rows``
  (variant -> column label -> value in percent), printed only on request and
  labelled as the paper's.

``harness run +experiment=NAME`` expands the file into one run per variant x
suite x split (:func:`Experiment.jobs`); ``harness table OUT --experiment NAME``
prints its table (:func:`Experiment.table`). ``experiment.KEY=VALUE`` on the
command line edits the file's node before it is used (e.g.
``experiment.variants.base.overrides=[planner=random]`` runs a stand-in).
Nothing here names a suite: the names live in the YAML files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.run import servers, sweep
from harness.run.config import CONFIG_DIR
from harness.scoring import policy as scoring
from harness.scoring.policy import PLAIN, suite_scoring
from harness.scoring.summaries import metric_columns
from harness.tables import caveats, joint
from harness.tables.build import relabel, transfer_table
from harness.tables.columns import DELTA, declared_columns

if TYPE_CHECKING:
    import pandas as pd

EXPERIMENT_DIR = CONFIG_DIR / "experiment"
#: Values of ``table.delta``.
DELTA_MODES = ("each", "average", "none")
#: Values of a column's ``role`` (harness.tables.joint: diagnostic Δ set beside transfer Δ).
ROLES = ("diagnostic", "transfer")
_COLUMN_KEYS = {"label", "suite", "splits", "metrics", "role"}
_TOP_KEYS = {"name", "description", "runs", "suite_overrides", "variants", "table", "paper", "serve"}
_TABLE_KEYS = {"baseline", "metrics", "columns", "average", "delta", "stats"}


class ExperimentError(ValueError):
    """A bad experiment file or experiment override; ``str()`` is one line."""


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    overrides: tuple[str, ...]
    #: Its policy server (harness.run.servers.VariantServe), or None.
    serve: Any = None


@dataclass(frozen=True)
class Column:
    label: str
    suite: str
    splits: tuple[str, ...]
    #: The column's own metrics (empty: the table's ``metrics``).
    metrics: tuple[str, ...] = ()
    #: One of :data:`ROLES`, or None.
    role: str | None = None

    @property
    def cells(self) -> list[str]:
        return [f"{self.suite}/{s}" for s in self.splits]


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    runs: dict[str, tuple[str, ...]]
    suite_overrides: dict[str, tuple[str, ...]]
    variants: tuple[Variant, ...]
    baseline: str | None
    metrics: tuple[str, ...]
    columns: tuple[Column, ...]
    average: bool
    delta: str
    stats: bool
    paper_source: str | None = None
    paper_rows: dict[str, dict[str, float]] = field(default_factory=dict)
    #: ``experiment.serve`` (harness.run.servers.ServeSettings), or None.
    serve: Any = None

    # --- runs ------------------------------------------------------------------
    def jobs(self, overrides: Sequence[str] = ()) -> list[list[str]]:
        """One override list per variant x suite x split, in row then suite then split order.

        The user's own ``overrides`` come last, so they win over the experiment's.
        """
        out = []
        for variant in self.variants:
            mine = variant.overrides
            if variant.serve is not None:  # its server's {url}, {checkpoint_id} ... filled in
                try:
                    mine = tuple(servers.fill(mine, servers.values(variant.name, variant.serve)))
                except servers.ServeError as exc:
                    raise ExperimentError(str(exc)) from None
            for suite, splits in self.runs.items():
                for split in splits:
                    out.append([f"suite={suite}", f"split={split}", *self.suite_overrides.get(suite, ()),
                                *mine, f"variant.name={variant.name}", *overrides])
        return out

    # --- table -----------------------------------------------------------------
    @property
    def labels(self) -> dict[str, str]:
        return {v.name: v.label for v in self.variants}

    def metrics_of(self, column: Column, available: Sequence[str] | None = None) -> tuple[str, ...]:
        """The metrics a column shows: its own, else the table's. With ``available`` (the
        metrics the shown records declare), a judged metric shown once per judge
        (``harness table --judge all``: ``NAME@JUDGE``, :func:`harness.scoring.policy.per_judge`)
        stands for each of those."""
        named = column.metrics or self.metrics
        if available is None:
            return named
        return tuple(dict.fromkeys(x for m in named for x in (m, *[a for a in available if a.startswith(f"{m}@")])))

    def table(self, df: "pd.DataFrame", paper: bool = False, out: str = "OUT") -> "pd.DataFrame":
        """The experiment's table from store records: its variants, cells and layout only.

        Columns with no records are left out and named in a note with the command that
        fills them (``out``: the store's folder, as the note prints it); so are a column's
        splits no variant ran, and a column's metric without a value. With columns of both
        roles, the association of their Δ is added below (:mod:`harness.tables.joint`)."""
        names = [v.name for v in self.variants]
        cells = {c for col in self.columns for c in col.cells}
        in_cells = (df["suite"].astype(str) + "/" + df["split"].astype(str)).isin(cells).to_numpy()
        every_variant = df[in_cells]  # the association also counts variants the file does not declare
        df = every_variant[every_variant["variant"].astype(str).isin(names).to_numpy()]
        present = [n for n in names if n in set(df["variant"].astype(str))]
        if not present:
            raise ExperimentError(f"the store holds no runs of experiment {self.name} "
                                  f"(variants {', '.join(names)}): run `harness run +experiment={self.name}`")
        baseline = self.baseline if self.baseline in present else None
        if self.baseline is not None and baseline is None:
            raise ExperimentError(f"experiment {self.name}: its baseline {self.baseline!r} has no runs in the store "
                                  f"(variants present: {', '.join(present)})")
        have = set(df["suite"].astype(str) + "/" + df["split"].astype(str))
        shown = [c for c in self.columns if have & set(c.cells)]
        available = declared_columns(df)
        declared = set(available)
        metrics = tuple(dict.fromkeys(m for c in shown for m in self.metrics_of(c, available) if m in declared))
        table = transfer_table(
            df, baseline=baseline, metrics=metrics, variants_order=present,
            per_column_delta=self.delta == "each", stats=self.stats and baseline is not None,
            layout={c.label: c.cells for c in shown}, average=self.average, drop_undefined="valueless",
            stats_in_notes=True,
        )
        wanted = {c.label: set(self.metrics_of(c, available)) for c in shown}
        plain = lambda m: (m[len(DELTA):] if m.startswith(DELTA) else m).split(":", 1)[0]  # noqa: E731
        keep = [g not in wanted or plain(m) in wanted[g] for g, m in table.columns]
        if not all(keep):
            attrs = dict(table.attrs)
            table = table.loc[:, keep]
            table.attrs = attrs
        if self.delta == "none":
            table = table.loc[:, [not m.startswith(DELTA) for _, m in table.columns]]
        notes = self._missing_notes(table, shown, have, out, available)
        table = relabel(table, self.labels)
        if any(c.role for c in self.columns):
            defined = {(g, m) for g, m in table.columns}
            results = self.association(every_variant, [c for c in shown if c.role], baseline or "", defined,
                                       available)
            table.attrs["association"] = results
            notes += joint.notes(results, self.labels.get(baseline or "", baseline or ""))
            lacking = [r for r in ("diagnostic", "transfer") if not any(c.role == r and (c.label, m) in defined
                                                                       for c in shown
                                                                       for m in self.metrics_of(c, available))]
            if lacking:
                notes.append(f"association not computed: no {' and no '.join(lacking)} column in the store.")
        caveats.against_declaration(table, self)  # a row run with a stand-in agent says so
        table.attrs["extra_notes"] = [*table.attrs.get("extra_notes", []), *notes]
        if paper:
            table = self._with_paper_rows(table)
        table.attrs["title"] = self.description or self.name
        return table

    def _missing_notes(self, table: "pd.DataFrame", shown: Sequence[Column], have: set[str], out: str,
                       available: Sequence[str] = ()) -> list[str]:
        """What the store lacks of the table: whole columns, a column's splits, a column's metrics."""
        notes = []
        fill = f"`harness run +experiment={self.name} out={out}` with the overrides of the runs already there"
        absent = [c for c in self.columns if c not in shown]
        if absent:
            what = "; ".join(f"{c.label} ({c.suite}: {', '.join(c.splits)})" for c in absent)
            notes.append(f"not in the store, so not shown: {what}; {fill} runs them (finished runs are skipped).")
        for c in shown:
            lacking = [s for s in c.splits if f"{c.suite}/{s}" not in have]
            if lacking:
                ran = [s for s in c.splits if s not in lacking]
                notes.append(f"{c.label}: over {len(ran)} of its {len(c.splits)} splits ({', '.join(ran)}); "
                             f"not in the store: {', '.join(lacking)} ({fill} runs them).")
        groups = {(g, m.split(":", 1)[0]) for g, m in table.columns if not m.startswith("Δ")}
        for c in shown:
            for m in self.metrics_of(c, available):
                if (c.label, m) in groups or any(g == c.label and x.startswith(f"{m}@") for g, x in groups):
                    continue
                decl = scoring.known_metric(m)
                label = decl.label if decl is not None else m
                hint = (" (a judged metric: `harness judge` fills it, `harness table --judge NAME` shows it)"
                        if decl is not None and decl.judged else "")
                notes.append(f"{c.label} {label}: no value in the store{hint}.")
        return notes

    def association(self, df: "pd.DataFrame", columns: Sequence[Column], baseline: str,
                    defined: set[tuple[str, str]] | None = None,
                    available: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Each diagnostic (column, metric) against each transfer (column, metric)
        (:func:`harness.tables.joint.association`); ``defined``: the (column, metric) pairs with a
        value in the table (others are named in a note already)."""
        def expand(role: str) -> list["joint.JointColumn"]:
            return [joint.JointColumn(c.label, tuple(c.cells), m) for c in columns if c.role == role
                    for m in self.metrics_of(c, available) if defined is None or (c.label, m) in defined]

        labels = self.labels
        return [joint.association(df, x, y, baseline, [v.name for v in self.variants], labels)
                for x in expand("diagnostic") for y in expand("transfer")]

    def _with_paper_rows(self, table: "pd.DataFrame") -> "pd.DataFrame":
        """The table with one row per variant the paper reports, labelled '(paper)', Δ vs the paper's baseline."""
        import math

        import pandas as pd


        if not self.paper_rows:
            raise ExperimentError(f"experiment {self.name} declares no paper numbers (experiment.paper.rows)")
        metric = self.metrics[0]
        base_row = self.paper_rows.get(self.baseline or "", {})
        rows = {}
        for variant in self.variants:
            reported = self.paper_rows.get(variant.name)
            if reported is None:
                continue
            values = {}
            for group, m in table.columns:
                plain = m[len(DELTA):] if m.startswith(DELTA) else m
                value = reported.get(group) if plain == metric and ":" not in m else None
                if value is not None and m.startswith(DELTA):
                    base = base_row.get(group)
                    value = None if base is None or variant.name == self.baseline else value - base
                values[(group, m)] = math.nan if value is None else float(value) / 100.0
            rows[f"{variant.label} (paper)"] = values
        paper = pd.DataFrame.from_dict(rows, orient="index")
        paper.columns = pd.MultiIndex.from_tuples(paper.columns, names=["group", "metric"])
        out = pd.concat([table, paper.reindex(columns=table.columns)])
        out.index.name = table.index.name
        out.attrs = dict(table.attrs)
        out.attrs["paper_note"] = (f"(paper): as reported by {self.paper_source}, not measured here; "
                                   "its Δ is against the paper's own baseline row.")
        return out


# --- loading --------------------------------------------------------------------


def split_overrides(overrides: Sequence[str]) -> tuple[str | None, list[str], list[str]]:
    """(experiment name or file, ``experiment.*`` overrides, the other overrides) of a command line."""
    name = None
    edits, rest = [], []
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if key.lstrip("+") == "experiment" and sep:
            if name is not None:
                raise ExperimentError("one +experiment=NAME per command")
            name = value
        elif key.lstrip("+~").startswith("experiment."):
            edits.append(ov)
        else:
            rest.append(ov)
    if edits and name is None:
        raise ExperimentError(f"{edits[0]!r} edits an experiment: add +experiment=NAME")
    return name, edits, rest


def names() -> list[str]:
    return sorted(p.stem for p in EXPERIMENT_DIR.glob("*.yaml"))


def path_of(name: str) -> Path:
    """The file of experiment ``name``: ``configs/experiment/NAME.yaml``, or a path to a YAML file."""
    import difflib

    if name.endswith((".yaml", ".yml")) or "/" in name:
        path = Path(name).expanduser()
        if not path.is_file():
            raise ExperimentError(f"experiment file {name} does not exist")
        return path
    path = EXPERIMENT_DIR / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(name, names(), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ExperimentError(f"unknown experiment {name!r}: {hint}(experiments: {', '.join(names())}; "
                              "or a path to an experiment YAML file)")
    return path


def load(name: str, edits: Sequence[str] = ()) -> Experiment:
    """The experiment ``name`` (or file), with ``experiment.KEY=VALUE`` edits applied."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = path_of(name)
    try:
        cfg = OmegaConf.load(path)
        if edits:
            dotlist = [e.lstrip("+") for e in edits if not e.startswith("~")]
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(dotlist))
            for e in edits:
                if e.startswith("~"):
                    node_key, _, leaf = e[1:].partition("=")[0].rpartition(".")
                    node = OmegaConf.select(cfg, node_key)
                    if node is None or leaf not in node:
                        raise ExperimentError(f"{e!r}: no such key in experiment {name}")
                    node.pop(leaf)
        # unresolved: `${oc.env:...}` in an override is resolved by the run's own composition
        node = OmegaConf.to_container(cfg, resolve=False)
    except OmegaConfBaseException as exc:
        raise ExperimentError(f"experiment {name}: {str(exc).strip().splitlines()[0]}") from None
    except OSError as exc:
        raise ExperimentError(f"experiment {name}: cannot read {path}: {exc.strerror}") from None
    if not isinstance(node, dict) or not isinstance(node.get("experiment"), dict):
        raise ExperimentError(f"experiment file {path.name} has no `experiment:` node "
                              "(see docs/tables.md, 'Experiments')")
    return parse(node["experiment"], default_name=path.stem)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ExperimentError(f"experiment.{where} must be a list of strings, got {value!r}")
    return tuple(value)


def parse(node: dict[str, Any], default_name: str = "experiment") -> Experiment:
    """An :class:`Experiment` from its ``experiment`` node; one-line errors naming the key."""
    if "sweep" in node:  # a checkpoint sweep (harness/run/sweep.py): its runs come from its checkpoints
        try:
            return sweep.parse(node, default_name)  # type: ignore[return-value]
        except sweep.SweepError as exc:
            raise ExperimentError(str(exc)) from None
    unknown = sorted(set(node) - _TOP_KEYS)
    if unknown:
        raise ExperimentError(f"experiment.{unknown[0]} is not an experiment key (keys: {', '.join(sorted(_TOP_KEYS))})")
    runs_node = node.get("runs")
    if not isinstance(runs_node, dict) or not runs_node:
        raise ExperimentError("experiment.runs must map each suite to its splits (suite: [split, ...])")
    runs = {str(s): _strings(splits, f"runs.{s}") for s, splits in runs_node.items() if splits is not None}
    if any(not splits for splits in runs.values()):
        raise ExperimentError("experiment.runs: every suite needs at least one split")
    suite_overrides = {str(s): _strings(v, f"suite_overrides.{s}") for s, v in (node.get("suite_overrides") or {}).items()}
    stray = sorted(set(suite_overrides) - set(runs))
    if stray:
        raise ExperimentError(f"experiment.suite_overrides.{stray[0]}: {stray[0]} is not among the runs' suites")
    variants_node = node.get("variants")
    if not isinstance(variants_node, dict) or not variants_node:
        raise ExperimentError("experiment.variants must map each variant name to its label and overrides")
    variants = []
    for vname, body in variants_node.items():
        if body is None:  # removed with experiment.variants.NAME=null
            continue
        if not isinstance(body, dict) or set(body) - {"label", "overrides", "serve"}:
            raise ExperimentError(f"experiment.variants.{vname} takes `label`, `overrides` and `serve`, got {body!r}")
        try:
            serve = servers.parse_variant(str(vname), body.get("serve"))
        except servers.ServeError as exc:
            raise ExperimentError(str(exc)) from None
        variants.append(Variant(str(vname), str(body.get("label") or vname),
                                _strings(body.get("overrides"), f"variants.{vname}.overrides"), serve))
    if not variants:
        raise ExperimentError("experiment.variants: every variant was removed")
    try:
        serve_settings = servers.parse_settings(node.get("serve"))
    except servers.ServeError as exc:
        raise ExperimentError(str(exc)) from None
    table = node.get("table") or {}
    unknown = sorted(set(table) - _TABLE_KEYS)
    if unknown:
        raise ExperimentError(f"experiment.table.{unknown[0]} is not a table key (keys: {', '.join(sorted(_TABLE_KEYS))})")
    # The metrics the runs' suites declare; no table.metrics: their headline (first default) metric.
    metric_decls = PLAIN.declared(runs)  # as declared (a table expands them per judge: metrics_of)
    allowed = metric_columns(metric_decls.values())
    allowed += [m for m in metric_columns(d for s in runs for d in suite_scoring(s)[0]) if m not in allowed]
    headline = [m.name for m in metric_decls.values() if m.default][:1]
    metrics = _strings(table.get("metrics", headline), "table.metrics")
    bad = [m for m in metrics if m not in allowed]
    if bad or not metrics:
        raise ExperimentError(f"experiment.table.metrics must be among {', '.join(allowed)}, got {list(metrics)}")
    columns = []
    for i, col in enumerate(table.get("columns") or []):
        if not isinstance(col, dict) or "suite" not in col or set(col) - _COLUMN_KEYS:
            raise ExperimentError(f"experiment.table.columns[{i}] takes label, suite, splits, metrics and role, "
                                  f"got {col!r}")
        suite = str(col["suite"])
        if suite not in runs:
            raise ExperimentError(f"experiment.table.columns[{i}]: suite {suite} is not among the runs "
                                  f"({', '.join(runs)})")
        splits = _strings(col.get("splits"), f"table.columns[{i}].splits") or runs[suite]
        missing = [s for s in splits if s not in runs[suite]]
        if missing:
            raise ExperimentError(f"experiment.table.columns[{i}]: split {missing[0]} is not among {suite}'s runs "
                                  f"({', '.join(runs[suite])})")
        own = _strings(col.get("metrics"), f"table.columns[{i}].metrics")
        mine = metric_columns(suite_scoring(suite)[0])  # as declared (not per judge: harness.judging.views)
        bad = [m for m in own if m not in mine]
        if bad:
            raise ExperimentError(f"experiment.table.columns[{i}].metrics: {bad[0]} is not a metric {suite} declares "
                                  f"({', '.join(mine)})")
        role = col.get("role")
        if role is not None and role not in ROLES:
            raise ExperimentError(f"experiment.table.columns[{i}].role must be one of {', '.join(ROLES)}, got {role!r}")
        columns.append(Column(str(col.get("label") or suite), suite, splits, own, role))
    if not columns:  # default: a column per suite/split run
        columns = [Column(f"{s}/{sp}", s, (sp,)) for s, splits in runs.items() for sp in splits]
    labels = [c.label for c in columns]
    if len(set(labels)) != len(labels):
        raise ExperimentError(f"experiment.table.columns: two columns are labelled alike ({labels})")
    baseline = table.get("baseline", variants[0].name)
    if baseline is not None and baseline not in {v.name for v in variants}:
        raise ExperimentError(f"experiment.table.baseline {baseline!r} is not one of its variants "
                              f"({', '.join(v.name for v in variants)})")
    delta = str(table.get("delta", "each"))
    if delta not in DELTA_MODES:
        raise ExperimentError(f"experiment.table.delta must be one of {', '.join(DELTA_MODES)}, got {delta!r}")
    paper = node.get("paper") or {}
    rows = paper.get("rows") or {}
    for vname, row in rows.items():
        if not isinstance(row, dict) or not all(isinstance(v, (int, float)) for v in row.values()):
            raise ExperimentError(f"experiment.paper.rows.{vname} maps column labels to numbers, got {row!r}")
        stray = sorted(set(row) - set(labels))
        if stray:
            raise ExperimentError(f"experiment.paper.rows.{vname}: {stray[0]!r} is not a column label ({labels})")
    return Experiment(
        name=str(node.get("name") or default_name), description=str(node.get("description") or ""),
        runs=runs, suite_overrides=suite_overrides, variants=tuple(variants), baseline=baseline,
        metrics=metrics, columns=tuple(columns), average=bool(table.get("average", False)), delta=delta,
        stats=bool(table.get("stats", True)), paper_source=paper.get("source"),
        paper_rows={str(k): {str(c): float(x) for c, x in v.items()} for k, v in rows.items()},
        serve=serve_settings,
    )
