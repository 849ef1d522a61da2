"""A parameter declaration (:mod:`harness.params`) as the rest of the harness reads it: the rows
``harness list NAME`` and docs/parameters.md show (:func:`describe`: name, type, default, what it
accepts, whether it changes results), and the schema node Hydra's ConfigStore holds for it
(:func:`schema_node`: :mod:`harness.run.config` registers one per plugin, so a composed config
shows the defaults and an override of an unknown key fails at composition)."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.params import (
    Composite, Field, Group, fields_of, is_optional, range_text, str_wanted, strip_optional, value_text,
)


@dataclass(frozen=True)
class Row:
    """One parameter as documentation shows it."""

    group: str
    name: str
    type: str
    default: str
    results: bool | str  # True, False, or "via identity"
    help: str
    accepts: str


def describe(declaration: Any, keep: Callable[[Any], bool] | None = None) -> list[Row]:
    """Every parameter of a declaration (each group of a composite) for ``harness list`` and docs.
    ``keep(params)``: which of a composite's groups to show (by their declaration class)."""
    if declaration is None:
        return []
    groups = declaration.all_groups() if isinstance(declaration, Composite) else [Group("", declaration)]
    if keep is not None and isinstance(declaration, Composite):
        groups = [g for g in groups if keep(g.params)]
    rows = []
    for group in groups:
        for f in fields_of(group.params):
            rows.append(Row(group.title, f.name, f.type_text(), f.default_text(),
                            "via identity" if f.rule.via_identity else f.rule.results, f.rule.help,
                            _accepts_text(f)))
    return rows


def _accepts_text(f: Field) -> str:
    rule = f.rule
    base = strip_optional(f.type)
    if typing.get_origin(base) in (list, tuple):
        base = (typing.get_args(base) or (Any,))[0]
        prefix = "items "
    else:
        prefix = ""
    if rule.choices is not None:
        text = "one of " + ", ".join(map(value_text, rule.choices))
    elif base is bool:
        text = "true or false"
    elif base in (int, float):
        text = range_text(rule, base is int)
    elif base is str and rule.kind:
        text = str_wanted(rule)
    else:
        text = ""
    if text and prefix:
        text = prefix + text
    if f.optional:
        text = f"{text}, or null" if text else "null or a value"
    return text


def schema_node(declaration: Any, *, name: str | None = None) -> type:
    """A dataclass for Hydra's ConfigStore with the declaration's fields and defaults, so
    a composed config shows them and an override of an unknown key fails at composition.

    Booleans are typed ``Any`` in the node: OmegaConf would read ``2`` as true, and
    :func:`parse` (run right after composition) accepts only true/false. A composite's
    node holds every group's fields with ``None`` defaults (the applicable group's own
    default is used), so a key given for a group the run does not use is still seen.
    """
    head = [("name", str, field(default=name))] if name is not None else []
    if isinstance(declaration, (Composite, list, tuple)):
        groups = declaration.all_groups() if isinstance(declaration, Composite) else \
            [Group("", d) for d in declaration]
        seen: dict[str, Any] = {}
        for group in groups:
            for f in fields_of(group.params):
                seen.setdefault(f.name, (f.name, _node_type(f, loose=True), field(default=None)))
        return dataclasses.make_dataclass("UnionParamsNode", head + list(seen.values()))
    specs = list(head)
    for f in fields_of(declaration):
        if f.required:
            specs.append((f.name, Any, field(default="???")))
            continue
        default = f.default
        if isinstance(default, (list, dict, tuple)):
            specs.append((f.name, _node_type(f), field(default_factory=lambda d=default: list(d)
                                                             if isinstance(d, (list, tuple)) else dict(d))))
        else:
            specs.append((f.name, _node_type(f), field(default=default)))
    return dataclasses.make_dataclass(f"{declaration.__name__}Node", specs)


def _node_type(f: Field, loose: bool = False) -> Any:
    tp = f.type
    if f.rule.choices is not None and {"true", "false"} & set(map(str, f.rule.choices)):
        return Any  # auto / true / false: OmegaConf would turn a given false into the string 'False'
    optional = is_optional(tp) or loose
    base = strip_optional(tp)
    origin = typing.get_origin(base)
    if base in (int, float, str):
        node: Any = base
    elif origin in (list, tuple):
        args = typing.get_args(base)
        inner = args[0] if args and args[0] in (int, float, str) else Any
        node = typing.List[inner]  # type: ignore[valid-type]
    else:
        return Any
    return typing.Optional[node] if optional else node
