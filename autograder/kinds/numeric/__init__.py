"""`numeric`: a hand calculation; numbers drawn per seed and student, answers computed by the reference.

The kind's package: its model (model.py), its draws (variants.py, keeping the
by-hand rules of by_hand.py), its text rendered from a variant's numbers
(render.py), each part judged within its tolerance and shown (parts.py; points
split equally over the parts), the self-check's sealed cells (seals.py) and
validate's checks of the lecture's figures, the draws and the misconception twins
(checks.py). Here: the kind itself, with the answer key, exam blanks, drill
questions and quiz groups, each naming a misconception whose wrong-method answer
a typed answer equals.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.kinds.base import Build, CodeProblems, Draws, Placed, WrittenKind
from autograder.kinds.cells import plain_literal
from autograder.kinds.items import (
    Blank, DrillQuestion, KeyLine, Marked, ProblemKey, Question, QuestionGroup, Variant, Verdict,
)
from autograder.kinds.numeric.checks import checked_variants, numeric_findings, summary
from autograder.kinds.numeric.model import AnswerPart, NumericProblem
from autograder.kinds.numeric.parts import (
    answer_form, check_part, numeric_blanks, numeric_misconception, numeric_mistakes, part_answer, read_numbers,
    tolerance_text,
)
from autograder.kinds.numeric.render import render_prompt, render_solution
from autograder.kinds.numeric.seals import numeric_data
from autograder.kinds.numeric.variants import distinct_variants, variant_for
from autograder.kinds.resolve import resolve
from autograder.memo import Memo
from qkv_runtime import judge
from qkv_runtime.answers import AnswerFormatError, parse_numbers, symbol_values
from qkv_runtime.diagnosis import written_mistake_text, written_mistakes


# --------------------------------------------------------------------- drill


def _judge_part(problem: NumericProblem, variant: Variant, part: AnswerPart) -> Callable[[str], Verdict]:
    def judge(typed: str) -> Verdict:
        verdict = check_part(part, variant.answers[part.name], typed, variant.params)
        if verdict.correct:
            return verdict
        message = numeric_misconception(problem, variant, part, typed)
        return Verdict(False, message, misconception=message) if message else verdict

    return judge


def _mistakes_named(problem: NumericProblem, variant: Variant, answer: Any, verdicts: list[Verdict | None]) -> list[str]:
    """The messages of the misconceptions the wrong parts' answers are, most parts explained first
    (qkv_runtime.diagnosis.written_mistakes, the rule nbgrader's cells name them by)."""
    single, matched = len(problem.parts) == 1, []
    for part, verdict in zip(problem.parts, verdicts):
        if verdict is None or verdict.correct:
            continue
        want = np.asarray(variant.answers[part.name], dtype=float)
        try:
            got = parse_numbers(judge.part_of(answer, part.name, single), want.size, variant.params)
        except AnswerFormatError:
            continue
        matched += [(message, part.name) for message, value in _wrong_values(problem, variant, part).items()
                    if got.size == value.size and judge.close(got.reshape(value.shape), value, part.tolerance.abs,
                                                              part.tolerance.rel)]
    return written_mistakes(matched)


# every wrong answer typed for one variant (a class sharing it, each guess of the guessing study) is matched against
# the same misconceptions' values: each misconception's method is run once per (variant, part)
_WRONG: Memo[dict[str, np.ndarray]] = Memo(1 << 16)  # a class of 400, a variant each, on every part of the bank


def _wrong_values(problem: NumericProblem, variant: Variant, part: AnswerPart) -> dict[str, np.ndarray]:
    """{message: the part's answer by that misconception's method}, where it differs from the right one: what
    nbgrader's cell names (qkv_runtime.nbcells.WrittenAnswer.number), as `grade` does. Kept: read, never changed."""
    def make() -> dict[str, np.ndarray]:
        right = np.asarray(variant.answers[part.name], dtype=float)
        found = {}
        for wrong in problem.misconceptions:
            value = resolve(wrong.compute)(**variant.params).get(part.name)
            if value is not None and not judge.close(value, right, part.tolerance.abs, part.tolerance.rel):
                found[wrong.message] = kept = np.array(value, dtype=float)  # a copy of its own, never written
                kept.setflags(write=False)
        return found

    return _WRONG.get((problem, variant, part), make)


def _shape_hint(value: np.ndarray) -> str:
    if np.ndim(value) == 1:
        return f" [{np.size(value)} numbers]"
    if np.ndim(value) == 2:
        return f" [{np.shape(value)[0]}x{np.shape(value)[1]} matrix, rows split by ;]"
    return ""


# ----------------------------------------------------------------- quizzes


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


# ---------------------------------------------------------------------- kind

MAX_WORK_LINES = 10  # room to work on an exam paper, whatever the parts: a problem of many parts repeats one step


class NumericKind(WrittenKind):
    name = "numeric"
    selfcheck_judge = "numbers"
    model = NumericProblem
    parameterised = True

    def refs(self, problem: NumericProblem) -> list[tuple[str, str]]:
        refs = [("compute", problem.compute)] + [(name, ref) for name, ref in (("feasible", problem.feasible),
                                                                              ("admissible", problem.admissible)) if ref]
        return refs + [(f"misconceptions.{m.id}", m.compute) for m in problem.misconceptions]

    def check(self, problem: NumericProblem) -> list[str]:
        return numeric_findings(problem, self.render_findings)

    def variant(self, problem: NumericProblem, seed: int, mode: str, student: str | None) -> Variant:
        return variant_for(problem, seed, mode, student)

    def own_numbers(self, problem: NumericProblem) -> bool:
        return bool(problem.parameters)  # without parameters every student works the lecture's example

    def numbers_asked(self, problem: NumericProblem) -> list[float]:
        return [float(x) for v in checked_variants(problem) for a in v.answers.values() for x in np.ravel(a)]

    def guessed(self, problem: NumericProblem, variant, guess) -> Any:
        if guess.number is None:
            return None
        # the constant in every entry: a vector or matrix answer of the right size, not a bare number it would refuse
        return {part.name: np.full(np.shape(variant.answers[part.name]), guess.number).tolist()
                if np.ndim(variant.answers[part.name]) else guess.number for part in problem.parts}

    def draw_summary(self, problem: NumericProblem):
        return summary(problem)

    def prompt_text(self, problem: NumericProblem, variant: Variant | None = None) -> str:
        return render_prompt(problem, variant)

    def solution_text(self, problem: NumericProblem, variant: Variant | None = None) -> str:
        return render_solution(problem, variant)

    # ------------------------------------------------------------ build

    def release_prompt(self, problem: NumericProblem, manifest: Draws) -> str:
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
        symbols = plain_literal(symbol_values(variant.params))
        return [f"_w.number({p.name!r}, {plain_literal(np.asarray(variant.answers[p.name], dtype=float))}, "
                f"{float(p.tolerance.abs)!r}, {float(p.tolerance.rel)!r}, single={single!r}, symbols={symbols}, "
                f"mistakes={plain_literal(_wrong_values(problem, variant, p))})" for p in problem.parts]

    def selfcheck_data(self, assigned: Placed, assignment: Build, bundle: CodeProblems,
                       students: list[str]) -> dict[str, Any]:
        return numeric_data(assigned.problem, assignment, students)

    def grade(self, problem: NumericProblem, answer: Any, variant: Variant | None) -> Marked:
        assert variant is not None
        single = len(problem.parts) == 1
        verdicts = []
        for part in problem.parts:
            typed = judge.part_of(answer, part.name, single)
            verdicts.append(check_part(part, variant.answers[part.name], typed, variant.params) if typed is not None
                            else None)
        right = sum(bool(v and v.correct) for v in verdicts)
        notes = [v.message if v else f"{p.label}: not answered" for v, p in zip(verdicts, problem.parts)]
        named = _mistakes_named(problem, variant, answer, verdicts)
        notes += [written_mistake_text(message) for message in named]
        return Marked(right / len(problem.parts), "; ".join(notes), named[0] if named else None)

    # ------------------------------------------------------------- exam

    def work_lines(self, problem: NumericProblem) -> int:
        return min(MAX_WORK_LINES, 2 + 2 * len(problem.parts))  # a hand calculation is worked out step by step

    def blanks(self, problem: NumericProblem, variant: Variant | None) -> tuple[Blank, ...]:
        assert variant is not None
        return tuple(Blank(part.label + answer_form(variant.answers[part.name], part)) for part in problem.parts)

    def key(self, problem: NumericProblem, variant: Variant | None) -> ProblemKey:
        assert variant is not None, "a numeric problem's key needs its variant"
        lines = tuple(KeyLine(part.label, part_answer(part, variant.answers[part.name]),
                              tolerance_text(part.tolerance, variant.answers[part.name])) for part in problem.parts)
        return ProblemKey(lines, render_solution(problem, variant), tuple(numeric_mistakes(problem, variant)))

    def drill_questions(self, problem: NumericProblem, variant: Variant | None) -> list[DrillQuestion]:
        assert variant is not None
        share = problem.points / len(problem.parts)
        return [DrillQuestion(part.label + _shape_hint(variant.answers[part.name]),
                              read_numbers(variant.answers[part.name], variant.params),
                              _judge_part(problem, variant, part), share) for part in problem.parts]

    def lms_groups(self, problem: NumericProblem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
        return numeric_groups(problem, points, seed, variants)


NUMERIC = NumericKind()

