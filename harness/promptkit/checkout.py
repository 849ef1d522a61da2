"""Reading a user's EmbodiedBench checkout for ``prompt_source=embodiedbench`` (every suite).

The project ships none of EmbodiedBench's prompt text; a suite's ``prompt_source=embodiedbench``
reads it from the user's checkout with these helpers: literals through ``ast`` (never imported),
and the few prompt methods that are pure string operations compiled on their own, called as
EmbodiedBench calls them. Every error is one line naming the file.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

#: Where the user's checkout is when no path parameter names it.
ENV_VAR = "EMBODIEDBENCH_DIR"


def checkout_root(path: str | None, required: Sequence[str], key: str = "embodiedbench_dir") -> Path:
    """The checkout at ``path`` (None: ``$EMBODIEDBENCH_DIR``) holding every file of ``required``."""
    given = path or os.environ.get(ENV_VAR)
    if not given:
        raise ValueError(f"prompt_source=embodiedbench needs {key}=<your EmbodiedBench checkout> or ${ENV_VAR}")
    root = Path(given).expanduser()
    missing = [r for r in required if not (root / r).is_file()]
    if missing:
        raise FileNotFoundError(f"{key} {root} is not an EmbodiedBench checkout: missing {', '.join(missing)}")
    return root


def _assignments(path: Path) -> dict[str, ast.expr]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError as e:
        raise ValueError(f"{path}: not Python ({e.msg}, line {e.lineno})") from None
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found[t.id] = node.value
    return found


def literal(path: Path, name: str, kind: type | tuple[type, ...] = object) -> Any:
    """The value of the top-level ``name = <literal>`` in ``path``, names of other top-level
    literal assignments inside it resolved (``{"pick": pick_examples_vlm}``)."""
    found = _assignments(path)
    if name not in found:
        raise ValueError(f"{path}: no assignment {name} = ...")

    def value(node: ast.expr, depth: int = 0) -> Any:
        if isinstance(node, ast.Name) and node.id in found and depth < 8:
            return value(found[node.id], depth + 1)
        if isinstance(node, ast.Dict):
            return {value(k, depth): value(v, depth) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
        if isinstance(node, ast.List):
            return [value(x, depth) for x in node.elts]
        return ast.literal_eval(node)

    try:
        out = value(found[name])
    except (ValueError, TypeError, SyntaxError) as e:
        raise ValueError(f"{path}: {name} is not a literal ({type(e).__name__})") from None
    if not isinstance(out, kind):
        raise ValueError(f"{path}: {name} is not a {getattr(kind, '__name__', kind)}")
    return out


def string_constant(path: Path, name: str) -> str:
    return literal(path, name, str)


def methods(path: Path, cls_name: str, names: Sequence[str],
            namespace: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    """The methods ``names`` of class ``cls_name`` in ``path``, compiled alone with the globals
    ``namespace`` (nothing else of the file runs), and their source as read."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    if cls is None:
        raise ValueError(f"{path}: no class {cls_name}")
    found = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in names}
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"{path}: {cls_name} has no {', '.join(missing)}")
    glb: dict[str, Any] = dict(namespace or {})
    nodes = [found[n] for n in names]
    exec(compile(ast.Module(body=nodes, type_ignores=[]), str(path), "exec"), glb)  # noqa: S102
    return {n: glb[n] for n in names}, "\n".join(ast.unparse(n) for n in nodes)


class State:
    """The attributes of an EmbodiedBench planner that its prompt methods read."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)
