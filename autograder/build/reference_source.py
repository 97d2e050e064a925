"""Source text of a reference function with the module-level helpers it needs: a function in, Python source out.

Used for nbgrader's solution regions, which must be self-contained: the
function, the helpers and constants it names (transitively), and the module's
imports.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Callable


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def reference_source(function: Callable, include_self: bool = True) -> tuple[str, str]:
    """(imports, definitions) needed to define `function` on its own (without it: its helpers only)."""
    module = sys.modules[function.__module__]
    tree = ast.parse(inspect.getsource(module))
    text = inspect.getsource(module)
    definitions: dict[str, ast.stmt] = {}
    imports: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
                imports.append(ast.get_source_segment(text, stmt))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            definitions[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id != "__all__":
                    definitions[target.id] = stmt
    needed: list[str] = []
    pending = [function.__name__]
    while pending:
        name = pending.pop()
        if name in needed or name not in definitions:
            continue
        needed.append(name)
        pending.extend(sorted(_names_used(definitions[name]) - set(needed)))
    if not include_self:
        needed.remove(function.__name__)
    ordered = sorted({id(definitions[n]): definitions[n] for n in needed}.values(), key=lambda s: s.lineno)
    body = "\n\n\n".join(ast.get_source_segment(text, s) for s in ordered)
    return "\n".join(imports), body


def solution_body(function: Callable) -> str:
    """The function's body (docstring dropped) preceded by the imports and helpers it needs,
    unindented; it runs as the body of a function with the same signature."""
    imports, helpers = reference_source(function, include_self=False)
    module_text = inspect.getsource(sys.modules[function.__module__])
    fn_node = next(s for s in ast.parse(module_text).body
                   if isinstance(s, ast.FunctionDef) and s.name == function.__name__)
    body = fn_node.body[1:] if ast.get_docstring(fn_node) is not None else fn_node.body
    lines = module_text.splitlines()
    indent = len(lines[body[0].lineno - 1]) - len(lines[body[0].lineno - 1].lstrip())
    body_text = "\n".join(line[indent:] for line in lines[body[0].lineno - 1: body[-1].end_lineno])
    return "\n\n".join(part for part in (imports, helpers, body_text) if part)
