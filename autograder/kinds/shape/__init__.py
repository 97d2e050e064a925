"""`shape`: give the shape of an array, in symbols (`n x d_v`) or, with `parameters`, in numbers.

Takes a `ShapeProblem`; gives the shape judged axis by axis after evaluating
symbols and expressions (`d/h`), the misconception a known wrong shape reflects,
its self-check digests, nbgrader cells, key, exam blank, drill question and a
short-answer quiz question that accepts the usual spellings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from autograder.kinds.model import ProblemBase, Strict
from autograder.kinds.base import AllOrNothingKind
from autograder.kinds.sealing import class_answer, class_mistakes
from autograder.kinds.cells import plain_literal
from autograder.kinds.items import Blank, KeyLine, Mistake, ProblemKey, Question, Verdict
from qkv_runtime.answers import AnswerFormatError, canonical_dim, evaluate_dim, not_the_shape, parse_shape


class ShapeMisconception(Strict):
    answer: list[str]
    message: str = Field(min_length=10)


class ShapeProblem(ProblemBase):
    kind: Literal["shape"]
    parameters: dict[str, int] = Field(
        default={}, description="values of the symbols, when the answer is asked in numbers"
    )
    answer: list[str] = Field(min_length=1, description="one entry per axis: a symbol, a number, or d/h")
    notations: dict[str, str] = Field(
        default={}, description="other names students are taught for a dim of the answer, {d_k: d/h}: each is "
                                "accepted where it stands for the whole dim")
    misconceptions: list[ShapeMisconception] = []

    @model_validator(mode="after")
    def _notations_name_dims(self) -> "ShapeProblem":
        answer = {canonical_dim(d) for d in self.answer}
        for name, dim in self.notations.items():
            if canonical_dim(dim) not in answer:
                raise ValueError(f"notations.{name}: {dim!r} is not a dim of the answer")
            if name in self.parameters:
                raise ValueError(f"notations.{name}: already a parameter")
        return self


def symbols(problem: ShapeProblem) -> dict[str, Any]:
    """What a typed dim's names stand for: the parameters' numbers and the notations' dims."""
    return {**problem.notations, **problem.parameters}


def expected_shape(problem: ShapeProblem) -> tuple[str, ...]:
    return tuple(evaluate_dim(d, symbols(problem)) for d in problem.answer)


def check_shape(problem: ShapeProblem, typed: Any) -> Verdict:
    try:
        got = tuple(evaluate_dim(d, symbols(problem)) for d in parse_shape(typed))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == expected_shape(problem):
        return Verdict(True, "correct shape")
    for wrong in problem.misconceptions:
        if got == tuple(evaluate_dim(d, symbols(problem)) for d in wrong.answer):
            return Verdict(False, wrong.message, misconception=" x ".join(wrong.answer))
    return Verdict(False, not_the_shape(typed))


def shape_spellings(dims: list[str]) -> list[str]:
    """The ways a student may write a shape, for platforms that compare strings."""
    forms: list[str] = []
    for variant in (dims, [d.replace("_", "") for d in dims]):
        forms += ["(" + ", ".join(variant) + ")", "(" + ",".join(variant) + ")", " x ".join(variant),
                  "x".join(variant), " × ".join(variant), "[" + ", ".join(variant) + "]"]
    return list(dict.fromkeys(forms))


def _selfcheck_data(problem: ShapeProblem, name: str, students: list[str]) -> dict[str, Any]:
    # a shape is the same for every student: one class-wide seal (kinds/sealing.py)
    return {
        "symbols": symbols(problem),
        "digests": class_answer(name, problem.id, "x".join(expected_shape(problem))),
        "misconceptions": class_mistakes(name, problem.id, [
            (m.message, "x".join(evaluate_dim(d, symbols(problem)) for d in m.answer)) for m in problem.misconceptions]),
    }


class ShapeKind(AllOrNothingKind):
    name = "shape"
    selfcheck_judge = "dimensions"
    model = ShapeProblem

    def answer(self, problem: ShapeProblem, variant) -> object:
        return " x ".join(expected_shape(problem))

    def answer_hint(self, problem: ShapeProblem) -> str:
        return '"..."  # a shape such as "n x d_v" or (3, 4)'

    def nbgrader_checks(self, problem: ShapeProblem, variant) -> list[str]:
        return [f"_w.shape({plain_literal(tuple(expected_shape(problem)))}, {plain_literal(symbols(problem))})"]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment.name, students)

    def read(self, problem: ShapeProblem, typed: Any, variant) -> object:
        return parse_shape(typed)

    def judge(self, problem: ShapeProblem, typed: Any, variant) -> Verdict:
        return check_shape(problem, typed)

    def guessed(self, problem: ShapeProblem, variant, guess) -> Any:
        return guess.shape

    def work_lines(self, problem: ShapeProblem) -> int:
        return 3  # the shapes multiplied, written out

    def blanks(self, problem: ShapeProblem, variant) -> tuple[Blank, ...]:
        return (Blank("shape"),)

    def key(self, problem: ShapeProblem, variant) -> ProblemKey:
        symbols = "(" + ", ".join(problem.answer) + ")"
        numbers = "(" + ", ".join(expected_shape(problem)) + ")" if problem.parameters else ""
        line = KeyLine("shape", symbols if not numbers else f"{numbers}, that is {symbols}")
        mistakes = tuple(Mistake("(" + ", ".join(m.answer) + ")", m.message) for m in problem.misconceptions)
        return ProblemKey((line,), problem.solution, mistakes)

    def drill_label(self, problem: ShapeProblem) -> str:
        return "shape, e.g. (a, b) or a x b"  # an example no problem of the bank has for its answer

    def lms_question(self, problem: ShapeProblem, points: float, variant) -> Question:
        accepted = shape_spellings(list(problem.answer))
        for name, dim in problem.notations.items():  # each notation in place of the dim it names
            accepted += shape_spellings([name if canonical_dim(d) == canonical_dim(dim) else d for d in problem.answer])
        if problem.parameters:
            accepted += shape_spellings(list(expected_shape(problem)))
        return Question(problem.id, problem.title, "shortanswer", problem.prompt, points, problem.solution,
                        accepted=tuple(dict.fromkeys(accepted)))


SHAPE = ShapeKind()
