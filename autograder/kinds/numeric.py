"""`numeric`: a hand calculation; numbers drawn per seed and student, answers computed by the reference.

Takes a `NumericProblem` and its `Variant` (bank/variants.py); gives the prompt
and solution rendered from the variant's numbers, each part judged within its
tolerance (points split equally over the parts), the self-check's sealed
cells (kinds/sealing.py), validate's checks of the lecture's
figures, the draws and the misconception twins, and the answer key, exam
blanks, drill questions and quiz groups, each naming a misconception whose
wrong-method answer a typed answer equals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from autograder.bank.model import DottedRef, ParamSpec, ProblemBase, ProblemId, Strict, Tolerance
from autograder.bank.render import fmt, render_text, variant_context
from autograder.bank.resolve import resolve
from autograder.bank.variants import Variant, distinct_variants, variant_for
from autograder.kinds.base import CLASS, WrittenKind
from autograder.kinds.cells import plain_literal
from autograder.kinds.items import (
    Blank, DrillQuestion, KeyLine, Marked, Mistake, NumericBlank, ProblemKey, Question, QuestionGroup, Verdict,
)
from autograder.kinds.by_hand import HandRules
from autograder.kinds.sealing import Seal, derive_seals, number_seals
from qkv_runtime import judge, sealed
from qkv_runtime.answers import AnswerFormatError, not_close, parse_numbers, wrong_count


class AnswerTolerance(Tolerance):
    """A hand-calculated answer's window: 5e-4 either side, and relative only when the problem asks for it."""

    abs: float = Field(default=5e-4, ge=0)
    rel: float = Field(default=0.0, ge=0)


class AnswerPart(Strict):
    """One number, vector or matrix the student computes by hand."""

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    label: str
    form: Literal["scalar", "vector", "matrix", "integer", "position"] = "scalar"
    base: Literal[0, 1] | None = Field(default=None, description="a position: counted from 0 or from 1, as the prompt says")
    decimals: int | None = Field(default=None, ge=0, le=8, description="how the answer is rounded when shown")
    tolerance: AnswerTolerance = AnswerTolerance()

    @model_validator(mode="after")
    def _position_has_base(self) -> "AnswerPart":
        if (self.form == "position") != (self.base is not None):
            raise ValueError("a position part says whether it counts from 0 or from 1 (base), and only it has a base")
        return self


class LectureExample(Strict):
    """The lecture's own numbers: fixed parameters and the figures the lecture prints."""

    params: dict[str, Any]
    expected: dict[str, Any]


class NumericMisconception(Strict):
    id: ProblemId
    message: str = Field(min_length=10)
    compute: DottedRef


class NumericProblem(ProblemBase):
    kind: Literal["numeric"]
    parameters: dict[str, ParamSpec] = {}
    compute: DottedRef = Field(description="function(**params) -> {part name: value}")
    feasible: DottedRef | None = Field(
        default=None,
        description="function(params, answers) -> None when fine, else the reason the draw is rejected",
    )
    parts: list[AnswerPart] = Field(min_length=1)
    by_hand: HandRules | None = Field(default=None, description="what makes every drawn variant workable by hand")
    lecture_example: LectureExample | None = None
    misconceptions: list[NumericMisconception] = []

    @model_validator(mode="after")
    def _has_a_variant(self) -> "NumericProblem":
        if not self.parameters and self.lecture_example is None:
            raise ValueError("needs parameters or a lecture_example")
        return self


# ------------------------------------------------------------ judging numbers


def close(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> bool:
    return judge.close(got, want, tolerance.abs, tolerance.rel)


def check_part(part: AnswerPart, want: np.ndarray, typed: Any) -> Verdict:
    try:
        got = parse_numbers(typed, np.size(want))
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
    got = parse_numbers(typed, np.size(right))
    for wrong in problem.misconceptions:
        answers = resolve(wrong.compute)(**variant.params)
        if part.name not in answers:
            continue
        value = np.asarray(answers[part.name], dtype=float)
        if got.size == value.size and not close(value, right, part.tolerance) \
                and close(got.reshape(value.shape), value, part.tolerance):
            return wrong.message
    return None


# ---------------------------------------------------------------------- text


def render_prompt(problem: NumericProblem, variant: Variant | None) -> str:
    assert variant is not None, "a numeric problem's prompt needs its variant"
    return render_text(problem.prompt, variant_context(problem, variant))


def render_solution(problem: NumericProblem, variant: Variant | None) -> str:
    assert variant is not None, "a numeric problem's solution needs its variant"
    return render_text(problem.solution, variant_context(problem, variant))


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


def answer_form(value: np.ndarray, form: str) -> str:
    if np.ndim(value) == 1:
        return f" ({np.size(value)} numbers)"
    if np.ndim(value) == 2:
        return f" ({np.shape(value)[0]} × {np.shape(value)[1]} matrix, row by row)"
    if form == "position":
        return " (a position, counted as the problem says)"
    return " (a whole number)" if form == "integer" else ""


# --------------------------------------------------------------------- drill


def read_numbers(want: np.ndarray) -> Callable[[str], object]:
    """A drill reader: the typed numbers, or AnswerFormatError when they are malformed or too few or many."""
    def read(typed: str) -> object:
        got = parse_numbers(typed, np.size(want))
        if got.size != np.size(want):
            raise AnswerFormatError(wrong_count(np.size(want), got.size, typed))
        return got

    return read


def _judge_part(problem: NumericProblem, variant: Variant, part: AnswerPart) -> Callable[[str], Verdict]:
    def judge(typed: str) -> Verdict:
        verdict = check_part(part, variant.answers[part.name], typed)
        if verdict.correct:
            return verdict
        message = numeric_misconception(problem, variant, part, typed)
        return Verdict(False, message, misconception=message) if message else verdict

    return judge


def _shape_hint(value: np.ndarray) -> str:
    if np.ndim(value) == 1:
        return f" [{np.size(value)} numbers]"
    if np.ndim(value) == 2:
        return f" [{np.shape(value)[0]}x{np.shape(value)[1]} matrix, rows split by ;]"
    return ""


# ----------------------------------------------------------------- quizzes

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


def _variant_title(problem: NumericProblem, n: int, of: int) -> str:
    return problem.title if of == 1 else f"{problem.title} (variant {n} of {of})"


def variant_question(problem: NumericProblem, variant: Variant, points: float, ident: str, title: str) -> Question:
    """Every part of one variant in one question: a single number is `numerical`, several are a `cloze`
    whose parts share the points equally, as the grader splits them."""
    prompt, solution = render_prompt(problem, variant), render_solution(problem, variant)
    share = points / len(problem.parts)
    parts = tuple(Question(f"{ident}-{part.name}", part.label, "numerical", part.label, share, "",
                           numeric_blanks(part, variant.answers[part.name])) for part in problem.parts)
    if len(parts) == 1 and len(parts[0].blanks) == 1:
        return Question(ident, title, "numerical", prompt, points, solution, parts[0].blanks)
    return Question(ident, title, "cloze", prompt, points, solution, parts=parts)


def numeric_groups(problem: NumericProblem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
    """The variants of the problem, from which a platform draws one per student: one question each."""
    drawn = distinct_variants(problem, seed, variants)
    questions = tuple(variant_question(problem, v, points, f"{problem.id}-v{n}", _variant_title(problem, n, len(drawn)))
                      for n, v in enumerate(drawn, 1))
    return [QuestionGroup(problem.id, problem.title, points, questions)]


# ----------------------------------------------------------- self-check data


def numeric_part_plan(salt: Callable[[str], str], want: Any, part: AnswerPart,
                      wrong: list[Any]) -> tuple[dict[str, Any], list[list[Seal] | None]]:
    """One part for one student: its mode, cell sizes and the seals of the right answer, and of each
    wrong answer in `wrong` (None where a wrong answer has another shape or is within tolerance)."""
    want = np.asarray(want, dtype=float)
    tol = part.tolerance
    mode, sizes = sealed.part_plan(want, tol.abs, tol.rel, part.decimals)
    entry = {"mode": mode, "cells": sizes, "right": number_seals(salt, want, mode, sizes, "right")}
    wrong_seals: list[list[Seal] | None] = []
    for j, value in enumerate(wrong):
        value = None if value is None else np.asarray(value, dtype=float)
        if value is None or value.size != want.size or close(value.reshape(want.shape), want, tol):
            wrong_seals.append(None)  # another shape, or not a mistake for these numbers
        else:
            wrong_seals.append(number_seals(salt, value.reshape(want.shape), mode, sizes, f"mistake{j}"))
    return entry, wrong_seals


def numeric_part_data(salt: Callable[[str], str], want: Any, part: AnswerPart, wrong: list[Any],
                      params: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Any]]:
    """`numeric_part_plan` with its keys derived: the part's data as selfcheck.json holds it."""
    entry, wrong_seals = numeric_part_plan(salt, want, part, wrong)
    return derive_seals([entry, wrong_seals], params or sealed.kdf_params())


def _numeric_data(assigned, assignment, students: list[str]) -> dict[str, Any]:
    problem = assigned.problem
    parts = problem.parts
    digests: dict[str, dict[str, Any]] = {}
    shapes: dict[str, list[int]] = {}
    wrong: dict[str, list[dict[str, Any]]] = {}
    for student in students:
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants,
                              None if student == CLASS else student)
        mistakes = [resolve(m.compute)(**variant.params) for m in problem.misconceptions]
        digests[student] = {}
        found: list[dict[str, list[Seal]]] = [{} for _ in mistakes]
        for part in parts:
            want = variant.answers[part.name]
            shapes[part.name] = list(np.shape(want))
            salt = lambda suffix, p=part.name: sealed.digest_salt(  # noqa: E731
                assignment.name, student, problem.id, p + suffix)
            entry, wrong_parts = numeric_part_plan(salt, want, part, [m.get(part.name) for m in mistakes])
            digests[student][part.name] = entry
            for i, d in enumerate(wrong_parts):
                if d is not None:
                    found[i][part.name] = d
        wrong[student] = [{"message": m.message, "label": f"mistake{j}", "digests": f}
                          for j, (m, f) in enumerate(zip(problem.misconceptions, found)) if f]
    return {
        "parts": [{"name": p.name, "label": p.label, "shape": shapes[p.name],
                   "tolerance": p.tolerance.model_dump()} for p in parts],
        "digests": digests,
        "misconceptions": wrong,
    }


# ---------------------------------------------------------------------- kind

class NumericKind(WrittenKind):
    name = "numeric"
    model = NumericProblem
    parameterised = True

    def refs(self, problem: NumericProblem) -> list[tuple[str, str]]:
        refs = [("compute", problem.compute)] + ([("feasible", problem.feasible)] if problem.feasible else [])
        return refs + [(f"misconceptions.{m.id}", m.compute) for m in problem.misconceptions]

    def check(self, problem: NumericProblem) -> list[str]:
        from autograder.kinds.numeric_checks import numeric_findings

        return numeric_findings(problem, self.render_findings)

    def variant(self, problem: NumericProblem, seed: int, mode: str, student: str | None) -> Variant:
        return variant_for(problem, seed, mode, student)

    def numbers_asked(self, problem: NumericProblem) -> list[float]:
        from autograder.kinds.numeric_checks import checked_variants

        return [float(x) for v in checked_variants(problem) for a in v.answers.values() for x in np.ravel(a)]

    def draw_summary(self, problem: NumericProblem):
        from autograder.kinds.numeric_checks import summary

        return summary(problem)

    def prompt_text(self, problem: NumericProblem, variant: Variant | None = None) -> str:
        return render_prompt(problem, variant)

    def solution_text(self, problem: NumericProblem, variant: Variant | None = None) -> str:
        return render_solution(problem, variant)

    # ------------------------------------------------------------ build

    def release_prompt(self, problem: NumericProblem, manifest) -> str:
        if manifest.variants == "per_student":
            return ("Your numbers depend on your student id: set `STUDENT_ID`, then run "
                    f"`python qkv_check.py --student YOUR_ID --show {problem.id}` (or `show(\"{problem.id}\")` in the notebook).")
        return super().release_prompt(problem, manifest)

    def placeholder(self, problem: NumericProblem) -> str:
        if len(problem.parts) == 1:
            return "None"
        return "{" + ", ".join(f"{json.dumps(p.name)}: None" for p in problem.parts) + "}"

    def answer(self, problem: NumericProblem, variant: Variant | None) -> object:
        assert variant is not None
        values = {p.name: np.round(variant.answers[p.name], 10).tolist() for p in problem.parts}
        return next(iter(values.values())) if len(values) == 1 else values

    def nbgrader_checks(self, problem: NumericProblem, variant: Variant | None) -> list[str]:
        assert variant is not None
        single = len(problem.parts) == 1
        return [f"_w.number({p.name!r}, {plain_literal(np.asarray(variant.answers[p.name], dtype=float))}, "
                f"{float(p.tolerance.abs)!r}, {float(p.tolerance.rel)!r}, single={single!r})" for p in problem.parts]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _numeric_data(assigned, assignment, students)

    def grade(self, problem: NumericProblem, answer: Any, variant: Variant | None) -> Marked:
        assert variant is not None
        single = len(problem.parts) == 1
        verdicts = []
        for part in problem.parts:
            typed = judge.part_of(answer, part.name, single)
            verdicts.append(check_part(part, variant.answers[part.name], typed) if typed is not None
                            else None)
        right = sum(bool(v and v.correct) for v in verdicts)
        notes = [v.message if v else f"{p.label}: not answered" for v, p in zip(verdicts, problem.parts)]
        return Marked(right / len(problem.parts), "; ".join(notes))

    # ------------------------------------------------------------- exam

    def blanks(self, problem: NumericProblem, variant: Variant | None) -> tuple[Blank, ...]:
        assert variant is not None
        return tuple(Blank(part.label + answer_form(variant.answers[part.name], part.form)) for part in problem.parts)

    def key(self, problem: NumericProblem, variant: Variant | None) -> ProblemKey:
        assert variant is not None, "a numeric problem's key needs its variant"
        lines = tuple(KeyLine(part.label, part_answer(part, variant.answers[part.name]),
                              tolerance_text(part.tolerance, variant.answers[part.name])) for part in problem.parts)
        return ProblemKey(lines, render_solution(problem, variant), tuple(numeric_mistakes(problem, variant)))

    def drill_questions(self, problem: NumericProblem, variant: Variant | None) -> list[DrillQuestion]:
        assert variant is not None
        share = problem.points / len(problem.parts)
        return [DrillQuestion(part.label + _shape_hint(variant.answers[part.name]),
                              read_numbers(variant.answers[part.name]),
                              _judge_part(problem, variant, part), share) for part in problem.parts]

    def lms_groups(self, problem: NumericProblem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
        return numeric_groups(problem, points, seed, variants)


NUMERIC = NumericKind()
