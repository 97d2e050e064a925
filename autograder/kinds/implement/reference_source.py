"""Source text of a reference function with the module-level helpers it needs: a function in, Python source out.

Used for nbgrader's solution regions and the answer key's functions (kinds/implement/),
which must be self-contained: the function, the helpers and constants it names
(transitively), the functions it imports from reference code, and the module's imports.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import types
from typing import Callable

from autograder.kinds.resolve import BUNDLED_PACKAGE, COURSE_PACKAGE


@functools.lru_cache(maxsize=None)
def _module_syntax(module_name: str) -> tuple[str, ast.Module]:
    """A module's source and its syntax tree, read once per build (a build asks for each many times)."""
    text = inspect.getsource(sys.modules[module_name])
    return text, ast.parse(text)


def _function_node(function: Callable) -> ast.FunctionDef:
    tree = _module_syntax(function.__module__)[1]
    return next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == function.__name__)


def _segment(text: str, node: ast.stmt) -> str:
    """The source of a statement of `text`'s own syntax tree, which always has its position."""
    segment = ast.get_source_segment(text, node)
    if segment is None:
        raise ValueError(f"line {node.lineno}: no source text for {type(node).__name__}")
    return segment


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _inlined(function: object) -> bool:
    """A function a release cannot import, so its source goes into the key: reference code that qkv loads
    (the bundled references, a course's problem folders)."""
    module = getattr(function, "__module__", None) or ""
    return isinstance(function, types.FunctionType) and module.startswith((BUNDLED_PACKAGE, COURSE_PACKAGE + "."))


def _parts(function: Callable, include_self: bool, seen: frozenset[str]) -> tuple[list[str], list[str]]:
    """The import statements and the definitions of reference_source, each as its own text."""
    text, tree = _module_syntax(function.__module__)
    space = vars(sys.modules[function.__module__])
    definitions: dict[str, ast.stmt] = {}
    imported: dict[str, Callable] = {}
    imports: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            continue
        if isinstance(stmt, ast.ImportFrom):
            inline = {a.asname or a.name for a in stmt.names if _inlined(space.get(a.asname or a.name))}
            imported.update({name: space[name] for name in inline})
            kept = [a for a in stmt.names if (a.asname or a.name) not in inline]
            if kept:
                imports.append(ast.unparse(ast.ImportFrom(stmt.module, kept, stmt.level)) if inline
                               else _segment(text, stmt))
        elif isinstance(stmt, ast.Import):
            imports.append(_segment(text, stmt))
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
    used = set().union(*(_names_used(definitions[n]) for n in needed))
    if not include_self:
        needed.remove(function.__name__)
    blocks = []
    for name in sorted(used & set(imported)):
        other = imported[name]
        key = f"{other.__module__}.{other.__qualname__}"
        if key in seen:
            continue
        other_imports, other_blocks = _parts(other, True, seen | {key})
        imports += [line for line in other_imports if line not in imports]
        blocks += [block for block in other_blocks if block not in blocks]
        if name != other.__name__:
            blocks.append(f"{name} = {other.__name__}")
    ordered = sorted({id(definitions[n]): definitions[n] for n in needed}.values(), key=lambda s: s.lineno)
    return imports, blocks + [_segment(text, s) for s in ordered]


def reference_source(function: Callable, include_self: bool = True) -> tuple[str, str]:
    """(imports, definitions) needed to define `function` on its own (without it: its helpers only).

    A function it imports from reference code (`from autograder.references.numpy_ref import softmax_rows`) is defined
    instead of imported, with its own imports and helpers, before the module's own definitions."""
    imports, blocks = _parts(function, include_self, frozenset())
    return "\n".join(imports), "\n\n\n".join(blocks)


def solution_body(function: Callable) -> str:
    """The function's body (docstring dropped) preceded by the imports and helpers it needs,
    unindented; it runs as the body of a function with the same signature."""
    imports, helpers = reference_source(function, include_self=False)
    module_text = _module_syntax(function.__module__)[0]
    fn_node = _function_node(function)
    body = fn_node.body[1:] if ast.get_docstring(fn_node) is not None else fn_node.body
    lines = module_text.splitlines()
    indent = len(lines[body[0].lineno - 1]) - len(lines[body[0].lineno - 1].lstrip())
    body_text = "\n".join(line[indent:] for line in lines[body[0].lineno - 1: body[-1].end_lineno])
    return "\n\n".join(part for part in (imports, helpers, body_text) if part)


def _parameter_names(signature: str) -> list[str]:
    args = ast.parse(f"def {signature}: pass").body[0].args  # type: ignore[attr-defined]
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def reference_body(signature: str, reference: Callable) -> str:
    """solution_body of a reference, run inside a problem's `signature`: a parameter the
    reference has and the problem has not (torch's `dtype=torch.float64`) is bound to its default,
    after the imports and helpers and before the body."""
    body = solution_body(reference)
    module_text = _module_syntax(reference.__module__)[0]
    node = _function_node(reference)
    positional = node.args.posonlyargs + node.args.args
    defaults = [None] * (len(positional) - len(node.args.defaults)) + list(node.args.defaults)
    ours = set(_parameter_names(signature))
    bindings = []
    for arg, default in [*zip(positional, defaults), *zip(node.args.kwonlyargs, node.args.kw_defaults)]:
        if arg.arg in ours:
            continue
        if default is None:
            raise ValueError(f"{reference.__module__}.{reference.__name__} needs '{arg.arg}', which `{signature}` lacks")
        bindings.append(f"{arg.arg} = {ast.get_source_segment(module_text, default)}  # the reference's default")
    if not bindings:
        return body
    prefix = "\n\n".join(part for part in reference_source(reference, include_self=False) if part)
    assert body.startswith(prefix)
    rest = body[len(prefix):].lstrip("\n")
    return "\n\n".join(part for part in (prefix, "\n".join(bindings), rest) if part)
