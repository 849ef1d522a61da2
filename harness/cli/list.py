"""``harness list [NAME]``: the registered plugins, or one plugin's parameters."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from harness.cli.common import UsageError, summary
from harness.param_schema import describe
from harness.plugins import warn_problems
from harness.registry.catalog import BACKENDS, EXECUTORS, PLANNERS, POLICIES, SUITES, TRACKERS, found
from harness.run.config import CONFIG_DIR
from harness.scoring.failures import declared_classes


def add_parser(sub: Any) -> None:
    p = sub.add_parser("list", help=summary("list"))
    p.add_argument("name", nargs="?", default=None,
                   help="a suite, agent, executor or model backend (a suite's own agent: SUITE.NAME, e.g. "
                        "SUITE.oracle)")


def main(args: argparse.Namespace) -> int:
    warn_problems(found())
    if args.name:
        return _one(args.name)
    for registry in (SUITES, PLANNERS, POLICIES, EXECUTORS, BACKENDS, TRACKERS):
        print(f"{registry.plural}:")
        for entry in registry.entries():
            owner = getattr(entry, "suite", None)
            label = f"{entry.name} ({owner})" if owner else entry.name
            print(f"  {label:<26} {entry.summary}")
        if not registry.names():
            print("  (none yet)")
    variants = sorted(p.stem for p in (CONFIG_DIR / "variant").glob("*.yaml"))
    print(f"variants (configs/variant: {CONFIG_DIR / 'variant'}):")
    print("  " + ", ".join(variants))
    print("`harness list NAME` lists a plugin's parameters.")
    return 0


def _one(name: str) -> int:
    suite, _, agent = name.partition(".") if "." in name else (None, "", name)
    hits = []
    for registry in (SUITES, PLANNERS, POLICIES, EXECUTORS, BACKENDS, TRACKERS):
        for entry in registry.entries():
            owner = getattr(entry, "suite", None)
            if entry.name == agent and (suite is None or owner == suite):
                hits.append((registry.kind, entry))
    if not hits:
        names = sorted({e.name for r in (SUITES, PLANNERS, POLICIES, EXECUTORS, BACKENDS, TRACKERS) for e in r.entries()})
        close = difflib.get_close_matches(agent, names, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"no plugin called {name!r}{hint} (`harness list` names them)")
    for kind, entry in hits:
        owner = getattr(entry, "suite", None)
        print(f"{kind} {entry.name}" + (f" (suite {owner}'s own)" if owner else "") + f": {entry.summary}")
        if getattr(entry, "default_split", None):
            print(f"  default split: {entry.default_split}")
        for m in getattr(entry, "metrics", ()):  # what `harness table --metrics` takes for it
            flags = ", ".join(f for f, on in (("default", m.default), ("binary", m.binary), ("judged", m.judged),
                                               ("lower is better", not m.higher_is_better)) if on)
            print(f"  metric {m.name} ({m.label}; {m.aggregation}, {m.unit} in [{m.range[0]:g}, {m.range[1]:g}]"
                  + (f"; {flags}" if flags else "") + (f"; applies where {m.applies}" if m.applies else "")
                  + f"; {m.policy})" + (f": {m.description}" if m.description else ""))
        if kind == "suite":  # the classes `harness table --by failure` and the report show for it
            own = {c.name for c in getattr(entry, "failure_classes", ()) or ()}
            print("  failure classes (harness table --by failure): " + ", ".join(
                f"{c.name}{' (its own: ' + c.label + ')' if c.name in own else ''}"
                for c in declared_classes(entry.name)))
        if getattr(entry, "breakdowns", ()):  # what `harness table --by` takes for it beside task_type
            print(f"  breakdowns (harness table --by): task_type, {', '.join(entry.breakdowns)}")
        if entry.extra:
            print(f"  needs the extra: pip install -e '.[{entry.extra}]'")
        _print_params(entry.params, "  ")
        if getattr(entry, "prompt_params", None) is not None:
            print("  prompt settings for VLM planners (planner.params.*):")
            _print_params(entry.prompt_params, "    ")
        if kind == "suite":
            own = [e for r in (PLANNERS, POLICIES) for e in r.entries() if getattr(e, "suite", None) == entry.name]
            if own:
                print("  its own agents: " + ", ".join(f"{e.name} ({e.summary})" for e in own))
        print()
    return 0


def _print_params(declaration: Any, indent: str) -> None:
    rows = describe(declaration)
    if not rows:
        print(f"{indent}no parameters")
        return
    group = None
    for row in rows:
        if row.group != group and row.group:
            group = row.group
            print(f"{indent}[{group}]")
        mark = ("  (in the run identity through what it names)" if row.results == "via identity"
                else "" if row.results else "  (not in the run identity)")
        accepts = f"; {row.accepts}" if row.accepts else ""
        print(f"{indent}{row.name}: {row.type} = {row.default}{accepts}{mark}")
        print(f"{indent}    {row.help}", file=sys.stdout)
