"""`multiple_choice`: pick one of 2 to 8 choices, named by id and lettered in each student's own order.

Takes a `MultipleChoiceProblem`; gives the choices lettered under the prompt in
the order of the student's variant (kinds/choices.py), the letter judged by
that order, its self-check data (each student's order, the digest of the right
id and of each wrong choice that has a misconception), nbgrader cells, key,
exam blank, drill question and a multiple-choice quiz question with feedback
per choice.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from autograder.kinds.model import ProblemBase
from autograder.kinds import choices as ch
from autograder.kinds.base import CLASS, AllOrNothingKind, Options
from autograder.kinds.choices import Choice
from autograder.kinds.items import Blank, KeyLine, Mistake, ProblemKey, Question, Verdict
from autograder.kinds.sealing import class_answer, class_mistakes
from qkv_runtime.judge import letters

__all__ = ["Choice", "MultipleChoiceProblem", "MULTIPLE_CHOICE", "check_choice"]


class MultipleChoiceProblem(ProblemBase):
    kind: Literal["multiple_choice"]
    choices: list[Choice] = Field(min_length=2, max_length=8)
    answer: ch.ChoiceId = Field(description="the id of the right choice")

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.choices]

    @property
    def right(self) -> Choice:
        return next(c for c in self.choices if c.id == self.answer)


def check_choice(problem: MultipleChoiceProblem, typed: Any, variant) -> Verdict:
    return ch.judge_choice(problem.choices, problem.answer, ch.order_in(variant, problem.id, problem.ids), typed)


def _selfcheck_data(problem: MultipleChoiceProblem, assignment, students: list[str]) -> dict[str, Any]:
    # the ids are sealed class-wide (a shuffle changes no digest); each student's order maps their letter to an id
    name, seed, mode = assignment.name, assignment.manifest.seed, assignment.manifest.variants
    return {
        "choices": len(problem.choices),
        "orders": {s: ch.order_in(MULTIPLE_CHOICE.variant(problem, seed, mode, None if s == CLASS else s),
                                  problem.id, problem.ids) for s in students},
        "digests": class_answer(name, problem.id, problem.answer),
        "misconceptions": class_mistakes(name, problem.id, [(c.misconception, c.id)
                                                            for c in problem.choices if c.misconception]),
    }


class MultipleChoiceKind(AllOrNothingKind):
    name = "multiple_choice"
    selfcheck_judge = "choice"
    model = MultipleChoiceProblem
    parameterised = True  # the order of the choices
    per_student_what = "letters (the order of the choices)"

    def check(self, problem: MultipleChoiceProblem) -> list[str]:
        return ch.id_findings(problem.choices, problem.answer, "choices") + super().check(problem)

    def variant(self, problem: MultipleChoiceProblem, seed: int, mode: str, student: str | None):
        return ch.order_variant(problem.id, problem.ids, seed, mode, student)

    def question_markdown(self, problem: MultipleChoiceProblem, variant) -> str:
        order = ch.order_in(variant, problem.id, problem.ids)
        return f"{problem.prompt}\n\n{ch.markdown_list(problem.choices, order)}"

    def release_prompt(self, problem: MultipleChoiceProblem, manifest) -> str:
        if manifest.variants != "per_student":
            return super().release_prompt(problem, manifest)
        # the choices can be read by everyone; only their letters are each student's own
        order = ch.order_in(self.variant(problem, manifest.seed, "same", None), problem.id, problem.ids)
        unlettered = ch.markdown_list([ch.by_id(problem.choices)[i] for i in order], None)
        return f"{problem.prompt}\n\n{unlettered}\n\n{self.per_student_note(problem)}"

    def answer(self, problem: MultipleChoiceProblem, variant) -> object:
        return ch.letter_of(ch.order_in(variant, problem.id, problem.ids), problem.answer)

    def answer_hint(self, problem: MultipleChoiceProblem) -> str:
        return f'"..."  # one letter: {", ".join(letters(len(problem.choices)))}'

    def nbgrader_checks(self, problem: MultipleChoiceProblem, variant) -> list[str]:
        return [f"_w.choice({self.answer(problem, variant)!r}, {len(problem.choices)})"]

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment, students)

    def read(self, problem: MultipleChoiceProblem, typed: Any, variant) -> object:
        return ch.read_choice(typed, ch.order_in(variant, problem.id, problem.ids))

    def choice_sets(self, problem: MultipleChoiceProblem) -> list[tuple[str, dict[str, str], str]]:
        return [("choices", {c.id: c.text for c in problem.choices}, problem.answer)]

    def guessed(self, problem: MultipleChoiceProblem, variant, guess) -> Any:
        return guess.letter(variant, problem.id, {c.id: c.text for c in problem.choices})

    def texts_shown(self, problem: MultipleChoiceProblem) -> list[tuple[str, str]]:
        return super().texts_shown(problem) + [(f"choices[{i}].text", c.text) for i, c in enumerate(problem.choices)]

    def options(self, problem: MultipleChoiceProblem) -> Options:
        # by id: each student's letters name the choices in their own order
        return Options(tuple(problem.ids), problem.answer, tuple(c.text for c in problem.choices))

    def chosen(self, problem: MultipleChoiceProblem, answer: Any, variant) -> str:
        return str(self.read(problem, answer, variant))

    def judge(self, problem: MultipleChoiceProblem, typed: Any, variant) -> Verdict:
        return check_choice(problem, typed, variant)

    def blanks(self, problem: MultipleChoiceProblem, variant) -> tuple[Blank, ...]:
        return (Blank("your choice (one letter)"),)

    def key(self, problem: MultipleChoiceProblem, variant) -> ProblemKey:
        order = ch.order_in(variant, problem.id, problem.ids)
        mistakes = tuple(Mistake(ch.letter_of(order, c.id), c.misconception) for c in problem.choices
                         if c.misconception and c.id != problem.answer)
        line = KeyLine("answer", f"{ch.letter_of(order, problem.answer)}: {problem.right.text}")
        return ProblemKey((line,), problem.solution, mistakes)

    def drill_text(self, problem: MultipleChoiceProblem, variant) -> str:
        return problem.prompt + "\n\n" + ch.terminal_list(problem.choices, ch.order_in(variant, problem.id, problem.ids))

    def drill_label(self, problem: MultipleChoiceProblem) -> str:
        return f"your choice ({ch.letters_hint(len(problem.choices))})"

    def lms_question(self, problem: MultipleChoiceProblem, points: float, variant) -> Question:
        order = ch.order_in(variant, problem.id, problem.ids)
        return Question(problem.id, problem.title, "multichoice", problem.prompt, points, problem.solution,
                        choices=ch.quiz_choices(problem.choices, problem.answer, order))


MULTIPLE_CHOICE = MultipleChoiceKind()
