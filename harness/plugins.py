"""What a plugin declares about itself, and how plugins are found.

Every suite, agent (planner or policy), executor and model backend -- built-in or
from another package -- is one :class:`Plugin` object registered under an entry-point
group (pytest's and Gymnasium's pattern)::

    [project.entry-points."embodied_transfer.suites"]
    example = "example_suite.plugin:SUITE"

    [project.entry-points."embodied_transfer.agents"]
    "example.oracle" = "example_suite.plugin:ORACLE"

The object names a lazy ``"module:attr"`` target (imported only when the plugin is
built, so ``harness list`` is instant) and its parameter declaration
(:mod:`harness.params`), which must live in a module that imports nothing heavy.

An agent may belong to a suite (``suite="example"``): it is that suite's own
``oracle`` / ``random``, and ``planner=oracle`` on that suite runs it. Agents without a
suite serve every suite whose actions they produce.

This project's own plugins are declared the same way in its pyproject.toml. When the
harness runs from a source checkout, that file is read directly, so an editable install
made before a plugin was added still finds it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.metric_declaration import check_metrics

#: Entry-point group per plugin kind (agents: planners and policies).
GROUPS = {
    "suite": "embodied_transfer.suites",
    "agent": "embodied_transfer.agents",
    "executor": "embodied_transfer.executors",
    "backend": "embodied_transfer.model_backends",
    "tracker": "embodied_transfer.trackers",
}

#: Entry-point group of the commands other packages add to ``harness`` (name = a module with
#: ``add_parser(sub)`` and ``main(args)``, as :mod:`harness.cli`'s own).
COMMAND_GROUP = "embodied_transfer.commands"

#: This project's distribution name (its plugins come from its pyproject.toml in a checkout).
DISTRIBUTION = "embodied-transfer"


@dataclass(frozen=True)
class Plugin:
    """A plugin's self-description. ``target`` is ``"module:attr"`` of its factory."""

    name: str
    target: str
    summary: str = ""
    #: The parameter declaration: a dataclass or a :class:`harness.params.Composite`; None: none.
    params: Any = None
    #: The pyproject extra that installs what the target imports (None: the core install).
    extra: str | None = None
    #: Top-level modules of its extra that its code imports (lazily, when it is built): for
    #: one-line "install the extra" errors (:mod:`harness.registry.extras`); an agent's, and its chosen
    #: model backend's, are looked up by ``harness run`` and its ``--dry-run`` before anything
    #: runs (:func:`harness.registry.extras.not_installed`).
    modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if ":" not in self.target:
            raise ValueError(f"target of plugin {self.name!r} must be 'module:attr', got {self.target!r}")


@dataclass(frozen=True)
class SuitePlugin(Plugin):
    #: The split ``harness run suite=NAME`` runs when no split is given.
    default_split: str | None = None
    #: ``"module:attr"`` of the suite's prompt adapter factory for VLM planners
    #: (:class:`harness.interfaces.PromptAdapter`: messages, output schema, parser of a
    #: model's text), called with the parsed ``prompt_params``; None: no VLM planner runs it.
    prompt: str | None = None
    #: The declaration of the prompt adapter's settings (they enter the run identity only
    #: of this suite's runs).
    prompt_params: Any = None
    #: ``"module:attr"`` of the suite's failure reader (:class:`harness.interfaces.FailureRules`:
    #: an instance, a class or a factory taking no argument): the suite's own class of a failed
    #: episode, and the task facts the runner stores for it; None: only the generic classes.
    failures: str | None = None
    #: The failure classes the suite's reader may name beyond the core's generic ones
    #: (:class:`harness.interfaces.FailureClass`: name, label, order, colour), as ``harness
    #: table --by failure`` and the report show them; ``check_suite`` refuses any other.
    failure_classes: tuple[Any, ...] = ()
    #: The datasets ``harness fetch NAME`` can fetch for this suite
    #: (:class:`harness.registry.datasets.Dataset`; their names are global, so prefix them with the suite's).
    datasets: tuple[Any, ...] = ()
    #: Distributions whose versions can move its results (recorded in each run's provenance).
    packages: tuple[str, ...] = ()
    #: How it is scored: the metrics it declares (:class:`harness.scoring.policy.Metric`), in
    #: table order; those marked ``default`` are shown when a table names none.
    metrics: tuple[Any, ...] = ()
    #: ``"module:attr"`` of ``values(record: Mapping) -> dict[str, float | None]``: the
    #: per-episode values derived from a record's fields (for values a suite does not
    #: store in ``record.values``); None: only the stored values.
    values: str | None = None
    #: ``"module:attr"`` of a judge rubric factory ``factory(params) -> Rubric`` for its
    #: ``judged`` metrics; None: no judged metric.
    judge: str | None = None
    #: Breakdowns ``harness table --by NAME`` offers beside ``task_type``: keys of an episode's
    #: metadata whose values the runner stores in the record's ``extra["breakdown"]``.
    breakdowns: tuple[str, ...] = ()
    #: The breakdown (``task_type`` or one of :attr:`breakdowns`) over whose values the suite's
    #: benchmark averages its overall figures (CFG-Bench: the mean over its tasks, not over its
    #: questions); ``harness table --by`` that field prints this mean beside the pooled ``all``
    #: row, labelled (docs/tables.md). None: the benchmark pools episodes, as ``all`` does.
    mean_over: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "metrics", check_metrics(self.metrics, f"suite {self.name!r}"))
        object.__setattr__(self, "breakdowns", tuple(self.breakdowns))
        for name in self.breakdowns:
            if not (isinstance(name, str) and name.isidentifier()) or name in RESERVED_BREAKDOWNS:
                raise ValueError(f"suite {self.name!r}: breakdown {name!r} must be a name other than "
                                 f"{', '.join(RESERVED_BREAKDOWNS)}")
        if self.mean_over is not None and self.mean_over not in ("task_type", *self.breakdowns):
            raise ValueError(f"suite {self.name!r}: mean_over {self.mean_over!r} must be task_type or one of its "
                             f"breakdowns ({', '.join(self.breakdowns) or 'none declared'})")
        if self.values is not None and ":" not in self.values:
            raise ValueError(f"values of suite {self.name!r} must be 'module:attr', got {self.values!r}")


#: ``harness table --by`` values the core gives every suite (record columns, the failure taxonomy).
RESERVED_BREAKDOWNS = ("task_type", "split", "failure")


@dataclass(frozen=True)
class AgentPlugin(Plugin):
    #: ``planner`` (``planner=NAME``) or ``policy`` (``policy=NAME``).
    kind: str = "planner"
    #: The suite this agent belongs to (its oracle, its random agent); None: any suite.
    suite: str | None = None
    #: The factory takes ``suite=<suite name>`` and its declaration may depend on it (the
    #: ``vlm`` planner: the suite's prompt settings).
    takes_suite: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in ("planner", "policy"):
            raise ValueError(f"agent plugin {self.name!r}: kind must be planner or policy, got {self.kind!r}")


@dataclass(frozen=True)
class ExecutorPlugin(Plugin):
    #: Envs live in the runner's own process (no picklable env factory, no env worker processes).
    in_process: bool = False
    #: ``"module:attr"`` of ``setup(params) -> None``, run before any store exists (e.g. join a
    #: cluster); it raises ValueError with a one-line message when it cannot.
    setup: str | None = None


@dataclass(frozen=True)
class BackendPlugin(Plugin):
    """A model backend (``hf``, ``openai``) of the ``vlm`` planner: knows no suite."""


@dataclass(frozen=True)
class TrackerPlugin(Plugin):
    """An experiment tracker (``tracker=NAME``): receives a run's metrics as its episodes finish
    and the invocation's table and report as artifacts (:class:`harness.run.trackers.Tracker`).
    It changes no result: never part of a run identity."""



@dataclass
class Found:
    """Every plugin found, and the one-line problems of entry points that did not load."""

    plugins: list[tuple[str, Plugin]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: ``(group kind, name) -> message`` of names two distributions register: neither is used,
    #: and looking the name up raises the message (lm-evaluation-harness refuses a duplicate
    #: task name too, lm_eval/api/registry.py ``register_task``).
    refused: dict[tuple[str, str], str] = field(default_factory=dict)


def discover() -> Found:
    """Every registered plugin as ``(group kind, plugin)``: this project's own (from its
    pyproject.toml in a source checkout, else its installed entry points) and other
    installed packages'."""
    found = Found()
    own = own_entry_points()
    for kind, group in GROUPS.items():
        specs = registered(group, own)
        first: dict[str, str] = {}  # entry name -> the distribution registering it
        for dist, name, _ in specs:
            first.setdefault(name, dist)
            if first[name] != dist and (kind, name) not in found.refused:
                found.refused[(kind, name)] = (f"plugin {name!r} ({group}) is registered by both {first[name]} and "
                                               f"{dist}: neither is used (uninstall one, or rename its entry point)")
                found.problems.append(found.refused[(kind, name)])
        seen: set[str] = set()
        for dist, name, value in specs:
            if name in seen or (kind, name) in found.refused:
                continue
            seen.add(name)
            try:
                obj = _load(value)
            except Exception as exc:  # a broken third-party plugin must not break the harness
                found.problems.append(f"plugin {name!r} ({group}, from {dist}) did not load: "
                                      f"{type(exc).__name__}: {_one_line(exc)}")
                continue
            objs = obj if isinstance(obj, (list, tuple)) else [obj]
            for item in objs:
                if not isinstance(item, Plugin):
                    found.problems.append(f"plugin {name!r} ({group}, from {dist}) is not a harness.plugins.Plugin")
                    continue
                found.plugins.append((kind, item))
    return found


def registered(group: str, own: Mapping[str, Mapping[str, str]] | None = None) -> list[tuple[str, str, str]]:
    """``(distribution, entry name, value)`` of each entry point of ``group``: this project's own
    from ``own`` (:func:`own_entry_points`, read from its pyproject.toml in a checkout), then
    every other installed distribution's."""
    from importlib import metadata

    specs: list[tuple[str, str, str]] = []
    if own is not None:
        specs += [(DISTRIBUTION, name, value) for name, value in own.get(group, {}).items()]
    for ep in metadata.entry_points(group=group):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        if own is not None and _same_dist(dist):
            continue
        specs.append((dist, ep.name, ep.value))
    return specs


def _same_dist(name: str) -> bool:
    return name.replace("_", "-").lower() == DISTRIBUTION


def own_entry_points() -> Mapping[str, Mapping[str, str]] | None:
    """``[project.entry-points]`` of the pyproject.toml beside this package, when it is
    this project's (a source checkout or an editable install); else None."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return None
    import tomllib

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project", {})
    if project.get("name") != DISTRIBUTION:
        return None
    return project.get("entry-points", {})


def _load(value: str) -> Any:
    import importlib

    module_name, _, attr = value.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for part in attr.strip().split("."):
        if part:
            obj = getattr(obj, part)
    return obj


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def warn_problems(found: Found) -> None:
    for line in found.problems:
        print(f"harness: warning: {line}", file=sys.stderr)
