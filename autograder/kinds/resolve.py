"""Turn a dotted reference from a problem file ("solutions.numpy_ref.softmax_rows") into the callable it names.

The bundled references are one package, `autograder.references` (the repository's solutions/ folder; a generic
top-level `solutions` package would collide with others in a shared site-packages), and code imports them by that
name alone (`from autograder.references.numpy_ref import softmax_rows`), so a function imported so is the very one
another problem's reference names (compose.py relies on it). In a problem file, `solutions.X.f` is a short name
for `autograder.references.X.f` (`module_of`): a name in a YAML string, never an importable module. A course's own
problem folders are importable as `qkv_course.<problem>` (bank/folders.py registers them).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

BUNDLED_PREFIX = "solutions."
BUNDLED_PACKAGE = "autograder.references."
COURSE_PACKAGE = "qkv_course"  # the package of a course's problem folders


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
        old = isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] == BUNDLED_PREFIX[:-1]
        if old:  # a course's code from before the references had one name
            raise UnresolvedReference(
                f"'{ref}': {module_name} imports 'solutions', the bundled references' old name: write "
                "'autograder.references' in its place (`from autograder.references.numpy_ref import softmax_rows`)"
            ) from None
        raise UnresolvedReference(f"'{ref}': cannot import {module_name} ({type(err).__name__}: {err})") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise UnresolvedReference(f"'{ref}': {module_name} has no function {attr}")
    return target
