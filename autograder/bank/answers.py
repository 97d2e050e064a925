"""What students type, understood: raw answers in, canonical values and verdicts out.

Shared by every stage that reads an answer (grade, self-check, drill), so a
student's `0.0634`, `6.34e-2`, `[0.0634, 0.4683]`, `(3, 4)`, `3x4`, `n x d_v`
or `T` means the same thing everywhere. A malformed answer raises
`AnswerFormatError` whose message says which format is expected.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from autograder.bank.model import (
    AnswerPart,
    MultipleChoiceProblem,
    ShapeProblem,
    Tolerance,
    TrueFalseProblem,
)


class AnswerFormatError(ValueError):
    """The answer could not be read; the message says what format is expected."""


@dataclass(frozen=True)
class Verdict:
    correct: bool
    message: str
    misconception: str | None = None


# ------------------------------------------------------------------ numbers

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


def close(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> bool:
    return got.shape == want.shape and bool(
        np.all(np.abs(got - want) <= tolerance.abs + tolerance.rel * np.abs(want))
    )


def check_part(part: AnswerPart, want: np.ndarray, typed: Any) -> Verdict:
    try:
        got = parse_numbers(typed)
    except AnswerFormatError as err:
        return Verdict(False, f"{part.label}: {err}")
    want = np.asarray(want, dtype=float)
    if got.size == want.size and got.shape != want.shape:
        got = got.reshape(want.shape)  # a flat list for a matrix, or [x] for a scalar, is fine
    if got.shape != want.shape:
        return Verdict(False, f"{part.label}: expected {want.size} number(s), got {got.size}")
    if close(got, want, part.tolerance):
        return Verdict(True, f"{part.label}: correct")
    return Verdict(False, f"{part.label}: not within {part.tolerance.abs:g} of the answer")


# ------------------------------------------------------------------- shapes

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


def expected_shape(problem: ShapeProblem) -> tuple[str, ...]:
    return tuple(evaluate_dim(d, problem.parameters) for d in problem.answer)


def check_shape(problem: ShapeProblem, typed: Any) -> Verdict:
    try:
        got = tuple(evaluate_dim(d, problem.parameters) for d in parse_shape(typed))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == expected_shape(problem):
        return Verdict(True, "correct shape")
    for wrong in problem.misconceptions:
        if got == tuple(evaluate_dim(d, problem.parameters) for d in wrong.answer):
            return Verdict(False, wrong.message, misconception=" x ".join(wrong.answer))
    return Verdict(False, f"{' x '.join(got)} is not the shape")


# ----------------------------------------------------- true/false and choices

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


def check_true_false(problem: TrueFalseProblem, typed: Any) -> Verdict:
    if isinstance(typed, dict):
        typed = typed.get("answer")
    try:
        got = parse_bool(typed)
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == problem.answer:
        return Verdict(True, "correct")
    return Verdict(False, "the statement is " + ("true" if problem.answer else "false"))


def parse_choice(value: Any, n_choices: int) -> str:
    letters = "ABCDEFGH"[:n_choices]
    if isinstance(value, str):
        letter = value.strip().strip("().").upper()
        if len(letter) == 1 and letter in letters:
            return letter
    raise AnswerFormatError(f"expected one letter from {', '.join(letters)}")


def check_choice(problem: MultipleChoiceProblem, typed: Any) -> Verdict:
    try:
        got = parse_choice(typed, len(problem.choices))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == problem.answer:
        return Verdict(True, "correct")
    chosen = problem.choices[ord(got) - ord("A")]
    return Verdict(False, chosen.misconception or f"{got} is not the answer", misconception=chosen.misconception)
