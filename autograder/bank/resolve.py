"""Turn a dotted reference from a problem file ("solutions.numpy_ref.softmax_rows") into the callable it names."""

from __future__ import annotations

import importlib
from typing import Any, Callable


class UnresolvedReference(LookupError):
    pass


def resolve(ref: str) -> Callable[..., Any]:
    module_name, _, attr = ref.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - a syntax error in solutions/ is a broken reference too
        raise UnresolvedReference(f"'{ref}': cannot import {module_name} ({type(err).__name__}: {err})") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise UnresolvedReference(f"'{ref}': {module_name} has no function {attr}")
    return target
