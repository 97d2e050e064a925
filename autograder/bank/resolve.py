"""Turn a dotted reference from a problem file ("solutions.numpy_ref.softmax_rows") into the callable it names.

`solutions.` names the bundled references, installed as `autograder.references` (a generic top-level
`solutions` package would collide with others in a shared site-packages); a course's own problem
folders are importable as `qkv_course.<problem>` (autograder/course/problems.py).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

BUNDLED_PREFIX = "solutions."
BUNDLED_PACKAGE = "autograder.references."


class UnresolvedReference(LookupError):
    pass


def module_of(ref: str) -> str:
    """The module a reference's function lives in, by its importable name."""
    module_name = ref.rpartition(".")[0]
    if ref.startswith(BUNDLED_PREFIX):
        return BUNDLED_PACKAGE + module_name[len(BUNDLED_PREFIX):]
    return module_name


def resolve(ref: str) -> Callable[..., Any]:
    module_name, attr = module_of(ref), ref.rpartition(".")[2]
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - a syntax error in a reference module is a broken reference too
        raise UnresolvedReference(f"'{ref}': cannot import {module_name} ({type(err).__name__}: {err})") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise UnresolvedReference(f"'{ref}': {module_name} has no function {attr}")
    return target
