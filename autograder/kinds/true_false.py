"""`true_false`: judge a statement; when it is false, correct it.

Takes a `TrueFalseProblem`; gives the statement shown under the prompt, the
answer judged (`T`, `false`, or `{"answer": ..., "correction": ...}`), its
self-check digests, nbgrader cells, key (with the corrected statement and why),
exam blanks, drill question and a true/false quiz question.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from autograder.bank.model import ProblemBase
from autograder.kinds.base import AllOrNothingKind
from autograder.kinds.sealing import class_answer
from autograder.kinds.items import Blank, KeyLine, ProblemKey, Question, Verdict
from qkv_runtime.answers import AnswerFormatError, parse_bool


class TrueFalseProblem(ProblemBase):
    kind: Literal["true_false"]
    statement: str = Field(min_length=10)
    answer: bool
    correction: str | None = None
    reason: str = Field(min_length=10)

    @model_validator(mode="after")
    def _false_has_correction(self) -> "TrueFalseProblem":
        if not self.answer and not self.correction:
            raise ValueError("a false statement needs its correction")
        return self


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


def _selfcheck_data(problem: TrueFalseProblem, name: str, students: list[str]) -> dict[str, Any]:
    # the same for every student: one class-wide seal (kinds/sealing.py)
    return {"digests": class_answer(name, problem.id, "true" if problem.answer else "false"), "misconceptions": {}}


class TrueFalseKind(AllOrNothingKind):
    name = "true_false"
    model = TrueFalseProblem

    def question_markdown(self, problem: TrueFalseProblem, variant) -> str:
        return f"{problem.prompt}\n\n> {problem.statement}"

    def placeholder(self, problem: TrueFalseProblem) -> str:
        return '{"answer": None, "correction": ""}'

    def answer(self, problem: TrueFalseProblem, variant) -> object:
        return {"answer": problem.answer, "correction": problem.correction or ""}

    def answer_notes(self, problem: TrueFalseProblem) -> tuple[str, ...]:
        return ("# (when false, also write the corrected statement under \"correction\")",)

    def nbgrader_checks(self, problem: TrueFalseProblem, variant) -> list[str]:
        return [f"_w.truth({problem.answer!r})"]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment.name, students)

    def read(self, problem: TrueFalseProblem, typed: Any) -> object:
        return parse_bool(typed)

    def judge(self, problem: TrueFalseProblem, typed: Any) -> Verdict:
        return check_true_false(problem, typed)

    def blanks(self, problem: TrueFalseProblem, variant) -> tuple[Blank, ...]:
        return (Blank("true or false"), Blank("why, or the corrected statement", tall=True))

    def key(self, problem: TrueFalseProblem, variant) -> ProblemKey:
        lines = [KeyLine("answer", "True" if problem.answer else "False")]
        if problem.correction:
            lines.append(KeyLine("corrected statement", problem.correction))
        lines.append(KeyLine("why", problem.reason))
        return ProblemKey(tuple(lines), problem.solution, ())

    def drill_text(self, problem: TrueFalseProblem, variant) -> str:
        return f"{problem.prompt}\n\n  \"{problem.statement}\""

    def drill_label(self, problem: TrueFalseProblem) -> str:
        return "true or false"

    def lms_question(self, problem: TrueFalseProblem, points: float) -> Question:
        feedback = problem.solution + (f"\n\n**Corrected:** {problem.correction}" if problem.correction else "")
        return Question(problem.id, problem.title, "truefalse", self.question_markdown(problem, None),
                        points, feedback, truth=problem.answer)


TRUE_FALSE = TrueFalseKind()
