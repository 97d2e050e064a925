"""Answer forms: what a student types (a number, a list, a shape, true/false, a letter) in, canonical values out.

Standalone (stdlib + numpy only) because it is copied verbatim into every
student release as `qkv_answers.py`: the offline self-check and the grader must
read answers, and canonicalise them for hashing, in exactly the same way.
A malformed answer raises `AnswerFormatError` whose message says what format is expected.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from fractions import Fraction
from typing import Any

import numpy as np


class AnswerFormatError(ValueError):
    """The answer could not be read; the message says what format is expected."""



_NUMBER_HINT = "a number such as 0.0634 or 6.34e-2, or a list such as [0.0634, 0.4683, 0.4683]"


def _number(token: str) -> float:
    token = token.strip()
    if re.fullmatch(r"[-+]?\d+\s*/\s*\d+", token):
        return float(Fraction(token.replace(" ", "")))
    return float(token)


def parse_numbers(value: Any) -> np.ndarray:
    """A scalar, vector or matrix typed as a number, a string or nested lists."""
    if isinstance(value, bool):
        raise AnswerFormatError(f"expected {_NUMBER_HINT}, got a true/false value")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise AnswerFormatError(f"the answer is empty: expected {_NUMBER_HINT}")
        if ";" in text:  # "1 2; 3 4" is a matrix, row by row
            rows = [r for r in text.strip("[]() ").split(";") if r.strip()]
            return np.array([parse_numbers(r).reshape(-1) for r in rows], dtype=float)
        if text[0] in "[(":
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = [t for t in re.split(r"[\s,]+", text.strip("[]() ")) if t]
        else:
            tokens = [t for t in re.split(r"[\s,]+", text) if t]
            value = tokens if len(tokens) > 1 else tokens[0]
    try:
        if isinstance(value, str):
            return np.asarray(_number(value), dtype=float)
        if isinstance(value, (list, tuple)):
            items = [parse_numbers(v) for v in value]
            return np.asarray(items, dtype=float)
        array = np.asarray(value, dtype=float)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise AnswerFormatError(f"could not read {str(value)[:40]!r} as {_NUMBER_HINT}") from None
    return array


_SHAPE_HINT = "a shape such as (3, 4), 3x4 or n x d_v"


def _canonical_dim(dim: str) -> str:
    dim = dim.strip().lower().replace(" ", "").replace("_", "").replace("·", "*")
    return dim.replace("{", "").replace("}", "").replace("\\", "")


def parse_shape(value: Any) -> tuple[str, ...]:
    """A shape as a tuple of canonical dims: '(n, d_v)' and 'n x dv' both give ('n', 'dv')."""
    if isinstance(value, (list, tuple)):
        dims = [str(v) for v in value]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = [str(value)]
    elif isinstance(value, str) and value.strip():
        text = value.strip().strip("()[]")
        text = text.replace("×", "x").replace("\\times", "x").replace("*", "x")
        dims = re.split(r"\s*,\s*|\s+x\s+|(?<=[\w)])x(?=[\d(])", text) if text else []
    else:
        raise AnswerFormatError(f"expected {_SHAPE_HINT}")
    dims = [_canonical_dim(d) for d in dims if d.strip()]
    if not dims or any(not re.fullmatch(r"[a-z0-9/()+*-]+", d) for d in dims):
        raise AnswerFormatError(f"could not read {str(value)[:40]!r} as {_SHAPE_HINT}")
    return tuple(dims)


def evaluate_dim(dim: str, symbols: dict[str, int]) -> str:
    """A dim such as 'd/h' with numbers for its symbols, as a canonical string ('4')."""
    dim = _canonical_dim(dim)
    if not symbols:
        return dim
    names = {_canonical_dim(k): v for k, v in symbols.items()}
    expr = re.sub(r"[a-z][a-z0-9]*", lambda m: str(names.get(m.group(0), m.group(0))), dim)
    if re.fullmatch(r"[\d/()+*-]+", expr):
        value = Fraction(eval(expr, {"__builtins__": {}}, {}))  # digits and operators only, checked above
        return str(value)
    return dim


_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def parse_bool(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise AnswerFormatError("expected True or False (also accepted: true/false, T/F, yes/no)")


def parse_choice(value: Any, n_choices: int) -> str:
    letters = "ABCDEFGH"[:n_choices]
    if isinstance(value, str):
        letter = value.strip().strip("().").upper()
        if len(letter) == 1 and letter in letters:
            return letter
    raise AnswerFormatError(f"expected one letter from {', '.join(letters)}")




# ----------------------------------------------------- canonical forms and digests
# Self-check stores only salted digests of canonical answers; a typed answer is
# accepted when its canonical form (or, for rounded numbers, a neighbour in the
# last kept digit) has the same digest.


def kept_decimals(tolerance_abs: float, decimals: int | None) -> int:
    """Digits kept when hashing a number: as many as the tolerance can tell apart."""
    if tolerance_abs > 0:
        return max(0, round(-math.log10(tolerance_abs)))
    return decimals or 0


def canonical_numbers(values: np.ndarray, digits: int) -> str:
    flat = np.round(np.asarray(values, dtype=float).reshape(-1), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{np.shape(values)}:" + ",".join(f"{x:.{digits}f}" for x in flat)


def neighbour_forms(values: np.ndarray, digits: int, limit: int = 6) -> list[str]:
    """The canonical form and, for up to `limit` entries, every form one unit away in the last digit."""
    values = np.round(np.asarray(values, dtype=float), digits)
    if values.size > limit:
        return [canonical_numbers(values, digits)]
    step = 10.0 ** -digits
    grids = np.meshgrid(*[[-step, 0.0, step]] * values.size, indexing="ij")
    offsets = np.stack([g.reshape(-1) for g in grids], axis=-1) if values.size else np.zeros((1, 0))
    return [canonical_numbers(values + off.reshape(values.shape), digits) for off in offsets]


def answer_digest(salt: str, canonical: str) -> str:
    return hashlib.sha256(f"qkv1|{salt}|{canonical}".encode()).hexdigest()


def digest_salt(assignment: str, student: str, problem: str, part: str) -> str:
    return f"{assignment}|{student}|{problem}|{part}"


OUTPUT_DIGITS = 6  # a function output matches a misconception's when equal to 6 decimals


def outputs_digest(outputs, digits: int = OUTPUT_DIGITS) -> str:
    """A digest of a function's outputs, to recognise a misconception's output without shipping it."""
    canonical = "|".join(canonical_numbers(np.asarray(o, dtype=float), digits) for o in outputs)
    return hashlib.sha256(f"qkv1|outputs|{canonical}".encode()).hexdigest()
