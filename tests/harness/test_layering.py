"""The rooms of harness/ and their floors, asserted over every import (docs/architecture.md).

Every ``import`` and ``from ... import`` of every module under harness/ counts, at module top or
inside a function, and so do the module paths the code names in strings (``"pkg.mod:attr"``
targets, ``import_module`` arguments). A module may import its own room and the rooms below it,
never one above, and never a suite, planner or policy package: those sit above the whole core.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

import harness

HARNESS = Path(harness.__file__).parent

#: The rooms from the lowest floor up. The contract (the modules at harness/'s top level and
#: promptkit/) is what plugin authors import; ``harness.testing`` is the checker's face, and
#: sits with the checker.
FLOORS: tuple[str, ...] = (
    "util", "contract", "registry", "store", "scoring", "stats", "run", "judging", "check",
    "tables", "report", "cli",
)
FACES = {"harness.testing": "check"}
ABOVE_THE_CORE = ("envs", "planners", "policies")
#: "pkg.mod" or "pkg.mod:attr" inside a string: a module the code loads by name.
_TARGET = re.compile(r"^(harness|envs|planners|policies)(\.\w+)+(:\w+)?$")


def module_name(path: Path) -> str:
    parts = path.relative_to(HARNESS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str) -> str:
    if module in FACES:
        return FACES[module]
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and not (HARNESS / parts[1]).is_dir()) or parts[1] == "promptkit":
        return "contract"
    return parts[1]


def imports_of(path: Path, targets: bool = True) -> list[tuple[int, str]]:
    """Every module ``path`` imports, and (``targets``) names as a load target, with its line."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
        elif targets and isinstance(node, ast.Constant) and isinstance(node.value, str) and _TARGET.match(node.value):
            found.append((node.lineno, node.value.partition(":")[0]))
    return found


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The harness module ``name`` is or lies in (``from pkg import mod`` names the module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def wrong_arrows() -> list[str]:
    known = modules()
    wrong: dict[tuple[str, str], str] = {}
    for module, path in known.items():
        floor = FLOORS.index(room_of(module))
        for line, name in imports_of(path):
            where = f"{path.relative_to(HARNESS.parent)}:{line}"
            if name.split(".")[0] in ABOVE_THE_CORE:
                top = name.split(".")[0]
                wrong.setdefault((where, top), f"{where}: {module} ({room_of(module)}) names {name}, above the core")
                continue
            if name.split(".")[0] != "harness":
                continue
            target = resolve(name, known)
            if target is None or target == "harness" or target == module:
                continue
            if FLOORS.index(room_of(target)) > floor:
                wrong.setdefault((where, target),
                                 f"{where}: {module} ({room_of(module)}) imports {target} ({room_of(target)}), a room above")
    return list(wrong.values())


def test_every_module_sits_in_a_known_room():
    unknown = {m: room_of(m) for m in modules() if room_of(m) not in FLOORS}
    assert not unknown, f"modules outside the rooms of docs/architecture.md: {unknown}"


def test_no_import_runs_up_a_floor():
    wrong = wrong_arrows()
    assert not wrong, "imports that run up a floor:\n" + "\n".join(wrong)


def test_no_import_circle():
    """No two modules import each other, through any chain (lazy imports included)."""
    known = modules()
    graph = {m: {t for _, n in imports_of(p, targets=False) if n.startswith("harness.")
                 for t in [resolve(n, known)] if t and t != m and t != "harness"}
             for m, p in known.items()}
    # a package's __init__ that re-exports its own modules is a face, not a circle
    graph = {m: {t for t in ts if not (t.startswith(m + ".") and known[m].name == "__init__.py")
                 and not (m.startswith(t + ".") and known[t].name == "__init__.py")}
             for m, ts in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "import circles:\n" + "\n".join(circles)


def imports_inside_functions(path: Path) -> list[tuple[int, str]]:
    """The core's modules ``path`` imports below its top level (inside a function or a class).
    A module's dependencies on the core are read at its top; only heavy optional extras (torch,
    ray, av, mlflow ...) are imported where they are used."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(n) for n in tree.body}
    top |= {id(m) for n in tree.body if isinstance(n, ast.If) for m in ast.walk(n)}  # `if TYPE_CHECKING:`
    found = []
    for node in ast.walk(tree):
        if id(node) in top:
            continue
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "harness":
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "harness"]
    return found


def test_the_core_is_imported_at_module_top():
    lazy = [f"{path.relative_to(HARNESS.parent)}:{line}: {name}"
            for path in modules().values() for line, name in imports_inside_functions(path)]
    assert not lazy, "imports of the core inside functions (move them to the module's top):\n" + "\n".join(lazy)


def test_an_import_inside_a_function_is_found(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import json\nfrom harness.types import EpisodeSpec\n\ndef g():\n    import torch\n"
                 "    from harness.store import ResultStore\n")
    assert imports_inside_functions(f) == [(6, "harness.store")]


@pytest.mark.parametrize("module", sorted(modules()))
def test_every_module_imports(module):
    if module.endswith("__main__"):
        pytest.skip("runs the command")
    importlib.import_module(module)


def test_a_wrong_arrow_is_caught(tmp_path, monkeypatch):
    """The checker itself: a store module importing the tables is reported."""
    fake = tmp_path / "harness"
    (fake / "store").mkdir(parents=True)
    (fake / "tables").mkdir()
    for f in ("__init__.py", "store/__init__.py", "tables/__init__.py", "tables/build.py", "types.py"):
        (fake / f).write_text("")
    (fake / "store" / "database.py").write_text("def f():\n    from harness.tables import build\n")
    (fake / "tables" / "fine.py").write_text("import harness.store.database\nT = 'envs.foo:bar'\n")
    monkeypatch.setattr(sys.modules[__name__], "HARNESS", fake)
    wrong = wrong_arrows()
    assert sorted({w.split(":")[0] for w in wrong}) == ["harness/store/database.py", "harness/tables/fine.py"]
    assert any("a room above" in w for w in wrong) and any("above the core" in w for w in wrong)
