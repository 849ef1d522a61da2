"""The failure table (``harness table --by failure``, the report's failure chart): the share of
each variant's episodes in each failure class of :mod:`harness.scoring.failures`."""

from __future__ import annotations

from typing import Any, Iterable

from harness.interfaces import FailureClass
from harness.scoring.failures import GENERIC, classes_of, classify_frame, undeclared
from harness.tables import caveats


def failure_table(frame: Any, classes: Iterable[str] | None = None) -> Any:
    """Variant rows x failure-class columns: % of each variant's episodes per
    suite/split group ("suite/split" column groups collapse to one table per
    variant and group), with the episode count. Columns are the classes that occur,
    in their declared order (:func:`classes_of`); a class no suite of the frame declares
    is counted too, after the declared ones. ``table.attrs["classes"]``: the
    :class:`FailureClass` of each column (labels, colours)."""
    df = frame.copy()
    df["failure"] = [str(c) for c in classes] if classes is not None else classify_frame(df)
    df["group"] = df["suite"].astype(str) + "/" + df["split"].astype(str)
    counts = df.groupby(["variant", "group", "failure"]).size().unstack("failure", fill_value=0)
    order = classes_of(df["suite"].astype(str), counts.columns)
    declared = [c for c in order if c.name in counts.columns]
    counts = counts[[c.name for c in declared]]
    n = counts.sum(axis=1)
    table = counts.div(n, axis=0).mul(100.0)
    table.insert(0, "n", n)
    table.attrs["classes"] = declared
    table.attrs["caveats"] = {"cells": caveats.cells(df, df["variant"].astype(str), df["group"])}
    return table


def column_classes(table: Any) -> list[FailureClass]:
    """The :class:`FailureClass` of each class column of a :func:`failure_table`."""
    known = {c.name: c for c in table.attrs.get("classes", ())}
    return [known.get(c) or GENERIC.get(c) or undeclared(str(c)) for c in table.columns if c != "n"]


def failure_markdown(table: Any) -> str:
    classes = column_classes(table)
    cols = [c.name for c in classes]
    lines = ["| variant | suite/split | n | " + " | ".join(cols) + " |",
             "|:---|:---|---:|" + "---:|" * len(cols)]
    for (variant, group), row in table.iterrows():
        cells = [f"{row[c]:.1f}" for c in cols]
        lines.append(f"| {variant} | {group} | {int(row['n'])} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("% of each row's episodes per failure class (rules: harness/scoring/failures.py and each suite's reader).")
    lines += [f"{c.name}: {c.label}" for c in classes]
    shown = _episodes_of_split(table)
    if shown:
        lines.append("Episodes run / in the split: " + "; ".join(f"{v}, {g}: {t}" for (v, g), t in shown.items()) + ".")
    return "\n".join(lines) + "\n"


def _episodes_of_split(table: Any) -> dict[tuple[str, str], str]:
    """(variant, suite/split) -> 'n/N' or 'n (total unknown)' (harness.tables.caveats)."""
    return {(str(c["row"]), str(c["group"])): caveats.episodes_text(c)
            for c in table.attrs.get("caveats", {}).get("cells", [])}


def failure_csv(table: Any) -> str:
    out = table.reset_index()
    shown = _episodes_of_split(table)
    if shown:  # the split's total beside n (empty where unknown)
        totals = {k: t.split("/", 1)[1] if "/" in t else "" for k, t in shown.items()}
        out.insert(3, "of_split", [totals.get((str(v), str(g)), "") for v, g in zip(out["variant"], out["group"])])
    return out.to_csv(index=False, float_format="%.2f")
