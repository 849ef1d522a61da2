"""ALFRED's own code, read from a checkout ($ALFRED_DIR: askforalfred/alfred), for tests that
check this suite against it. Nothing of ALFRED is copied here: functions and statements are
taken out of its files with ``ast`` and run, or its modules imported with stand-ins for what
cannot run here (AI2-THOR). Without a checkout the tests skip with the reason.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pytest

from tests.envs.alfred.walking_fake import alfred_dir

EVAL_TASK = Path("models") / "eval" / "eval_task.py"
#: The per-episode metric statements of ``EvalTask.evaluate`` (eval_task.py:111-136), by target.
EPISODE_TARGETS = ("goal_condition_success_rate", "path_len_weight", "s_spl", "pc_spl", "plw_s_spl",
                   "plw_pc_spl", "log_entry")


def checkout_or_skip() -> Path:
    root = alfred_dir()
    if root is None:
        pytest.skip("no ALFRED checkout: set ALFRED_DIR to a clone of askforalfred/alfred")
    return root


def _method(tree: ast.Module, cls: str, name: str) -> ast.FunctionDef:
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == name)


class EvalTaskMetrics:
    """``EvalTask``'s per-episode metric statements and ``get_metrics``, from eval_task.py."""

    def __init__(self, root: Path) -> None:
        tree = ast.parse((root / EVAL_TASK).read_text())
        evaluate = _method(tree, "EvalTask", "evaluate")
        stmts = [n for n in ast.walk(evaluate) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id in EPISODE_TARGETS for t in n.targets)]
        self.episode_lines = sorted(n.lineno for n in stmts)
        self._episode = compile(ast.Module(body=sorted(stmts, key=lambda n: n.lineno), type_ignores=[]),
                                str(root / EVAL_TASK), "exec")
        get_metrics = _method(tree, "EvalTask", "get_metrics")
        get_metrics.decorator_list = []
        namespace: dict[str, Any] = {}
        exec(compile(ast.Module(body=[get_metrics], type_ignores=[]), str(root / EVAL_TASK), "exec"), namespace)
        self._get_metrics = namespace["get_metrics"]

    def log_entry(self, *, expert_low_actions: int, goal_satisfied: bool, s: int, ts: int, t: int) -> dict:
        """ALFRED's log entry of one episode (its ``t``: steps taken, ``pcs``: (s, ts))."""
        namespace = {"traj_data": {"plan": {"low_actions": [None] * expert_low_actions}, "task_id": "",
                                   "task_type": ""},
                     "goal_satisfied": goal_satisfied, "pcs": (s, ts), "t": t, "r_idx": 0, "goal_instr": "",
                     "reward": 0.0}
        exec(self._episode, namespace)
        return namespace["log_entry"]

    def get_metrics(self, entries: Sequence[Mapping[str, Any]], success: Sequence[bool]) -> dict:
        """``get_metrics(successes, failures)`` (the episodes split as evaluate does)."""
        ok = [e for e, s in zip(entries, success) if s]
        failed = [e for e, s in zip(entries, success) if not s]
        return self._get_metrics(None, ok, failed)


def alfred_method(root: Path, relpath: str, cls: str, name: str, namespace: dict[str, Any]) -> Any:
    """A method of one of ALFRED's classes, compiled on its own into ``namespace`` (its globals)."""
    path = root / relpath
    fn = _method(ast.parse(path.read_text()), cls, name)
    fn.decorator_list = []
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name]


#: Top-level names ALFRED's modules bring in (its packages and the modules on gen/).
_ALFRED_MODULES = ("env", "gen", "graph", "constants", "ai2thor")


@contextlib.contextmanager
def alfred_imports(root: Path, controller: type | None = None) -> Iterator[None]:
    """ALFRED's packages importable (``env.thor_env``, ``graph.graph_obj``, ``constants``), with
    ``controller`` as ``ai2thor.controller.Controller`` and cv2 stubbed where it is not
    installed (thor_env.py uses it only for debug windows); sys.path and sys.modules restored
    after."""
    pytest.importorskip("networkx", reason="ALFRED's navigation graph (gen/graph/graph_obj.py) imports networkx")
    saved_path = list(sys.path)
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in _ALFRED_MODULES}
    ai2thor, ai2thor_controller = types.ModuleType("ai2thor"), types.ModuleType("ai2thor.controller")
    ai2thor_controller.Controller = controller or object  # type: ignore[attr-defined]
    ai2thor.controller = ai2thor_controller  # type: ignore[attr-defined]
    stubbed: list[str] = []
    try:
        for k in saved:
            del sys.modules[k]
        sys.modules["ai2thor"], sys.modules["ai2thor.controller"] = ai2thor, ai2thor_controller
        if importlib.util.find_spec("cv2") is None:
            sys.modules["cv2"] = types.ModuleType("cv2")
            stubbed.append("cv2")
        sys.path[:0] = [str(root), str(root / "gen")]
        yield
    finally:
        sys.path[:] = saved_path
        for k in [k for k in sys.modules if k.split(".")[0] in _ALFRED_MODULES] + stubbed:
            del sys.modules[k]
        sys.modules.update(saved)


@contextlib.contextmanager
def alfred_thor_env(root: Path, controller: type) -> Iterator[types.ModuleType]:
    """ALFRED's env/thor_env.py, extending ``controller`` (see :func:`alfred_imports`)."""
    with alfred_imports(root, controller):
        yield importlib.import_module("env.thor_env")
