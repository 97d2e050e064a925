"""What students type, understood: raw answers in, canonical values and verdicts out.

Parsing lives in the portable runtime (qkv_runtime.answers, shared with student
releases and nbgrader cells); this module judges a parsed answer against a problem of the bank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qkv_runtime.answers import (
    AnswerFormatError,
    evaluate_dim,
    parse_bool,
    parse_choice,
    parse_numbers,
    parse_shape,
)
from autograder.bank.model import (
    AnswerPart,
    MultipleChoiceProblem,
    ShapeProblem,
    Tolerance,
    TrueFalseProblem,
)


@dataclass(frozen=True)
class Verdict:
    correct: bool
    message: str
    misconception: str | None = None


# ------------------------------------------------------------------ numbers

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
    window = f"{part.tolerance.abs:g}" + (f" + {part.tolerance.rel:g} x |answer|" if part.tolerance.rel else "")
    return Verdict(False, f"{part.label}: not within {window} of the answer")


# ------------------------------------------------------------------- shapes

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


def check_choice(problem: MultipleChoiceProblem, typed: Any) -> Verdict:
    try:
        got = parse_choice(typed, len(problem.choices))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == problem.answer:
        return Verdict(True, "correct")
    chosen = problem.choices[ord(got) - ord("A")]
    return Verdict(False, chosen.misconception or f"{got} is not the answer", misconception=chosen.misconception)


__all__ = [
    "AnswerFormatError", "Verdict", "check_choice", "check_part", "check_shape", "check_true_false",
    "close", "evaluate_dim", "expected_shape", "parse_bool", "parse_choice", "parse_numbers", "parse_shape",
]
