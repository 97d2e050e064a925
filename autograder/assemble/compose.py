"""Mistakes that travel: which functions a problem builds on, and its reference with their misconceptions inside.

A student's multi_head_attention calls their own softmax_rows; when that one
normalises down the columns, every attention test fails too. To say so, the build
runs the dependent's NumPy reference with the dependency's function replaced by
each of its misconceptions, and the bundle keeps those outputs beside the
problem's own mutants (`GradedTest.upstream_outputs`). Grading then stays a
comparison of plain arrays, and student code never sees a reference.

What a problem builds on is its `builds_on:` list, or, when the problem file has
none, the other problems of the assignment whose reference functions its
reference calls, directly or through functions of the same module, by their
module-level name (solutions/numpy_ref.py) or by a name it imported them as (a
course's `from autograder.references.numpy_ref import softmax_rows`: the very function, see
kinds/resolve.py). A copy of the module's namespace with those names rebound
composes the mistake in. Trusted process, build time only.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from autograder.kinds.resolve import resolve
from autograder.kinds.implement import ImplementProblem


def _read_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # nested functions, comprehensions
            names |= _read_names(const)
    return names


def calls(function: Callable[..., Any]) -> set[str]:
    """Names of the functions of `function`'s own module that it calls, directly or through each other."""
    space = getattr(function, "__globals__", {})
    seen: set[str] = set()
    todo = [function]
    while todo:
        for name in _read_names(todo.pop().__code__):
            value = space.get(name)
            if name not in seen and isinstance(value, types.FunctionType) and value.__globals__ is space:
                seen.add(name)
                todo.append(value)
    return seen


def numpy_reference(problem: ImplementProblem) -> Callable[..., Any] | None:
    """The reference the misconceptions (NumPy functions all) are composed into; None on a torch-only problem."""
    ref = problem.references.get("numpy")
    return resolve(ref) if ref else None


def names_of(function: Callable[..., Any], other: Callable[..., Any]) -> set[str]:
    """The module-level names under which `function`, or a function of its module that it calls, reads `other`."""
    space = function.__globals__
    read = _read_names(function.__code__).union(*(_read_names(space[n].__code__) for n in calls(function)))
    return {name for name in read if space.get(name) is other}


def builds_on(problem: ImplementProblem, others: list[ImplementProblem]) -> tuple[str, ...]:
    """The ids, in the assignment's order, of the problems of `others` that `problem` builds on."""
    if problem.builds_on is not None:
        wanted = set(problem.builds_on)
        return tuple(o.id for o in others if o.id in wanted and o.id != problem.id)
    reference = numpy_reference(problem)
    if reference is None:
        return ()
    found = []
    for other in others:
        other_ref = numpy_reference(other) if other.id != problem.id else None
        if other_ref is not None and names_of(reference, other_ref):
            found.append(other.id)
    return tuple(found)


def with_replaced(function: Callable[..., Any], name: str | set[str], replacement: Callable[..., Any]
                  ) -> Callable[..., Any]:
    """`function` running in a copy of its module's namespace where `name` (or each of a set of names) is
    `replacement`: every function of that module it calls is rebound to the copy too, so the replacement is
    reached however deep the call."""
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"{function!r}: only a Python function runs with a name it calls replaced")
    original = function.__globals__
    space = dict(original)

    def rebound(f: types.FunctionType) -> types.FunctionType:
        copy = types.FunctionType(f.__code__, space, f.__name__, f.__defaults__, f.__closure__)
        copy.__kwdefaults__ = f.__kwdefaults__
        return copy

    for key, value in original.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is original:
            space[key] = rebound(value)
    space.update(dict.fromkeys({name} if isinstance(name, str) else name, replacement))
    return rebound(function)


def composed_functions(problem: ImplementProblem, upstream: list[ImplementProblem]
                       ) -> dict[str, dict[str, Callable[..., Any]]]:
    """{upstream problem id: {its misconception id: problem's reference with that mistake inside}}."""
    reference = numpy_reference(problem)
    out: dict[str, dict[str, Callable[..., Any]]] = {}
    if reference is None:
        return out
    for other in upstream:
        other_ref = numpy_reference(other)
        if other_ref is None:
            continue
        names = names_of(reference, other_ref) | {other_ref.__name__}  # builds_on may name what it reads otherwise
        mistakes = {m.id: with_replaced(reference, names, resolve(m.implementation))
                    for m in other.misconceptions if m.implementation}
        if mistakes:
            out[other.id] = mistakes
    return out
