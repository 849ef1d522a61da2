"""Which judge's scores a table shows: ``harness table/report/export --judge``.

``harness judge`` stores verdicts beside the answers (the store's ``judgements`` table, one
row per answer and judge). A table reads them into the records' per-episode values, so a
suite's ``judged`` metrics aggregate like any other metric (means, Δ, paired intervals).

A *judge* here is a judge config as the user ran it: its name, backend, model, the backend's
identity (served weights), sampling and rubric parameters (a prompt file's text). One judge
scoring two suites has two ``judge_id``s (the suite's rubric is part of the id); it is still
one judge to choose. Two prompts of one model are two judges.

- ``--judge NAME`` (a judge's name, ``name/model``, or a prefix of its key): that judge's values;
- ``--judge A,B``: the mean of those judges' readable verdicts, per answer and value;
- ``--judge all``: side by side, each judged metric once per judge (``S [A]``, ``S [B]``) where
  several judges scored it (a value one judge alone gives, such as a local scorer's, keeps
  its plain column);
- no flag: the store's only judge; with several, ``all``; with none, judged metrics stay
  empty and a note says how to fill them.

A verdict that could not be read (``unreadable``) or a call that failed (``error``) gives no
value, never a 0; the footnotes count them per judge. With two or more judges over the same
answers, their agreement (:func:`harness.judging.agreement.agreement`) is in the footnotes, the table's
JSON and the report.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.judging.agreement import agreement
from harness.judging.stage import unanswered
from harness.judging.verdicts import ANSWER_KEY as KEY
from harness.scoring.policy import Scoring, suite_scoring
from harness.values import ValueState, read_value

#: ``--judge`` words that are not judge names.
ALL = "all"


class JudgeSelectionError(ValueError):
    """A ``--judge`` that names no judge of the stores (one line)."""


@dataclass(frozen=True)
class Judge:
    key: str  # hash of the judge's identity without its rubric
    name: str
    model: str
    tag: str  # how tables and the footnotes name it
    judge_ids: tuple[str, ...]


@dataclass
class JudgeView:
    """What a table shows of the stores' judges (see the module doc)."""

    mode: str  # "none" | "one" | "mean" | "each"
    judges: list[Judge] = field(default_factory=list)  # every judge with verdicts on the shown answers
    chosen: list[Judge] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # tag -> status -> verdicts
    agreement: dict[str, Any] = field(default_factory=dict)
    judged_metrics: list[str] = field(default_factory=list)  # labels of the shown suites' judged metrics
    #: Values two or more chosen judges gave: in ``each`` mode only these get one column per judge
    #: (a value one judge alone gives, e.g. a local scorer's, keeps its plain column).
    shared_values: set[str] = field(default_factory=set)

    @property
    def tags(self) -> list[str]:
        """Suffixes of the per-judge metrics in ``each`` mode (else empty)."""
        return [j.tag for j in self.chosen] if self.mode == "each" else []

    @property
    def scoring(self) -> Scoring:
        """How tables of this view declare its suites' metrics: each judged metric that several
        chosen judges scored once per judge in ``each`` mode, else once."""
        return Scoring(judge_columns=tuple(self.tags), judged_by_several=frozenset(self.shared_values))

    def notes(self) -> list[str]:
        """Footnote lines: which judge the judged metrics come from, unreadable and failed
        verdicts per judge, and the judges' agreement."""
        if not self.judged_metrics:
            return []
        names = ", ".join(self.judged_metrics)
        if self.mode == "none":
            if not self.judges:
                return [f"judged metrics ({names}) have no values: no judge has scored these answers "
                        "(harness judge OUT judge=NAME)."]
            return [f"judged metrics ({names}): no judge chosen."]
        out = []
        which = {"one": f"judge {self._label(self.chosen[0])}",
                 "mean": "the mean of the readable verdicts of judges " + ", ".join(map(self._label, self.chosen)),
                 "each": ("each judge in its own columns" if self.shared_values else "each judge's own values")
                 + ": " + ", ".join(map(self._label, self.chosen))}[self.mode]
        out.append(f"judged metrics ({names}): {which}.")
        for j in self.chosen:
            c = self.counts.get(j.tag, {})
            line = (f"judge {j.tag}: {c.get('ok', 0)} readable verdicts, {c.get('unreadable', 0)} unreadable, "
                    f"{c.get('error', 0)} failed calls")
            if c.get("unreadable", 0) + c.get("error", 0):
                line += " (those give no value, not a 0"
                line += "; rerunning harness judge retries the failed calls)" if c.get("error", 0) else ")"
            out.append(line + ".")
        for value, a in self.agreement.items():
            alpha = a.get("alpha")
            rhos = "; ".join(f"{self._tag_of(p['a'])} vs {self._tag_of(p['b'])} {_fmt(p['rho'])} over {p['n']}"
                             for p in a.get("pairs", []))
            out.append(f"judge agreement on {value}: Krippendorff's alpha (interval) {_fmt(alpha)} over "
                       f"{a.get('answers', 0)} answers; Spearman's rho {rhos}.")
        unchosen = [j for j in self.judges if j not in self.chosen]
        if unchosen and self.mode != "none":
            out.append("also in the store: judge " + ", ".join(j.tag for j in unchosen)
                       + " (--judge NAME picks one, --judge A,B averages, --judge all shows each).")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "chosen": [j.tag for j in self.chosen],
            "judges": [{"tag": j.tag, "name": j.name, "model": j.model, "key": j.key,
                        "judge_ids": list(j.judge_ids), "verdicts": self.counts.get(j.tag, {})}
                       for j in self.judges],
            "agreement": {v: {**a, "judges": [self._tag_of(k) for k in a.get("judges", [])],
                              "pairs": [{**p, "a": self._tag_of(p["a"]), "b": self._tag_of(p["b"])}
                                        for p in a.get("pairs", [])]}
                          for v, a in self.agreement.items()},
        }

    def _label(self, j: Judge) -> str:
        return j.tag if j.model in j.tag else f"{j.tag} ({j.model})"

    def _tag_of(self, key: str) -> str:
        return next((j.tag for j in self.judges if j.key == key), key)


def _fmt(x: Any) -> str:
    return "not computed" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def judge_key(identity: dict[str, Any], name: str = "") -> str:
    """The judge a verdict belongs to (12 hex digits): its name and everything in its identity
    that changes a verdict (model, served weights, sampling, the rubric parameters such as a
    prompt file's text) except the suite's own rubric, so one judge of two suites is one judge
    and two prompts of one model are two."""
    rest = {k: v for k, v in identity.items() if k not in ("rubric", "rubric_version")}
    rest["name"] = str(name)
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def judges_of(verdicts: Any) -> list[Judge]:
    """The judges of a ``judgements`` frame, in order of first verdict, with unambiguous tags."""
    seen: dict[str, dict[str, Any]] = {}
    for row in verdicts.sort_values("judged_at", kind="stable").to_dict("records"):
        k = judge_key(row["identity"], row["judge"])
        j = seen.setdefault(k, {"name": str(row["judge"]), "model": str(row["identity"].get("model", "")),
                                "ids": []})
        if row["judge_id"] not in j["ids"]:
            j["ids"].append(row["judge_id"])
    names = [j["name"] for j in seen.values()]
    pairs = [(j["name"], j["model"]) for j in seen.values()]
    out = []
    for k, j in seen.items():
        if names.count(j["name"]) == 1:
            tag = j["name"]
        elif pairs.count((j["name"], j["model"])) == 1:
            tag = f"{j['name']}/{j['model']}"
        else:
            tag = f"{j['name']}#{k[:8]}"
        out.append(Judge(k, j["name"], j["model"], tag, tuple(j["ids"])))
    return out


def _pick(judges: list[Judge], text: str) -> Judge:
    for match in (lambda j: j.tag == text, lambda j: j.name == text, lambda j: len(text) >= 4 and j.key.startswith(text)):
        found = [j for j in judges if match(j)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise JudgeSelectionError(f"--judge {text!r} names several judges ({', '.join(j.tag for j in found)}): "
                                      "give one of those names")
    known = ", ".join(j.tag for j in judges) or "none: run harness judge OUT judge=NAME first"
    raise JudgeSelectionError(f"--judge {text!r}: no such judge in the store (judges: {known})")


def apply(df: Any, verdicts: Any, selector: str | None, judged_labels: Sequence[str]) -> tuple[Any, JudgeView]:
    """``df`` (a records frame) with the chosen judges' values merged into each row's ``values``.

    ``verdicts``: the stores' ``judgements`` rows; ``judged_labels``: labels of the judged
    metrics the shown suites declare (for the footnotes). Raises :class:`JudgeSelectionError`.
    """
    keys = set(map(tuple, df[list(KEY)].astype({"seed": int}).itertuples(index=False, name=None))) if len(df) else set()
    if verdicts is not None and len(verdicts):
        verdicts = verdicts[[tuple(r) in keys for r in verdicts[list(KEY)].astype({"seed": int}).itertuples(
            index=False, name=None)]]
    judges = judges_of(verdicts) if verdicts is not None and len(verdicts) else []
    view = JudgeView(mode="none", judges=judges, judged_metrics=list(judged_labels))
    if selector is not None and not str(selector).strip():
        raise JudgeSelectionError("--judge needs a judge name, A,B or all")
    if selector is None:
        chosen = judges[:1] if len(judges) == 1 else judges
        view.mode = "none" if not judges else "one" if len(judges) == 1 else "each"
    elif selector.strip() == ALL:
        if not judges:
            raise JudgeSelectionError("--judge all: no judge has scored these answers (harness judge OUT judge=NAME)")
        chosen, view.mode = judges, "each" if len(judges) > 1 else "one"
    else:
        parts = [p.strip() for p in selector.split(",")]
        if not all(parts):
            raise JudgeSelectionError(f"--judge {selector!r}: comma-separated judge names expected (an empty name)")
        chosen = list(dict.fromkeys(_pick(judges, p) for p in parts))
        view.mode = "one" if len(chosen) == 1 else "mean"
    view.chosen = list(chosen)
    if not chosen:
        return df, view
    by_key = {j.key: j for j in judges}
    rows = verdicts.assign(_judge=[judge_key(i, n) for i, n in zip(verdicts["identity"], verdicts["judge"])])
    for j in chosen:
        mine = rows[rows["_judge"] == j.key]
        view.counts[j.tag] = {s: int((mine["status"] == s).sum()) for s in ("ok", "unreadable", "error")}
    # agreement between the chosen judges (or every judge, one being shown): judge identity -> judge
    pool = rows[rows["_judge"].isin({j.key for j in (chosen if len(chosen) > 1 else judges)})]
    view.agreement = agreement(pool.assign(judge_id=pool["_judge"]))
    ok = rows[(rows["status"] == "ok") & rows["_judge"].isin({j.key for j in chosen})]
    givers: dict[str, set[str]] = {}
    for r in ok.to_dict("records"):
        for name, x in (r["values"] or {}).items():
            if _number(x) is not None:
                givers.setdefault(name, set()).add(r["_judge"])
    view.shared_values = {name for name, js in givers.items() if len(js) > 1}
    filled: dict[tuple, dict[str, list[float]]] = {}
    for r in ok.to_dict("records"):
        k = (r["run_id"], r["suite"], r["split"], r["episode_id"], int(r["seed"]))
        for name, x in (r["values"] or {}).items():
            x = _number(x)
            if x is not None:
                suffix = f"@{by_key[r['_judge']].tag}" if view.mode == "each" and name in view.shared_values else ""
                filled.setdefault(k, {}).setdefault(name + suffix, []).append(x)
    if not filled:
        return df, view
    # An answer that errored, is empty, or that its env marked as no answer (an absent, empty or
    # unreadable answer field) has nothing to judge: each value the chosen judges give is None
    # there, so the metric's error policy counts it (docs/judging.md). Answers not judged (yet),
    # or whose verdicts were unreadable or failed, stay without a value (absent, never NaN): a
    # judged metric reads an absent value as unscored (harness.scoring.policy.classify).
    given: list[str] = []
    for n in givers:
        split = view.mode == "each" and n in view.shared_values
        given += [f"{n}@{t}" for t in view.tags] if split else [n]
    new_values = []
    for row, values, no_answer in zip(df[list(KEY)].itertuples(index=False, name=None), df["values"],
                                       _unanswered(df)):
        add = filled.get((row[0], row[1], row[2], row[3], int(row[4])))
        merged = dict(values) if isinstance(values, dict) else {}
        if add:
            merged.update({n: sum(xs) / len(xs) for n, xs in add.items()})
        elif no_answer:
            merged.update({n: None for n in given if n not in merged})
        new_values.append(merged)
    return df.assign(values=new_values), view


def _unanswered(df: Any) -> list[bool]:
    """Per record: :func:`harness.judging.stage.unanswered` (nothing to judge: it counts as the judged
    metrics' missing value)."""
    none = [None] * len(df)
    judged: dict[str, set[str]] = {}
    out = []
    for suite, kind, extra, values in zip(df["suite"] if "suite" in df else none,
                                          df["error_kind"] if "error_kind" in df else none,
                                          df["extra"] if "extra" in df else none,
                                          df["values"] if "values" in df else none):
        if str(suite) not in judged:
            judged[str(suite)] = {m.value for m in suite_scoring(str(suite))[0] if m.judged}
        out.append(unanswered(kind, extra, values, judged[str(suite)]))
    return out


def _number(v: Any) -> float | None:
    """A verdict's value as a number (:func:`harness.values.read_value`'s VALUE); None for
    anything else, which then gives the answer no value: it stays unscored."""
    state, x = read_value(v)
    return x if state is ValueState.VALUE else None
