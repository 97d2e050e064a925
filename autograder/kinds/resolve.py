"""Turn a dotted reference from a problem file ("solutions.numpy_ref.softmax_rows") into the callable it names.

`solutions.` names the bundled references, installed as `autograder.references` (a generic top-level
`solutions` package would collide with others in a shared site-packages); a course's own problem
folders are importable as `qkv_course.<problem>` (bank/folders.py registers them). Their code imports the bundled
references by the same name the problem files use (`from solutions.numpy_ref import softmax_rows`):
once this module is imported, `solutions.X` is `autograder.references.X`, the very same module, so a
function imported that way is the one another problem's reference names (compose.py relies on it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Callable

BUNDLED_PREFIX = "solutions."
BUNDLED_PACKAGE = "autograder.references."
COURSE_PACKAGE = "qkv_course"  # the package of a course's problem folders


class _BundledAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`solutions` and `solutions.X` as names of `autograder.references` and its modules (no second copy)."""

    alias = BUNDLED_PREFIX.rstrip(".")

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.alias and not fullname.startswith(BUNDLED_PREFIX):
            return None
        if fullname != self.alias and sys.modules.get(self.alias) is not sys.modules.get(BUNDLED_PACKAGE[:-1]):
            return None  # another package named solutions was imported first: its modules are its own
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == self.alias)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(BUNDLED_PACKAGE[:-1] + spec.name[len(self.alias):])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # the import system gave the module the alias's spec: it gets its own back (what reload and inspect read)
        module.__spec__ = module.__spec__.loader_state


# Installed with this module, before qkv loads any reference (or its caller imports solutions), and first in
# line: a checkout's solutions/ folder on sys.path would otherwise load a second copy of each module.
if not any(isinstance(finder, _BundledAlias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _BundledAlias())


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
