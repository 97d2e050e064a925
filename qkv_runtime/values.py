"""What student code hands back, made plain: return values to arrays, ANSWERS to JSON data, exceptions to text.

The sandbox's child, the self-check and the nbgrader cells use these same
functions, so a student sees the same words for the same return value in every
route. `plain` is also how the trusted grader re-checks ANSWERS arriving as JSON.
"""

from __future__ import annotations

import math
import sys
import traceback
from decimal import Decimal
from fractions import Fraction
from typing import Any, Dict, List, Optional, Union

import numpy as np

from .judge import position
from .wire import MAX_CALL_OUTPUT_BYTES, MAX_OUTPUTS_PER_CALL, NUMERIC_KINDS

SUBMISSION_FILE = "submission.py"  # the file name student code is compiled under in every route
MAX_ANSWER_NODES = 20000
MAX_ANSWER_DEPTH = 20
MAX_ANSWER_STR = 10000
MAX_ANSWER_KEY = 200
MAX_ANSWER_ITEMS = 1000


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def clean_text(value: Any, limit: int, mark_cut: bool = True) -> str:
    """`value` if it is a str, as valid UTF-8 (lone surrogates replaced) and at most `limit` chars; else ""."""
    if not isinstance(value, str):
        return ""
    text = value.encode("utf-8", "replace").decode("utf-8", "replace")
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "\u2026" if mark_cut else text[:limit]


def _torch_tensor(item: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(item, torch.Tensor)


def _tensor_to_numpy(item: Any) -> Any:
    import torch

    item = item.detach().cpu().resolve_conj().resolve_neg()
    if item.dtype == torch.bfloat16:
        item = item.float()
    return item.numpy()


def to_track(value: Any, track: str) -> Any:
    """An input as a student function receives it: a fresh copy (no earlier call has touched it), a tensor
    on the torch track; scalars as they are."""
    if isinstance(value, np.ndarray):
        value = value.copy()
        if track == "torch":
            import torch

            return torch.from_numpy(value)
    return value


def to_arrays(value: Any) -> Union[List[np.ndarray], str]:
    """A returned value as a list of plain numeric arrays detached from student objects, or what is wrong with it."""
    several = isinstance(value, (tuple, list))
    items = list(value) if several else [value]
    if several and not 1 <= len(items) <= MAX_OUTPUTS_PER_CALL:
        return f"returned a {type(value).__name__} of {len(items)} items; expected 1 to {MAX_OUTPUTS_PER_CALL} arrays"
    arrays: List[np.ndarray] = []
    total = 0
    for index, item in enumerate(items):
        what = f"item {index} of the returned {type(value).__name__}" if several else "returned value"
        prefix = "returned" if not several else f"{what} is"
        if _torch_tensor(item):
            item = _tensor_to_numpy(item)
        if item is None:
            return "returned None, not an array (missing return?)" if not several else f"{what} is None, not an array"
        if isinstance(item, (str, bytes, dict, set, frozenset)) or callable(item):
            return f"{prefix} {type(item).__name__}, not an array"
        try:
            array = np.asarray(item)
        except Exception as exc:  # noqa: BLE001 - anything a student object raises
            return f"{what} could not be converted to an array: {exception_text(exc, limit=300)}"
        if type(array) is not np.ndarray or array.dtype.kind not in NUMERIC_KINDS:
            return f"{prefix} {type(item).__name__} (dtype {array.dtype}), not a numeric array"
        total += array.nbytes
        if total > MAX_CALL_OUTPUT_BYTES:
            return f"returned {total:,}+ bytes of arrays; the limit is {fmt_bytes(MAX_CALL_OUTPUT_BYTES)}"
        arrays.append(np.array(array, copy=True, order="C"))
    return arrays


def exception_text(exc: BaseException, filename: str = SUBMISSION_FILE, limit: int = 1000) -> str:
    """'TypeError: message (line N)', N being the last line of `filename` in the traceback."""
    try:
        detail = str(exc)
    except BaseException:  # noqa: BLE001 - a student exception whose __str__ raises
        detail = "<unprintable>"
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if isinstance(exc, SyntaxError):
        if exc.lineno and f"line {exc.lineno}" not in text:
            text += f" (line {exc.lineno})"
    else:
        where = raised_at(exc, filename)
        if where:
            text += f" ({where})"
    return clean_text(text, limit)


def raised_at(exc: BaseException, filename: str = SUBMISSION_FILE) -> Optional[str]:
    """'line N' (or 'cell 3, line N' in a notebook): the last place of the student's file in the traceback."""
    return position([(frame.f_code.co_filename, lineno) for frame, lineno in traceback.walk_tb(exc.__traceback__)],
                    filename)


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    # torch reports allocator failures as RuntimeError.
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def safe_repr(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - a student __repr__ may raise anything
        text = f"<{type(value).__name__} object>"
    return clean_text(text, limit)


def plain(value: Any) -> Any:
    """ANSWERS (or any value) as JSON data within bounds: nodes, depth, string and key lengths.

    Tuples and arrays become lists, numpy scalars, `Fraction`s and `Decimal`s become numbers, non-finite floats become
    their repr, anything exotic its capped repr. Idempotent, so the trusted grader applies
    it again to what arrives as JSON.
    """
    budget = [MAX_ANSWER_NODES]

    def clean(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_ANSWER_DEPTH:
            return "\u2026"
        kind = type(item)
        if item is None or kind is bool:
            return item
        if kind is int:
            return item if item.bit_length() <= 64 else safe_repr(item, 100)
        if kind is float:
            return item if math.isfinite(item) else repr(item)
        if kind is str:
            return clean_text(item, MAX_ANSWER_STR)
        if kind is Fraction or kind is Decimal:  # exact types only: a subclass's __float__ is the student's code
            try:
                number = float(item)
            except (OverflowError, ValueError, ArithmeticError):
                return safe_repr(item, 100)
            return number if math.isfinite(number) else repr(number)
        if isinstance(item, np.generic) and item.dtype.kind in "biufU":
            return clean(item.item(), depth)
        if kind is np.ndarray and item.dtype.kind in "biufU" and item.size <= MAX_ANSWER_NODES:
            return clean(item.tolist(), depth)
        if kind in (list, tuple):
            return [clean(v, depth + 1) for v in item[:MAX_ANSWER_ITEMS]]
        if kind is dict:
            out: Dict[str, Any] = {}
            for key, v in list(item.items())[:MAX_ANSWER_ITEMS]:
                name = clean_text(key, MAX_ANSWER_KEY) if type(key) is str else safe_repr(key, MAX_ANSWER_KEY)
                out[name] = clean(v, depth + 1)
            return out
        return safe_repr(item)

    return clean(value, 0)


def plain_answers(value: Any) -> Dict[str, Any]:
    """The ANSWERS dictionary as plain data; anything but a dict is {}."""
    if type(value) is not dict:
        return {}
    try:
        cleaned = plain(value)
    except BaseException:  # noqa: BLE001 - student objects inside ANSWERS may raise anything
        return {}
    return cleaned if isinstance(cleaned, dict) else {}


def plain_defined(names: Any, limit: int = 1000) -> List[str]:
    """Names a module defines, as the grader accepts them."""
    if not isinstance(names, list):
        return []
    return sorted({n for n in names[:limit] if isinstance(n, str) and n.isidentifier()})


def exit_code_text(code: Optional[object]) -> str:
    return "" if code is None else clean_text(str(code), 100)
