"""`multiple_choice`: pick one of 2 to 8 lettered choices; a wrong choice's misconception is its feedback.

Takes a `MultipleChoiceProblem`; gives the choices listed under the prompt, the
letter judged, its self-check digests (of the answer and of each wrong choice
that has a misconception), nbgrader cells, key, exam blank, drill question and
a multiple-choice quiz question with feedback per choice.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from autograder.bank.model import ProblemBase, Strict
from autograder.kinds import items
from autograder.kinds.base import AllOrNothingKind
from autograder.kinds.sealing import class_answer, class_mistakes
from autograder.kinds.items import Blank, KeyLine, Mistake, ProblemKey, Question, Verdict
from qkv_runtime.answers import AnswerFormatError, parse_choice


class Choice(Strict):
    text: str
    misconception: str | None = Field(default=None, description="for a wrong choice: the mistake it reflects")


class MultipleChoiceProblem(ProblemBase):
    kind: Literal["multiple_choice"]
    choices: list[Choice] = Field(min_length=2, max_length=8)
    answer: Annotated[str, Field(pattern=r"^[A-H]$")]

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> "MultipleChoiceProblem":
        if ord(self.answer) - ord("A") >= len(self.choices):
            raise ValueError(f"answer {self.answer} is not one of the {len(self.choices)} choices")
        return self


def check_choice(problem: MultipleChoiceProblem, typed: Any) -> Verdict:
    try:
        got = parse_choice(typed, len(problem.choices))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == problem.answer:
        return Verdict(True, "correct")
    chosen = problem.choices[ord(got) - ord("A")]
    return Verdict(False, chosen.misconception or f"{got} is not the answer", misconception=chosen.misconception)


def _selfcheck_data(problem: MultipleChoiceProblem, name: str, students: list[str]) -> dict[str, Any]:
    # the same for every student: one class-wide seal (kinds/sealing.py)
    return {
        "choices": len(problem.choices),
        "digests": class_answer(name, problem.id, problem.answer),
        "misconceptions": class_mistakes(name, problem.id, [(c.misconception, chr(65 + i))
                                                            for i, c in enumerate(problem.choices) if c.misconception]),
    }


class MultipleChoiceKind(AllOrNothingKind):
    name = "multiple_choice"
    model = MultipleChoiceProblem

    def question_markdown(self, problem: MultipleChoiceProblem, variant) -> str:
        choices = "\n".join(f"- **{chr(65 + i)}.** {c.text}" for i, c in enumerate(problem.choices))
        return f"{problem.prompt}\n\n{choices}"

    def answer(self, problem: MultipleChoiceProblem, variant) -> object:
        return problem.answer

    def answer_hint(self, problem: MultipleChoiceProblem) -> str:
        letters = ", ".join(chr(65 + i) for i in range(len(problem.choices)))
        return f'"..."  # one letter: {letters}'

    def nbgrader_checks(self, problem: MultipleChoiceProblem, variant) -> list[str]:
        return [f"_w.choice({problem.answer!r}, {len(problem.choices)})"]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment.name, students)

    def read(self, problem: MultipleChoiceProblem, typed: Any) -> object:
        return parse_choice(typed, len(problem.choices))

    def judge(self, problem: MultipleChoiceProblem, typed: Any) -> Verdict:
        return check_choice(problem, typed)

    def blanks(self, problem: MultipleChoiceProblem, variant) -> tuple[Blank, ...]:
        return (Blank("your choice (one letter)"),)

    def key(self, problem: MultipleChoiceProblem, variant) -> ProblemKey:
        right = problem.choices[ord(problem.answer) - ord("A")]
        mistakes = tuple(Mistake(chr(65 + i), c.misconception) for i, c in enumerate(problem.choices)
                         if c.misconception and chr(65 + i) != problem.answer)
        return ProblemKey((KeyLine("answer", f"{problem.answer}: {right.text}"),), problem.solution, mistakes)

    def drill_text(self, problem: MultipleChoiceProblem, variant) -> str:
        return problem.prompt + "\n\n" + "\n".join(f"  {chr(65 + i)}. {c.text}" for i, c in enumerate(problem.choices))

    def drill_label(self, problem: MultipleChoiceProblem) -> str:
        letters = "ABCDEFGH"[:len(problem.choices)]
        return f"your choice ({'/'.join(letters)})"

    def lms_question(self, problem: MultipleChoiceProblem, points: float) -> Question:
        choices = tuple(items.Choice(c.text, chr(65 + i) == problem.answer, c.misconception or "")
                        for i, c in enumerate(problem.choices))
        return Question(problem.id, problem.title, "multichoice", problem.prompt, points, problem.solution,
                        choices=choices)


MULTIPLE_CHOICE = MultipleChoiceKind()
