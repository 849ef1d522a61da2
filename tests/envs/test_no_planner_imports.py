"""No module under envs/ imports planners/: the prompt toolkit suites share (episode cache,
model-family rules, checkout reading) lives below them (harness.promptkit), so a suite's
package works without the planner package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def planner_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of ``planners`` (top level or inside a function)."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            hits += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "planners"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "planners":
            hits.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).split(".")[0] == "planners":
            hits.append((node.lineno, str(node.args[0].value)))
    return hits


def test_envs_import_no_planner_module():
    files = sorted(ROOT.glob("envs/**/*.py"))
    assert files
    found = [f"{p.relative_to(ROOT).as_posix()}:{line}: {mod}" for p in files
             for line, mod in planner_imports(p.read_text(encoding="utf-8"))]
    assert not found, "envs/ imports planners/:\n" + "\n".join(found)


def test_the_scan_sees_every_form():
    src = ("import planners.vlm\nfrom planners.episode_cache import X\ndef f():\n    from planners import y\n"
           "importlib.import_module('planners.vlm.family')\nfrom harness.promptkit import family\n")
    assert [line for line, _ in planner_imports(src)] == [1, 2, 4, 5]
