"""One typed declaration per plugin: the parameters a suite, agent, executor or model
backend accepts, written once as a dataclass whose fields carry their rules.

From that declaration come

* validation (:func:`parse`): types, ranges, choices, URLs and paths; a bad value is a
  :class:`ParamError` whose ``str()`` is one line naming the key and what it accepts;
* defaults: the dataclass's (the configs do not repeat them; :mod:`harness.run.config`
  registers a schema node per plugin in Hydra's ConfigStore, built by
  :func:`harness.param_schema.schema_node`);
* documentation (:func:`harness.param_schema.describe`, ``harness list NAME``, docs/parameters.md);
* the run identity (:func:`identity_of`): each field says whether it changes results
  (``results=True``: hashed into the run identity) or only speed and transport
  (``results=False``: batch sizes, threads, timeouts, where data is read from when its
  content is hashed instead).

A declaration::

    @dataclass
    class RandomParams:
        seed: int = param(0, help="seed of the draws (with the episode key)", ge=0)

A plugin that takes parameters declares ``Params = RandomParams`` and parses its keyword
arguments with :func:`parse` (``self.params = parse(self.Params, values)``); the runner
hashes ``identity_of(plugin.params)`` into the run identity, so nothing is listed by hand.

A plugin whose accepted parameters depend on a choice (the ``vlm`` planner: its model
backend's, and the prompt settings of the suite it runs) declares a :class:`Composite`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import difflib
import math
import types
import typing
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, Union
from urllib.parse import urlsplit

from omegaconf import DictConfig, ListConfig, OmegaConf

from harness.util.redact import SECRET_FORMS, is_secret_key, register_declared


#: The suites one ``harness run`` invocation runs (every job of a sweep), set while its jobs are
#: checked: a declaration whose keys depend on the suite (the vlm planner's prompt settings)
#: refuses a key that applies to none of them. None outside a run: such a key is ignored.
INVOCATION_SUITES: "contextvars.ContextVar[frozenset[str] | None]" = contextvars.ContextVar(
    "invocation_suites", default=None)


class ParamError(ValueError):
    """A bad parameter value. ``str()`` is one line: ``<key> <what is wrong>``.

    ``key`` is the parameter's name; the CLI prefixes it with where it was given
    (``suite.params.``) through :meth:`at`.
    """

    def __init__(self, key: str, problem: str, *, unknown: bool = False):
        super().__init__(f"{key} {problem}")
        #: True: ``key`` is not a parameter at all (``problem`` then starts "is not a parameter").
        self.key, self.problem, self.unknown = key, problem, unknown

    def at(self, prefix: str) -> "ParamError":
        """The same error with the key shown as ``prefix + key``."""
        return type(self)(f"{prefix}{self.key}", self.problem, unknown=self.unknown)

    def of(self, plugin: str) -> str:
        """One line naming the plugin: ``unknown parameter 'x' for planner oracle; did you mean ...``."""
        if self.unknown:
            rest = self.problem[len("is not a parameter"):]
            return f"unknown parameter {self.key!r} for {plugin}{rest}"
        return f"{plugin}: {self.key} {self.problem}"


#: How a string parameter is checked beyond its type (``param(kind=...)``).
KINDS = ("url", "ws_url", "dir", "file", "path")


@dataclass(frozen=True)
class Rule:
    """What a declared field accepts and means (kept in the field's metadata)."""

    help: str
    #: True: changes results (hashed into the run identity); False: speed / transport only.
    results: bool = True
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | None = None
    #: One of :data:`KINDS`: the string is a URL (http/https, or ws/wss) or an existing path.
    kind: str | None = None
    #: Extra check ``check(value) -> value`` (may convert); raises ValueError("must be ...").
    check: Callable[[Any], Any] | None = None
    #: A second valid value, for conformance checks that vary each field (paths, free strings).
    example: Any = None
    #: Changes results, but enters the run identity through the plugin's ``identity()`` (the
    #: hash of the checkpoint a path names, the served model name), never as its value: two
    #: paths to the same weights are one run. Needs ``results=True``; :func:`identity_of`
    #: leaves the value out.
    via_identity: bool = False
    #: The value is a credential (:data:`harness.util.redact.SECRET_FORMS`): ``"value"`` a key, token or
    #: password; ``"env"`` the name of the environment variable holding one; ``"url"`` a URL whose
    #: userinfo is one (every ``kind="url"`` / ``"ws_url"`` field is read so). :func:`parse`
    #: registers it with :mod:`harness.util.redact` as it reads it: no text stored or printed after
    #: holds it, and no plugin has to remember to register its credentials itself.
    secret: str | None = None


def param(default: Any = MISSING, *, help: str, results: bool = True, ge: float | None = None,
          gt: float | None = None, le: float | None = None, lt: float | None = None,
          choices: Iterable[Any] | None = None, kind: str | None = None,
          check: Callable[[Any], Any] | None = None, example: Any = None, via_identity: bool = False,
          default_factory: Callable[[], Any] | None = None, secret: str | None = None) -> Any:
    """A declared field: ``name: type = param(default, help=..., ...)``.

    ``ge/gt/le/lt`` bound numbers (and each item of a list of numbers); ``choices`` lists
    the accepted values; ``kind`` checks a string as a URL or an existing path (None is
    always accepted for an ``Optional`` field). ``default`` omitted: the key is required.
    ``via_identity``: the field changes results through what it names, which the plugin's
    ``identity()`` hashes (see :attr:`Rule.via_identity`). ``secret``: the value is a credential
    (``"value"``), names the variable holding one (``"env"``) or is a URL that may carry one
    (``"url"``): see :attr:`Rule.secret`; a field named like a secret (``api_key``, ``token``,
    ``password``: :func:`harness.util.redact.is_secret_key`) must say so.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}")
    if secret is not None and secret not in SECRET_FORMS:
        raise ValueError(f"secret must be one of {', '.join(SECRET_FORMS)}, got {secret!r}")
    if kind in ("url", "ws_url") and secret is None:
        secret = "url"
    if via_identity and not results:
        raise ValueError("via_identity=True declares a field that changes results: it needs results=True")
    rule = Rule(help=help, results=results, ge=ge, gt=gt, le=le, lt=lt,
                choices=tuple(choices) if choices is not None else None, kind=kind, check=check, example=example,
                via_identity=via_identity, secret=secret)
    if default_factory is not None:
        return field(default_factory=default_factory, metadata={"param": rule})
    return field(default=default, metadata={"param": rule})


@dataclass(frozen=True)
class Field:
    """One declared parameter, resolved: name, type, default, rule."""

    name: str
    type: Any
    default: Any
    rule: Rule

    @property
    def required(self) -> bool:
        return self.default is MISSING

    @property
    def optional(self) -> bool:
        return is_optional(self.type)

    def type_text(self) -> str:
        return _type_text(self.type)

    def default_text(self) -> str:
        if self.required:
            return "required"
        return value_text(self.default)


def fields_of(cls: type) -> list[Field]:
    """The declared fields of a declaration dataclass, in order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a parameter declaration (a dataclass)")
    cached = _FIELDS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        rule = f.metadata.get("param")
        if rule is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with param(...)")
        if rule.secret is None and _named_like_a_secret(f.name):
            raise TypeError(f"{cls.__name__}.{f.name} is named like a credential: declare it "
                            f"param(..., secret='value') (or secret='env' / 'url'), so it is never stored")
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else MISSING)  # type: ignore[misc]
        out.append(Field(f.name, hints[f.name], default, rule))
    _FIELDS[cls] = out
    return out


_FIELDS: dict[type, list[Field]] = {}


def _named_like_a_secret(name: str) -> bool:
    return is_secret_key(name)


def register_secrets(cls: type, values: Mapping[str, Any]) -> None:
    """Register with :mod:`harness.util.redact` every value of ``values`` that ``cls`` declares secret."""
    for f in fields_of(cls):
        if f.rule.secret is not None and f.name in values:
            register_declared(f.rule.secret, values[f.name])


# --- parsing ------------------------------------------------------------------
def parse(declaration: Any, values: Mapping[str, Any] | None = None, *, suite: str | None = None) -> Any:
    """Validate and convert ``values`` against a declaration; defaults fill the rest.

    ``declaration``: a dataclass (returns an instance) or a :class:`Composite` (returns a
    :class:`Parsed` holding one instance per group). Raises :class:`ParamError`.
    """
    values = dict(_plain(values or {}))
    if isinstance(declaration, Composite):
        return declaration.parse(values, suite)
    return _parse_one(declaration, values)


def _parse_one(cls: type, values: dict[str, Any], where: str = "") -> Any:
    declared = fields_of(cls)
    # Credentials first: a refused value's message names it, and must not show it.
    register_secrets(cls, values)
    register_secrets(cls, {f.name: f.default for f in declared if not f.required})
    names = [f.name for f in declared]
    for key in values:
        if key not in names:
            raise unknown_key(key, names, where)
    kwargs = {}
    for f in declared:
        if f.name in values:
            kwargs[f.name] = convert(f, values[f.name])
        elif f.required:
            raise ParamError(f.name, f"is required: {f.rule.help}")
    try:
        return cls(**kwargs)
    except ParamError:
        raise
    except (ValueError, TypeError) as exc:  # a cross-field rule in __post_init__
        text = str(exc).strip().splitlines()
        raise ParamError("", text[0] if text else type(exc).__name__) from None


class UnknownParamError(ParamError, TypeError):
    """A key the declaration does not have: a :class:`ParamError`, and a ``TypeError`` as
    Python's own for an unexpected keyword argument (a plugin built with ``**values``)."""

    def __init__(self, key: str, problem: str, **_: Any):
        super().__init__(key, problem, unknown=True)


def unknown_key(key: str, accepted: Sequence[str], where: str = "") -> ParamError:
    close = difflib.get_close_matches(str(key), list(accepted), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return UnknownParamError(str(key), f"is not a parameter{where}{hint} (accepted: {', '.join(accepted) or 'none'})")


def convert(f: Field, value: Any) -> Any:
    """``value`` checked and converted to ``f``'s type and rule; :class:`ParamError` if it is not valid."""
    try:
        return _convert(f.type, value, f.rule)
    except _Bad as bad:
        raise ParamError(f.name, f"must be {bad.wanted}, got {value_text(value)}") from None


class _Bad(Exception):
    def __init__(self, wanted: str):
        self.wanted = wanted


def _convert(tp: Any, value: Any, rule: Rule) -> Any:
    if is_optional(tp):
        if value is None:
            return None
        inner = strip_optional(tp)
        try:
            return _convert(inner, value, rule)
        except _Bad as bad:
            raise _Bad(f"{bad.wanted}, or null") from None
    origin = typing.get_origin(tp)
    if origin in (list, tuple, Sequence, typing.Sequence) or tp in (list, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise _Bad(f"a list ({_type_text(tp)})")
        args = typing.get_args(tp)
        item_tp = args[0] if args else Any
        out = []
        for item in value:  # the rule (bounds, choices, kind) applies to each item
            try:
                out.append(_convert(item_tp, item, rule))
            except _Bad as bad:
                raise _Bad(f"a list whose items are each {bad.wanted}") from None
        return out
    if tp is Any or tp is object:
        return value
    if origin in (dict, Mapping, typing.Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise _Bad("a mapping")
        return dict(value)
    if tp is bool:
        return _check(_to_bool(value), rule)
    if tp is int:
        return _check(_to_int(value, rule), rule)
    if tp is float:
        return _check(_to_float(value, rule), rule)
    if tp is str:
        return _check(_to_str(value, rule), rule)
    raise TypeError(f"unsupported parameter type {tp!r}")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _Bad("true or false")


def range_text(rule: Rule, whole: bool) -> str:
    if whole and rule.ge is not None and rule.le is not None and rule.gt is None and rule.lt is None:
        return f"between {_num(rule.ge)} and {_num(rule.le)} (a whole number)"
    parts = []
    if rule.ge is not None:
        parts.append(f">= {_num(rule.ge)}")
    if rule.gt is not None:
        parts.append(f"> {_num(rule.gt)}")
    if rule.le is not None:
        parts.append(f"<= {_num(rule.le)}")
    if rule.lt is not None:
        parts.append(f"< {_num(rule.lt)}")
    what = "a whole number" if whole else "a finite number"
    return f"{what} {' and '.join(parts)}" if parts else what


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _to_int(value: Any, rule: Rule) -> int:
    wanted = range_text(rule, True)
    if isinstance(value, bool):
        raise _Bad(wanted)
    if isinstance(value, int):
        out = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        out = int(value)
    elif isinstance(value, str):
        try:
            out = int(value.strip())
        except ValueError:
            raise _Bad(wanted) from None
    else:
        raise _Bad(wanted)
    _bounds(out, rule, wanted)
    return out


def _to_float(value: Any, rule: Rule) -> float:
    wanted = range_text(rule, False)
    if isinstance(value, bool):
        raise _Bad(wanted)
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        try:
            out = float(value.strip())
        except ValueError:
            raise _Bad(wanted) from None
    else:
        raise _Bad(wanted)
    if not math.isfinite(out):
        raise _Bad(wanted)
    _bounds(out, rule, wanted)
    return out


def _bounds(x: float, rule: Rule, wanted: str) -> None:
    if ((rule.ge is not None and x < rule.ge) or (rule.gt is not None and x <= rule.gt)
            or (rule.le is not None and x > rule.le) or (rule.lt is not None and x >= rule.lt)):
        raise _Bad(wanted)


def _to_str(value: Any, rule: Rule) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
        if rule.choices is None or text not in rule.choices:
            raise _Bad(str_wanted(rule))
        return text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a name or path that looks like a number (model=7)
    if not isinstance(value, str):
        raise _Bad(str_wanted(rule))
    if rule.kind in ("url", "ws_url"):
        _check_url(value, rule)
    elif rule.kind in ("dir", "file", "path"):
        _check_path(value, rule)
    return value


def str_wanted(rule: Rule) -> str:
    if rule.choices is not None:
        return "one of " + ", ".join(map(str, rule.choices))
    return {"url": "an http(s) URL such as http://127.0.0.1:8000/v1",
            "ws_url": "a ws:// or wss:// URL such as ws://127.0.0.1:8000",
            "dir": "an existing folder", "file": "an existing file",
            "path": "an existing file or folder"}.get(rule.kind or "", "a string")


def _check_url(value: str, rule: Rule) -> None:

    schemes = ("http", "https") if rule.kind == "url" else ("ws", "wss")
    try:
        parts = urlsplit(value)
        ok = parts.scheme in schemes and bool(parts.hostname) and (parts.port is None or 0 < parts.port < 65536)
    except ValueError:
        ok = False
    if not ok:
        raise _Bad(str_wanted(rule))


def _check_path(value: str, rule: Rule) -> None:
    path = Path(value).expanduser()
    ok = {"dir": path.is_dir, "file": path.is_file, "path": path.exists}[rule.kind]()  # type: ignore[index]
    if not ok:
        raise _Bad(str_wanted(rule))


def _check(value: Any, rule: Rule) -> Any:
    if rule.choices is not None and value not in rule.choices:
        raise _Bad("one of " + ", ".join(map(value_text, rule.choices)))
    if rule.check is not None:
        try:
            value = rule.check(value)
        except ValueError as exc:
            text = str(exc).strip() or "valid"
            raise _Bad(text[len("must be "):] if text.startswith("must be ") else text) from None
    return value


def _plain(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """OmegaConf containers as plain Python values."""
    if isinstance(values, (DictConfig, ListConfig)):
        return OmegaConf.to_container(values, resolve=True)  # type: ignore[return-value]
    return {k: (OmegaConf.to_container(v, resolve=True) if isinstance(v, (DictConfig, ListConfig)) else v)
            for k, v in values.items()}


# --- composite declarations ---------------------------------------------------------
@dataclass(frozen=True)
class Group:
    """One part of a :class:`Composite`: a title (``backend hf``) and its declaration; ``plugin``:
    the plugin the group's values choose (the model backend), whose :attr:`~harness.plugins.Plugin.modules`
    a run needs as well."""

    title: str
    params: type
    plugin: Any = None


class Parsed(dict):
    """A composite's parsed parameters: group title -> declaration instance.

    Attribute access reads a field from whichever group declares it."""

    def __getattr__(self, name: str) -> Any:
        for inst in self.values():
            if any(f.name == name for f in fields_of(type(inst))):
                return getattr(inst, name)
        raise AttributeError(name)


class Composite:
    """A declaration made of groups chosen by a value and by the suite a run uses.

    ``groups(values, suite)`` returns the groups that apply (the first one is the
    plugin's own); ``all_groups()`` every group that could (for the ConfigStore
    schema, ``harness list`` and "that key belongs to ..." messages). Keys are
    flat: each applicable group takes the keys it declares.
    """

    def groups(self, values: Mapping[str, Any], suite: str | None) -> list[Group]:
        raise NotImplementedError

    def all_groups(self) -> list[Group]:
        raise NotImplementedError

    def parse(self, values: Mapping[str, Any], suite: str | None) -> Parsed:
        groups = self.groups(values, suite)
        taken: set[str] = set()
        out = Parsed()
        for group in groups:
            names = {f.name for f in fields_of(group.params)}
            mine = {k: v for k, v in values.items() if k in names and k not in taken}
            taken |= names
            out[group.title] = _parse_one(group.params, mine)
        for key in values:
            if key not in taken:
                owners = [g.title for g in self.all_groups()
                          if g.title not in out and any(f.name == key for f in fields_of(g.params))]
                if owners:
                    raise ParamError(key, f"is a parameter of {' / '.join(owners)}, which this run does not use "
                                          f"(it uses {', '.join(out)})")
                raise unknown_key(key, sorted(taken))
        return out


def values_of(params: Any) -> dict[str, Any]:
    """Every field of a parsed declaration (each applicable group of a :class:`Parsed`),
    flat: the keyword arguments that build the plugin again."""
    if params is None:
        return {}
    if isinstance(params, Parsed):
        out: dict[str, Any] = {}
        for inst in params.values():
            out.update(values_of(inst))
        return out
    return {f.name: getattr(params, f.name) for f in fields_of(type(params))}


# --- identity and the text of types and values -----------------------------------------
def identity_of(params: Any) -> dict[str, Any]:
    """The result-changing fields of a parsed declaration (or of each group of a
    :class:`Parsed`), as JSON-ready values: what the run identity hashes."""
    if params is None:
        return {}
    if isinstance(params, Parsed):
        return {title: identity_of(inst) for title, inst in params.items()}
    return {f.name: _jsonable(getattr(params, f.name)) for f in fields_of(type(params))
            if f.rule.results and not f.rule.via_identity}


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _type_text(tp: Any) -> str:
    if is_optional(tp):
        return _type_text(strip_optional(tp)) + " | null"
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return f"list[{_type_text(args[0]) if args else 'any'}]"
    if origin in (dict, Mapping):
        return "mapping"
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


def value_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def strip_optional(tp: Any) -> Any:
    if not is_optional(tp):
        return tp
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 else Union[tuple(args)]  # type: ignore[return-value]


@dataclass
class NoParams:
    """The declaration of a plugin that takes no parameters."""
