"""`shape`: give the shape of an array, in symbols (`n x d_v`) or, with `parameters`, in numbers.

Takes a `ShapeProblem`; gives the shape judged axis by axis after evaluating
symbols and expressions (`d/h`), the misconception a known wrong shape reflects,
its self-check digests, nbgrader cells, key, exam blank, drill question and a
short-answer quiz question that accepts the usual spellings. With `draws` the
numbers of some symbols are each student's own (issue 47): drawn as a numeric
problem's parameters are, from the seed, the student and the problem, into the
prompt and solution, which are then templates of the symbols.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from autograder.kinds.model import ParamSpec, ProblemBase, Strict
from autograder.kinds.base import CLASS, AllOrNothingKind
from autograder.kinds.sealing import Seal, class_answer, class_mistakes
from autograder.kinds.cells import plain_literal
from autograder.kinds.numeric.stream import IntegerStream
from autograder.kinds.items import Blank, KeyLine, Mistake, ProblemKey, Question, Variant, Verdict
from qkv_runtime import sealed
from qkv_runtime.answers import AnswerFormatError, canonical_dim, evaluate_dim, not_the_shape, parse_shape

MAX_DRAWS = 200  # draws of the symbols until every dim of the answer and its mistakes is a whole number


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
    draws: dict[str, ParamSpec] = Field(
        default={}, description="symbols whose numbers each student draws ({choice: [...]} or {ints: [], range}); "
                                "the prompt and the solution are then Jinja2 templates of every symbol")
    misconceptions: list[ShapeMisconception] = []

    @model_validator(mode="after")
    def _draws_are_symbols(self) -> "ShapeProblem":
        for name in self.draws:
            if name in self.parameters or name in self.notations:
                raise ValueError(f"draws.{name}: already a parameter or a notation")
        return self

    @model_validator(mode="after")
    def _notations_name_dims(self) -> "ShapeProblem":
        answer = {canonical_dim(d) for d in self.answer}
        for name, dim in self.notations.items():
            if canonical_dim(dim) not in answer:
                raise ValueError(f"notations.{name}: {dim!r} is not a dim of the answer")
            if name in self.parameters:
                raise ValueError(f"notations.{name}: already a parameter")
        return self


def _whole(dims: list[str], values: dict[str, Any]) -> bool:
    try:
        return all(evaluate_dim(d, values).isdigit() and int(evaluate_dim(d, values)) > 0 for d in dims)
    except AnswerFormatError:
        return False


def draw_dims(problem: ShapeProblem, seed: int, student: str | None) -> Variant:
    """The drawn symbols' numbers of one student (None: the class's), a variant whose params they are; only
    draws under which the answer is a shape of whole numbers and each listed mistake another shape are kept."""
    from autograder.kinds.numeric.variants import draw_parameter, variant_seed  # the one draw of numbers

    stream = IntegerStream(variant_seed(seed, student, problem.id))
    for _ in range(MAX_DRAWS):
        drawn = {name: draw_parameter(spec, stream) for name, spec in problem.draws.items()}
        values = {**problem.parameters, **drawn}
        if not _whole(problem.answer, values):
            continue
        right = tuple(evaluate_dim(d, values) for d in problem.answer)
        if all(tuple(evaluate_dim(d, values) for d in m.answer) != right for m in problem.misconceptions):
            return Variant(problem.id, drawn, {}, f"seed:{seed}/{student or ''}")
    raise ValueError(f"{problem.id}: no draw of {', '.join(problem.draws)} in {MAX_DRAWS} makes the answer whole and every mistake another shape")


def symbols(problem: ShapeProblem, variant: Variant | None = None) -> dict[str, Any]:
    """What a typed dim's names stand for: the parameters' numbers (the student's own drawn ones too; without a
    variant, the class's draw of seed 0) and the notations' dims."""
    drawn: dict[str, Any] = {}
    if problem.draws:
        drawn = dict((variant if variant is not None else draw_dims(problem, 0, None)).params)
    return {**problem.notations, **problem.parameters, **drawn}


def expected_shape(problem: ShapeProblem, variant: Variant | None = None) -> tuple[str, ...]:
    values = symbols(problem, variant)
    return tuple(evaluate_dim(d, values) for d in problem.answer)


def check_shape(problem: ShapeProblem, typed: Any, variant: Variant | None = None) -> Verdict:
    values = symbols(problem, variant)
    try:
        got = tuple(evaluate_dim(d, values) for d in parse_shape(typed))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == expected_shape(problem, variant):
        return Verdict(True, "correct shape")
    for wrong in problem.misconceptions:
        if got == tuple(evaluate_dim(d, values) for d in wrong.answer):
            return Verdict(False, wrong.message, misconception=" x ".join(wrong.answer))
    return Verdict(False, not_the_shape(typed))


def _rendered(problem: ShapeProblem, text: str, variant: Variant | None) -> str:
    if not problem.draws:
        return text
    from autograder.kinds.numeric.render import render_text  # a build dependency (jinja2), as for numeric text

    return render_text(text, {name: value for name, value in symbols(problem, variant).items()
                              if not isinstance(value, str)})


def shape_spellings(dims: list[str]) -> list[str]:
    """The ways a student may write a shape, for platforms that compare strings."""
    forms: list[str] = []
    for variant in (dims, [d.replace("_", "") for d in dims]):
        forms += ["(" + ", ".join(variant) + ")", "(" + ",".join(variant) + ")", " x ".join(variant),
                  "x".join(variant), " × ".join(variant), "[" + ", ".join(variant) + "]"]
    return list(dict.fromkeys(forms))


def _selfcheck_data(problem: ShapeProblem, name: str, students: list[str], draws) -> dict[str, Any]:
    if not problem.draws:  # a shape the same for every student: one class-wide seal (kinds/sealing.py)
        return {
            "symbols": symbols(problem),
            "digests": class_answer(name, problem.id, "x".join(expected_shape(problem))),
            "misconceptions": class_mistakes(name, problem.id, [
                (m.message, "x".join(evaluate_dim(d, symbols(problem)) for d in m.answer))
                for m in problem.misconceptions]),
        }
    # each student's own numbers: their own seals, under a salt that names them, and their own symbols
    data: dict[str, Any] = {"symbols": symbols(problem, SHAPE.variant(problem, draws.seed, draws.variants, None)),
                            "symbols_of": {}, "digests": {}, "misconceptions": {}}
    for student in students:
        variant = SHAPE.variant(problem, draws.seed, draws.variants, None if student == CLASS else student)
        values = symbols(problem, variant)
        salt = sealed.digest_salt(name, student, problem.id, "answer")
        seal = lambda dims, label: Seal(sealed.answer_password("x".join(evaluate_dim(d, values) for d in dims)),  # noqa: E731
                                        salt, label)
        data["symbols_of"][student] = values
        data["digests"][student] = {"answer": seal(problem.answer, "right")}
        data["misconceptions"][student] = [{"message": m.message, "digests": {"answer": seal(m.answer, "mistake")}}
                                           for m in problem.misconceptions]
    return data


class ShapeKind(AllOrNothingKind):
    name = "shape"
    selfcheck_judge = "dimensions"
    model = ShapeProblem

    def variant(self, problem: ShapeProblem, seed: int, mode: str, student: str | None) -> Variant | None:
        if not problem.draws:
            return None
        return draw_dims(problem, seed, student if mode == "per_student" else None)

    def per_student(self, problem: ShapeProblem) -> bool:
        return bool(problem.draws)

    def check(self, problem: ShapeProblem) -> list[str]:
        if problem.draws:
            try:
                draw_dims(problem, 0, None)
            except ValueError as err:
                return [f"draws: {err}"]
        return super().check(problem)

    def prompt_text(self, problem: ShapeProblem, variant=None) -> str:
        return _rendered(problem, problem.prompt, variant)

    def solution_text(self, problem: ShapeProblem, variant=None) -> str:
        return _rendered(problem, problem.solution, variant)

    def answer(self, problem: ShapeProblem, variant) -> object:
        return " x ".join(expected_shape(problem, variant))

    def answer_hint(self, problem: ShapeProblem) -> str:
        return '"..."  # a shape such as "n x d_v" or (3, 4)'

    def nbgrader_checks(self, problem: ShapeProblem, variant) -> list[str]:
        return [f"_w.shape({plain_literal(tuple(expected_shape(problem, variant)))}, "
                f"{plain_literal(symbols(problem, variant))})"]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment.name, students, assignment.manifest)

    def read(self, problem: ShapeProblem, typed: Any, variant) -> object:
        return parse_shape(typed)

    def judge(self, problem: ShapeProblem, typed: Any, variant) -> Verdict:
        return check_shape(problem, typed, variant)

    def guessed(self, problem: ShapeProblem, variant, guess) -> Any:
        return guess.shape

    def work_lines(self, problem: ShapeProblem) -> int:
        return 3  # the shapes multiplied, written out

    def blanks(self, problem: ShapeProblem, variant) -> tuple[Blank, ...]:
        return (Blank("shape"),)

    def key(self, problem: ShapeProblem, variant) -> ProblemKey:
        symbols = "(" + ", ".join(problem.answer) + ")"
        numbers = "(" + ", ".join(expected_shape(problem, variant)) + ")" if problem.parameters or problem.draws else ""
        line = KeyLine("shape", symbols if not numbers else f"{numbers}, that is {symbols}")
        mistakes = tuple(Mistake("(" + ", ".join(m.answer) + ")", m.message) for m in problem.misconceptions)
        return ProblemKey((line,), self.solution_text(problem, variant), mistakes)

    def drill_label(self, problem: ShapeProblem) -> str:
        return "shape, e.g. (a, b) or a x b"  # an example no problem of the bank has for its answer

    def lms_question(self, problem: ShapeProblem, points: float, variant) -> Question:
        accepted = shape_spellings(list(problem.answer))
        for name, dim in problem.notations.items():  # each notation in place of the dim it names
            accepted += shape_spellings([name if canonical_dim(d) == canonical_dim(dim) else d for d in problem.answer])
        if problem.parameters or problem.draws:
            accepted += shape_spellings(list(expected_shape(problem, variant)))
        return Question(problem.id, problem.title, "shortanswer", self.prompt_text(problem, variant), points,
                        self.solution_text(problem, variant), accepted=tuple(dict.fromkeys(accepted)))


SHAPE = ShapeKind()
