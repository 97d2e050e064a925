"""`true_false`: judge a statement, then answer a follow-up about its correction or its reason.

Takes a `TrueFalseProblem`; gives the statement and its follow-up shown under the
kind's one prompt (`NEUTRAL_PROMPT`: a prompt of a file's own could say which verdict
is expected; checks.py refuses one, and whatever a student reads that
changes with the verdict), the answer judged in two halves (the verdict, and the follow-up: a choice
among candidate corrections or reasons, or a number or shape the corrected
statement states), its self-check data, nbgrader cells, key (with the corrected
statement and why), exam blanks, drill questions and one quiz question holding
both halves. A free-text `correction` is kept with the answers for the instructor
to read and never earns points by itself: it cannot be judged without a person.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from autograder.kinds.model import DottedRef, ProblemBase, Strict
from autograder.kinds.resolve import resolve
from autograder.kinds import choices as ch
from autograder.kinds.base import CLASS, Options, WrittenKind
from autograder.kinds.cells import plain_literal
from autograder.kinds.choices import Choice
from autograder.kinds.items import (
    Blank, DrillQuestion, KeyLine, Marked, Mistake, NumericBlank, ProblemKey, Question, QuestionGroup, Verdict,
)
from autograder.kinds.numeric.model import AnswerPart, AnswerTolerance
from autograder.kinds.numeric.parts import check_part, part_answer, read_numbers
from autograder.kinds.numeric.seals import numeric_part_plan
from autograder.kinds.sealing import answer_seal, class_answer, class_mistakes
from autograder.kinds.shape import shape_spellings
from autograder.kinds.true_false.checks import NEUTRAL_PROMPT, verdict_findings
from qkv_runtime import judge, sealed
from qkv_runtime.answers import AnswerFormatError, evaluate_dim, not_the_shape, parse_bool, parse_shape

VERDICT_SHARE = 0.5  # of the points, when there is a follow-up: HW03 gives its marks for the reason as well


class FollowUp(Strict):
    """The graded second half: one of a choice among corrections or reasons, a number, or a shape."""

    question: str = Field(min_length=10)
    choices: list[Choice] = Field(default=[], max_length=8)
    answer: ch.ChoiceId | None = Field(default=None, description="the id of the right choice")
    number: float | None = None
    tolerance: AnswerTolerance = AnswerTolerance()
    decimals: int | None = Field(default=None, ge=0, le=8)
    compute: DottedRef | None = Field(default=None, description="function() -> the number, checked by validate")
    shape: list[str] = []
    parameters: dict[str, int] = {}

    @model_validator(mode="after")
    def _one_form(self) -> "FollowUp":
        forms = [bool(self.choices), self.number is not None, bool(self.shape)]
        if sum(forms) != 1:
            raise ValueError("a follow-up has exactly one of choices, number or shape")
        if self.choices and (self.answer is None or len(self.choices) < 2):
            raise ValueError("a follow-up with choices needs at least 2 of them and the id of the right one")
        return self

    @property
    def form(self) -> str:
        return "choice" if self.choices else "number" if self.number is not None else "shape"

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.choices]

    @property
    def right_id(self) -> str:
        """The id of the right choice, which a follow-up of choices has (`_one_form`)."""
        if self.answer is None:
            raise ValueError(f"a follow-up of form {self.form} has no right choice")
        return self.answer

    @property
    def value(self) -> float:
        """The right number, which a follow-up of form number has (`_one_form`)."""
        if self.number is None:
            raise ValueError(f"a follow-up of form {self.form} has no number")
        return self.number

    def part(self) -> AnswerPart:
        return AnswerPart(name="follow_up", label="follow-up", decimals=self.decimals, tolerance=self.tolerance)

    def expected_shape(self) -> tuple[str, ...]:
        return tuple(evaluate_dim(d, self.parameters) for d in self.shape)


class TrueFalseProblem(ProblemBase):
    kind: Literal["true_false"]
    prompt: str = Field(default=NEUTRAL_PROMPT, min_length=10, description="the kind's own; validate refuses another")
    statement: str = Field(min_length=10)
    answer: bool
    correction: str | None = None
    reason: str = Field(min_length=10)
    follow_up: FollowUp | None = None

    @model_validator(mode="after")
    def _false_has_correction(self) -> "TrueFalseProblem":
        if not self.answer and not self.correction:
            raise ValueError("a false statement needs its correction")
        if not self.answer and self.follow_up is None:
            raise ValueError("a false statement needs a follow-up that grades its correction")
        return self

    def follow(self) -> FollowUp:
        """Its follow-up, where the caller knows it has one."""
        if self.follow_up is None:
            raise ValueError(f"{self.id} has no follow-up")
        return self.follow_up


def _typed(answer: Any, key: str) -> Any:
    """One half of an answer: {"answer": ..., "follow_up": ...}; a bare value is the verdict alone."""
    return judge.part_of(answer, key, key == "answer")


def judge_verdict(problem: TrueFalseProblem, typed: Any) -> Verdict:
    try:
        got = parse_bool(_typed(typed, "answer"))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == problem.answer:
        return Verdict(True, "correct")
    return Verdict(False, "the statement is " + ("true" if problem.answer else "false"))


def judge_follow_up(problem: TrueFalseProblem, typed: Any, variant) -> Verdict:
    follow = problem.follow()
    if follow.form == "choice":
        return ch.judge_choice(follow.choices, follow.right_id, ch.order_in(variant, problem.id, follow.ids), typed)
    if follow.form == "number":
        part = follow.part()
        verdict = check_part(part, np.asarray(follow.number, dtype=float), typed)
        return Verdict(verdict.correct, verdict.message.removeprefix(f"{part.label}: "))
    try:
        got = tuple(evaluate_dim(d, follow.parameters) for d in parse_shape(typed))
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == follow.expected_shape():
        return Verdict(True, "correct shape")
    return Verdict(False, not_the_shape(typed))


def check_true_false(problem: TrueFalseProblem, typed: Any, variant=None) -> Marked:
    """Both halves: the verdict and (when there is one) the follow-up, each worth half."""
    verdict = judge_verdict(problem, typed)
    if problem.follow_up is None:
        return Marked(1.0 if verdict.correct else 0.0, verdict.message)
    follow = _typed(typed, "follow_up")
    second = (Verdict(False, "not answered") if judge.blank(follow)
              else judge_follow_up(problem, follow, variant))
    fraction = VERDICT_SHARE * verdict.correct + (1 - VERDICT_SHARE) * second.correct
    message = f"true or false: {verdict.message}; follow-up: {second.message}"
    if isinstance(_typed(typed, "correction"), str) and _typed(typed, "correction").strip():
        message += "; your written correction is kept for your instructor to read (it earns no points by itself)"
    return Marked(fraction, message, second.misconception)


def _number_data(problem: TrueFalseProblem, name: str) -> dict[str, Any]:
    follow = problem.follow()
    part = follow.part()
    salt = lambda suffix: sealed.digest_salt(name, CLASS, problem.id, "follow_up" + suffix)  # noqa: E731
    entry, _ = numeric_part_plan(salt, np.asarray(follow.number, dtype=float), part, [])
    return {"part": {"name": part.name, "label": part.label, "shape": [], "tolerance": part.tolerance.model_dump()},
            "digests": {CLASS: entry}}


def _selfcheck_data(problem: TrueFalseProblem, assignment, students: list[str]) -> dict[str, Any]:
    # the verdict and the follow-up are the same for everyone (one class-wide seal each); only the order
    # of follow-up choices is a student's own
    name = assignment.name
    data: dict[str, Any] = {"digests": class_answer(name, problem.id, "true" if problem.answer else "false"),
                            "misconceptions": {}}
    follow = problem.follow_up
    if follow is None:
        return data
    if follow.form == "choice":
        seed, mode = assignment.manifest.seed, assignment.manifest.variants
        data["follow_up"] = {
            "form": "choice", "choices": len(follow.choices),
            "orders": {s: ch.order_in(TRUE_FALSE.variant(problem, seed, mode, None if s == CLASS else s),
                                      problem.id, follow.ids) for s in students},
            "digests": {CLASS: {"answer": answer_seal(name, problem.id + "/follow_up", follow.right_id, "right")}},
            "misconceptions": class_mistakes(name, problem.id + "/follow_up",
                                             [(c.misconception, c.id) for c in follow.choices if c.misconception]),
        }
    elif follow.form == "number":
        data["follow_up"] = {"form": "number", **_number_data(problem, name)}
    else:
        data["follow_up"] = {"form": "shape", "symbols": follow.parameters,
                             "digests": {CLASS: {"answer": answer_seal(name, problem.id + "/follow_up",
                                                                       "x".join(follow.expected_shape()), "right")}}}
    return data


def follow_up_answer(problem: TrueFalseProblem, variant) -> object:
    follow = problem.follow()
    if follow.form == "choice":
        return ch.letter_of(ch.order_in(variant, problem.id, follow.ids), follow.right_id)
    if follow.form == "number":
        return float(follow.value)
    return " x ".join(follow.shape)


def follow_up_markdown(problem: TrueFalseProblem, variant, lettered: bool = True) -> str:
    """The follow-up under the statement: its choices lettered in the variant's order, or (not `lettered`)
    as plain bullets, for a release whose letters are each student's own."""
    follow = problem.follow_up
    if follow is None:
        return ""
    text = f"**Follow-up** (half the points): {follow.question}"
    if follow.form == "choice":
        order = ch.order_in(variant, problem.id, follow.ids)
        named = ch.by_id(follow.choices)
        text += "\n\n" + (ch.markdown_list(follow.choices, order) if lettered
                           else ch.markdown_list([named[i] for i in order], None))
    return text


def follow_up_findings(problem: TrueFalseProblem) -> list[str]:
    follow = problem.follow_up
    if follow is None:
        return []
    out: list[str] = []
    if follow.form == "choice":
        out += ch.id_findings(follow.choices, follow.right_id, "follow_up.choices")
    if follow.compute is not None:
        try:
            value = float(resolve(follow.compute)())
        except Exception as err:  # noqa: BLE001 - the bank's own function failing is the bank's error
            return out + [f"follow_up.compute: failed: {type(err).__name__}: {err}"]
        if not judge.close(float(follow.value), value, follow.tolerance.abs, follow.tolerance.rel):
            out.append(f"follow_up.number: {follow.compute} gives {value:g} but the file says {follow.number:g}")
    if follow.form == "shape":
        try:
            follow.expected_shape()
        except AnswerFormatError as err:
            out.append(f"follow_up.shape: {err}")
    return out


class TrueFalseKind(WrittenKind):
    name = "true_false"
    selfcheck_judge = "verdict"
    model = TrueFalseProblem
    parameterised = True  # the order of follow-up choices, when there are choices
    per_student_what = "letters (the order of the follow-up's choices)"
    written_correction = True

    def refs(self, problem: TrueFalseProblem) -> list[tuple[str, str]]:
        return [("follow_up.compute", problem.follow_up.compute)] if problem.follow_up and problem.follow_up.compute else []

    def check(self, problem: TrueFalseProblem) -> list[str]:
        return follow_up_findings(problem) + verdict_findings(self, problem) + super().check(problem)

    def prompt_text(self, problem: TrueFalseProblem, variant=None) -> str:
        return NEUTRAL_PROMPT  # whatever the file says: validate names a prompt of its own, nobody reads it

    def per_student(self, problem: TrueFalseProblem) -> bool:
        return problem.follow_up is not None and problem.follow_up.form == "choice"

    def truth(self, problem: TrueFalseProblem) -> bool:
        return problem.answer

    def choice_sets(self, problem: TrueFalseProblem) -> list[tuple[str, dict[str, str], str]]:
        follow = problem.follow_up
        if follow is None or not follow.choices:
            return []
        return [("follow_up.choices", {c.id: c.text for c in follow.choices}, follow.right_id)]

    def numbers_asked(self, problem: TrueFalseProblem) -> list[float]:
        follow = problem.follow_up
        return [float(follow.number)] if follow is not None and follow.number is not None else []

    def guessed(self, problem: TrueFalseProblem, variant, guess) -> Any:
        typed: dict[str, Any] = {}
        verdict = guess.says(problem)
        if verdict is not None:
            typed["answer"] = "true" if verdict else "false"
        follow = problem.follow_up
        if follow is not None:
            typed["follow_up"] = {"choice": lambda: guess.letter(variant, problem.id,
                                                                 {c.id: c.text for c in follow.choices}),
                                  "number": lambda: guess.number, "shape": lambda: guess.shape}[follow.form]()
        return typed or None

    def texts_shown(self, problem: TrueFalseProblem) -> list[tuple[str, str]]:
        shown = [("prompt", self.prompt_text(problem)), ("statement", problem.statement)]
        if problem.follow_up is not None:
            shown.append(("follow_up.question", problem.follow_up.question))
            shown += [(f"follow_up.choices[{i}].text", c.text) for i, c in enumerate(problem.follow_up.choices)]
        return shown

    def options(self, problem: TrueFalseProblem) -> Options:
        return Options(("true", "false"), "true" if problem.answer else "false", ("true", "false"))

    def chosen(self, problem: TrueFalseProblem, answer: Any, variant) -> str:
        return "true" if parse_bool(_typed(answer, "answer")) else "false"

    def variant(self, problem: TrueFalseProblem, seed: int, mode: str, student: str | None):
        if not self.per_student(problem):
            return None
        return ch.order_variant(problem.id, problem.follow().ids, seed, mode, student)

    def question_markdown(self, problem: TrueFalseProblem, variant) -> str:
        follow = follow_up_markdown(problem, variant)
        return f"{self.prompt_text(problem)}\n\n> {problem.statement}" + (f"\n\n{follow}" if follow else "")

    def release_prompt(self, problem: TrueFalseProblem, manifest) -> str:
        if manifest.variants != "per_student" or not self.per_student(problem):
            return super().release_prompt(problem, manifest)
        # everyone may read the choices; only their letters are each student's own
        shown = follow_up_markdown(problem, self.variant(problem, manifest.seed, "same", None), lettered=False)
        return f"{self.prompt_text(problem)}\n\n> {problem.statement}\n\n{shown}\n\n{self.per_student_note(problem)}"

    def placeholder(self, problem: TrueFalseProblem) -> str:
        if problem.follow_up is None:
            return '{"answer": None, "correction": ""}'
        return '{"answer": None, "follow_up": None, "correction": ""}'

    def answer(self, problem: TrueFalseProblem, variant) -> object:
        right: dict[str, Any] = {"answer": problem.answer}
        if problem.follow_up is not None:
            right["follow_up"] = follow_up_answer(problem, variant)
        return {**right, "correction": problem.correction or ""}

    def answer_notes(self, problem: TrueFalseProblem) -> tuple[str, ...]:
        notes: tuple[str, ...] = ('# (when false, also write the corrected statement under "correction": your instructor reads it)',)
        if problem.follow_up is not None:
            form = {"choice": "one letter", "number": "a number", "shape": 'a shape such as "n x d"'}
            notes += (f'# ("follow_up": the follow-up question\'s answer, {form[problem.follow_up.form]})',)
        return notes

    def nbgrader_checks(self, problem: TrueFalseProblem, variant) -> list[str]:
        checks = [f"_w.truth({problem.answer!r})"]
        follow = problem.follow_up
        if follow is None:
            return checks
        if follow.form == "choice":
            checks.append(f"_w.choice({follow_up_answer(problem, variant)!r}, {len(follow.choices)}, key='follow_up')")
        elif follow.form == "number":
            checks.append(f"_w.number('follow_up', {float(follow.value)!r}, {float(follow.tolerance.abs)!r}, "
                          f"{float(follow.tolerance.rel)!r})")
        else:
            checks.append(f"_w.shape({plain_literal(follow.expected_shape())}, {plain_literal(dict(follow.parameters))}, "
                          "key='follow_up')")
        return checks

    def selfcheck_data(self, assigned, assignment, bundle, students: list[str]) -> dict[str, Any]:
        return _selfcheck_data(assigned.problem, assignment, students)

    def grade(self, problem: TrueFalseProblem, answer: Any, variant) -> Marked:
        return check_true_false(problem, answer, variant)

    # ------------------------------------------------------------ exam

    def blanks(self, problem: TrueFalseProblem, variant) -> tuple[Blank, ...]:
        follow = problem.follow_up
        if follow is None:
            return (Blank("true or false"), Blank("why, or the corrected statement", tall=True))
        label = {"choice": "follow-up: your choice (one letter)", "number": "follow-up: the number",
                 "shape": "follow-up: the shape"}[follow.form]
        return (Blank("true or false"), Blank(label), Blank("why, or the corrected statement", tall=True))

    def key(self, problem: TrueFalseProblem, variant) -> ProblemKey:
        lines = [KeyLine("answer", "True" if problem.answer else "False")]
        mistakes: tuple[Mistake, ...] = ()
        follow = problem.follow_up
        if follow is not None:
            if follow.form == "choice":
                order = ch.order_in(variant, problem.id, follow.ids)
                right = ch.by_id(follow.choices)[follow.right_id]
                lines.append(KeyLine("follow-up", f"{ch.letter_of(order, follow.right_id)}: {right.text}"))
                mistakes = tuple(Mistake(f"follow-up {ch.letter_of(order, c.id)}", c.misconception)
                                 for c in follow.choices if c.misconception)
            elif follow.form == "number":
                value = np.asarray(follow.number, dtype=float)
                lines.append(KeyLine("follow-up", part_answer(follow.part(), value)))
            else:
                lines.append(KeyLine("follow-up", "(" + ", ".join(follow.shape) + ")"))
        if problem.correction:
            lines.append(KeyLine("corrected statement", problem.correction))
        lines.append(KeyLine("why", problem.reason))
        return ProblemKey(tuple(lines), problem.solution, mistakes)

    def drill_text(self, problem: TrueFalseProblem, variant) -> str:
        text = f"{self.prompt_text(problem)}\n\n  \"{problem.statement}\""
        follow = problem.follow_up
        if follow is not None:
            text += f"\n\nFollow-up: {follow.question}"
            if follow.form == "choice":
                text += "\n" + ch.terminal_list(follow.choices, ch.order_in(variant, problem.id, follow.ids))
        return text

    def drill_questions(self, problem: TrueFalseProblem, variant) -> list[DrillQuestion]:
        follow = problem.follow_up
        share = problem.points * (VERDICT_SHARE if follow is not None else 1.0)
        questions = [DrillQuestion("true or false", lambda typed: parse_bool(typed),
                                   lambda typed: judge_verdict(problem, typed), share)]
        if follow is None:
            return questions
        read: Callable[[str], object]
        if follow.form == "choice":
            order = ch.order_in(variant, problem.id, follow.ids)
            label, read = f"follow-up ({ch.letters_hint(len(order))})", lambda typed: ch.read_choice(typed, order)
        elif follow.form == "number":
            label, read = "follow-up (a number)", read_numbers(np.asarray(float(follow.value)))
        else:
            label, read = "follow-up (a shape, e.g. a x b)", parse_shape
        return questions + [DrillQuestion(label, read, lambda typed: judge_follow_up(problem, typed, variant),
                                          problem.points - share)]

    def lms_groups(self, problem: TrueFalseProblem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
        variant = self.variant(problem, seed, "same", None)
        feedback = problem.solution + (f"\n\n**Corrected:** {problem.correction}" if problem.correction else "")
        verdict = Question(f"{problem.id}-verdict", "true or false", "truefalse", "Is the statement true or false?",
                           points * (VERDICT_SHARE if problem.follow_up else 1.0), "", truth=problem.answer)
        if problem.follow_up is None:
            question = Question(problem.id, problem.title, "truefalse", self.question_markdown(problem, None),
                                points, feedback, truth=problem.answer)
            return [QuestionGroup(problem.id, problem.title, points, (question,))]
        follow = problem.follow_up
        share = points - verdict.points
        if follow.form == "choice":
            order = ch.order_in(variant, problem.id, follow.ids)
            second = Question(f"{problem.id}-follow-up", "follow-up", "multichoice", follow.question, share, "",
                              choices=ch.quiz_choices(follow.choices, follow.right_id, order))
        elif follow.form == "number":
            window = float(judge.window(float(follow.value), follow.tolerance.abs, follow.tolerance.rel))
            blank = NumericBlank("follow-up", float(follow.value), window,
                                 part_answer(follow.part(), np.asarray(follow.number, dtype=float)))
            second = Question(f"{problem.id}-follow-up", "follow-up", "numerical", follow.question, share, "",
                              blanks=(blank,))
        else:
            accepted = shape_spellings(list(follow.shape)) + (shape_spellings(list(follow.expected_shape()))
                                                              if follow.parameters else [])
            second = Question(f"{problem.id}-follow-up", "follow-up", "shortanswer", follow.question, share, "",
                              accepted=tuple(dict.fromkeys(accepted)))
        text = f"{self.prompt_text(problem)}\n\n> {problem.statement}"
        question = Question(problem.id, problem.title, "cloze", text, points, feedback, parts=(verdict, second))
        return [QuestionGroup(problem.id, problem.title, points, (question,))]


TRUE_FALSE = TrueFalseKind()

__all__ = ["FollowUp", "TRUE_FALSE", "TrueFalseProblem", "check_true_false", "judge_follow_up", "judge_verdict"]
