"""Python literals for the nbgrader cells the kinds write: values in, source text out.

Arrays are written as `_qkv_array(dtype, shape, base64)`, which the helpers cell
of the nbgrader notebook defines, so a test cell holds the bundle's exact bits.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np


def array_literal(array: np.ndarray) -> str:
    array = np.asarray(array)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot embed an array of {array.dtype} in a test cell")
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    data = base64.b64encode(little.tobytes()).decode("ascii")
    return f"_qkv_array({little.dtype.str!r}, {tuple(array.shape)!r}, {data!r})"


def scalar_literal(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, np.generic):
        return scalar_literal(value.item())
    raise TypeError(f"cannot embed {type(value).__name__} {value!r} in a test cell")


def value_literal(value: Any) -> str:
    return array_literal(value) if isinstance(value, np.ndarray) else scalar_literal(value)


def plain_literal(value: Any) -> str:
    """A Python literal for answers: numbers, lists, strings, booleans, dicts of them."""
    if isinstance(value, np.ndarray):
        return plain_literal(value.tolist())
    if isinstance(value, dict):
        return "{" + ", ".join(f"{plain_literal(k)}: {plain_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(plain_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    return scalar_literal(value)
