"""One answer part of a numeric problem, judged and shown: a part, its right value and a typed answer in;
verdicts, the misconception a wrong answer matches, the answer as a student writes it, the accepted window
in words, exam blanks and quiz blanks out.

Shared by the follow-up numbers of true/false statements (kinds/true_false/).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.kinds.items import Mistake, NumericBlank, Variant, Verdict
from autograder.kinds.model import Tolerance
from autograder.kinds.numeric.model import AnswerPart, NumericProblem
from autograder.kinds.numeric.render import fmt
from autograder.kinds.resolve import resolve
from qkv_runtime import judge
from qkv_runtime.answers import AnswerFormatError, not_close, parse_numbers, wrong_count


def close(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> bool:
    return judge.close(got, want, tolerance.abs, tolerance.rel)


def check_part(part: AnswerPart, want: np.ndarray, typed: Any, symbols: dict[str, Any] | None = None) -> Verdict:
    """`symbols`: the variant's parameters, which a count typed as arithmetic (`4*d^2`) may name."""
    try:
        got = parse_numbers(typed, np.size(want), symbols)
    except AnswerFormatError as err:
        return Verdict(False, f"{part.label}: {err}")
    want = np.asarray(want, dtype=float)
    if got.size == want.size and got.shape != want.shape:
        got = got.reshape(want.shape)  # a flat list for a matrix, or [x] for a scalar, is fine
    if got.shape != want.shape:
        return Verdict(False, f"{part.label}: {wrong_count(want.size, got.size, typed)}")
    if close(got, want, part.tolerance):
        return Verdict(True, f"{part.label}: correct")
    return Verdict(False, f"{part.label}: {not_close(part.tolerance.abs, part.tolerance.rel)}")


def numeric_misconception(problem: NumericProblem, variant: Variant, part: AnswerPart, typed: str) -> str | None:
    """The message of the misconception whose wrong-method answer to this part the typed answer equals."""
    right = variant.answers[part.name]
    got = parse_numbers(typed, np.size(right), variant.params)
    for wrong in problem.misconceptions:
        answers = resolve(wrong.compute)(**variant.params)
        if part.name not in answers:
            continue
        value = np.asarray(answers[part.name], dtype=float)
        if got.size == value.size and not close(value, right, part.tolerance) \
                and close(got.reshape(value.shape), value, part.tolerance):
            return wrong.message
    return None


def shown_decimals(part: AnswerPart) -> int:
    """The part's own decimals, or enough digits that rounding stays well inside the tolerance."""
    if part.decimals is not None:
        return part.decimals
    return max(0, math.ceil(-math.log10(part.tolerance.abs)) + 1) if part.tolerance.abs > 0 else 6


def tolerance_text(tolerance: Tolerance, value: np.ndarray) -> str:
    """The window check_part accepts around this answer, |got - want| <= abs + rel * |want|, in words."""
    windows = {float(w) for w in np.ravel(judge.window(value, tolerance.abs, tolerance.rel))}
    if windows == {0.0}:
        return "exact"
    each = " for each entry" if np.ndim(value) else ""
    if len(windows) == 1:
        return f"accepted within ±{windows.pop():.3g}{each}"
    return f"accepted within ±({tolerance.abs:g} + {tolerance.rel:g} × |answer|){each}"


def part_answer(part: AnswerPart, value: np.ndarray) -> str:
    return fmt(value, shown_decimals(part))


def numeric_mistakes(problem: NumericProblem, variant: Variant) -> list[Mistake]:
    """Each misconception's wrong answers on this variant, for the parts where they differ from the right ones."""
    mistakes = []
    for wrong in problem.misconceptions:
        answers = resolve(wrong.compute)(**variant.params)
        differ = [f"{part.label}: {part_answer(part, np.asarray(answers[part.name], dtype=float))}"
                  for part in problem.parts
                  if part.name in answers
                  and not close(np.asarray(answers[part.name], dtype=float), variant.answers[part.name], part.tolerance)]
        if differ:
            mistakes.append(Mistake("; ".join(differ), wrong.message))
    return mistakes


def answer_form(value: np.ndarray, part: AnswerPart) -> str:
    """What a blank asks for: how many numbers, and to how many decimals (the part's own `decimals`, which
    the key shows too, so the paper states each part's rounding once, at its blank)."""
    rounding = f", {part.decimals} decimals" if part.decimals else ""
    if np.ndim(value) == 1:
        return f" ({np.size(value)} numbers{rounding})"
    if np.ndim(value) == 2:
        return f" ({np.shape(value)[0]} × {np.shape(value)[1]} matrix, row by row{rounding})"
    if part.form == "position":
        return f" (a position, counted from {part.base})"
    if part.form == "integer":
        return " (a whole number)"
    return f" ({part.decimals} decimals)" if part.decimals else ""


def read_numbers(want: np.ndarray, symbols: dict[str, Any] | None = None) -> Callable[[str], object]:
    """A drill reader: the typed numbers, or AnswerFormatError when they are malformed or too few or many."""
    def read(typed: str) -> object:
        got = parse_numbers(typed, np.size(want), symbols)
        if got.size != np.size(want):
            raise AnswerFormatError(wrong_count(np.size(want), got.size, typed))
        return got

    return read


def entry_labels(label: str, value: np.ndarray) -> list[str]:
    flat = np.size(value)
    if flat == 1:
        return [label]
    if np.ndim(value) == 2:
        cols = np.shape(value)[1]
        return [f"{label}, row {i // cols + 1}, column {i % cols + 1}" for i in range(flat)]
    return [f"{label}, entry {i + 1} of {flat}" for i in range(flat)]


def numeric_blanks(part: AnswerPart, value: np.ndarray) -> tuple[NumericBlank, ...]:
    value = np.asarray(value, dtype=float)
    blanks = []
    for label, x in zip(entry_labels(part.label, value), value.reshape(-1)):
        # four significant digits: the platforms show the window to the instructor
        window = float(f"{float(judge.window(float(x), part.tolerance.abs, part.tolerance.rel)):.4g}")
        blanks.append(NumericBlank(label, float(x), window, part_answer(part, x)))
    return tuple(blanks)
