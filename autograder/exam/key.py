"""The answer key of one problem instance: a problem (and its variant) in; the right answers as a student would write
them, the accepted tolerance, the worked solution and the common wrong answers out.

Shared by the answer key document, the drill and the platform exports, so all
three accept and show the same answers. Numbers come from the variant, which the
bank computed with the problem's reference; nothing here is typed in. For
`implement` problems the key is the approach in the problem's `solution` text,
never the reference's source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autograder.bank.answers import close, expected_shape
from autograder.bank.model import (
    AnswerPart,
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    Problem,
    ShapeProblem,
    Tolerance,
    TrueFalseProblem,
)
from autograder.bank.render import fmt, render_solution
from autograder.bank.resolve import resolve
from autograder.bank.variants import Variant


@dataclass(frozen=True)
class KeyLine:
    label: str
    answer: str  # as a student writes it, e.g. "(0.0634, 0.4683, 0.4683)"
    accepted: str = ""  # e.g. "within 0.0005 of each entry"; empty when nothing else needs saying


@dataclass(frozen=True)
class Mistake:
    answer: str  # the wrong answer it gives, e.g. "B" or "scores: (2, 4, 4)"
    message: str


@dataclass(frozen=True)
class ProblemKey:
    lines: tuple[KeyLine, ...]
    solution: str  # Markdown with LaTeX
    mistakes: tuple[Mistake, ...]


def shown_decimals(part: AnswerPart) -> int:
    """The part's own decimals, or enough digits that rounding stays well inside the tolerance."""
    if part.decimals is not None:
        return part.decimals
    return max(0, math.ceil(-math.log10(part.tolerance.abs)) + 1) if part.tolerance.abs > 0 else 6


def tolerance_text(tolerance: Tolerance, value: np.ndarray) -> str:
    """The window check_part accepts around this answer, |got - want| <= abs + rel * |want|, in words."""
    windows = {float(w) for w in np.ravel(tolerance.abs + tolerance.rel * np.abs(value))}
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


def problem_key(problem: Problem, variant: Variant | None = None) -> ProblemKey:
    if isinstance(problem, NumericProblem):
        assert variant is not None, "a numeric problem's key needs its variant"
        lines = tuple(KeyLine(part.label, part_answer(part, variant.answers[part.name]),
                              tolerance_text(part.tolerance, variant.answers[part.name])) for part in problem.parts)
        return ProblemKey(lines, render_solution(problem, variant), tuple(numeric_mistakes(problem, variant)))
    if isinstance(problem, ShapeProblem):
        symbols = "(" + ", ".join(problem.answer) + ")"
        numbers = "(" + ", ".join(expected_shape(problem)) + ")" if problem.parameters else ""
        line = KeyLine("shape", symbols if not numbers else f"{numbers}, that is {symbols}")
        mistakes = tuple(Mistake("(" + ", ".join(m.answer) + ")", m.message) for m in problem.misconceptions)
        return ProblemKey((line,), problem.solution, mistakes)
    if isinstance(problem, TrueFalseProblem):
        lines = [KeyLine("answer", "True" if problem.answer else "False")]
        if problem.correction:
            lines.append(KeyLine("corrected statement", problem.correction))
        lines.append(KeyLine("why", problem.reason))
        return ProblemKey(tuple(lines), problem.solution, ())
    if isinstance(problem, MultipleChoiceProblem):
        right = problem.choices[ord(problem.answer) - ord("A")]
        mistakes = tuple(Mistake(chr(65 + i), c.misconception) for i, c in enumerate(problem.choices)
                         if c.misconception and chr(65 + i) != problem.answer)
        return ProblemKey((KeyLine("answer", f"{problem.answer}: {right.text}"),), problem.solution, mistakes)
    assert isinstance(problem, ImplementProblem)
    line = KeyLine("function", f"`{problem.signature}`, returning {problem.returns}")
    mistakes = tuple(Mistake(m.id.replace("-", " "), m.message) for m in problem.misconceptions)
    return ProblemKey((line,), problem.solution, mistakes)
