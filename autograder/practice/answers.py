"""A written problem's variant and the answers typed to it in; the verdict of each part (the misconception a wrong
answer matches named), the share of the points earned and the worked solution of that variant out.

The kinds' own drill questions judge (the same checkers and tolerances the drill and the grader use), so no student
code runs: the service judges a practice answer in its web process. Pure: the same variant and answers give the same
verdicts, so a stored try is shown again by judging its stored answers again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autograder.kinds import Problem, kind_of
from autograder.kinds.items import DrillQuestion, ProblemKey
from qkv_runtime.answers import AnswerFormatError

ANSWER_CHARS = 2000  # far above any written answer (a 4x4 matrix of decimals is some 200): a longer one is refused


@dataclass(frozen=True)
class Part:
    label: str
    typed: str
    correct: bool
    message: str
    misconception: str | None = None


@dataclass(frozen=True)
class Judged:
    parts: tuple[Part, ...]
    share: float  # of the problem's points, 0 to 1; every part right is 1 exactly
    skipped: bool = False

    @property
    def misconceptions(self) -> tuple[str, ...]:
        """Named by the wrong answers, each once, in the order named."""
        return tuple(dict.fromkeys(p.message for p in self.parts if not p.correct and p.misconception))


class Unreadable(Exception):
    """An answer not in a form its part reads (a typo, not a wrong answer): asked again, nothing kept."""


def questions(problem: Problem, seed: int) -> list[DrillQuestion]:
    kind = kind_of(problem)
    return kind.drill_questions(problem, kind.variant(problem, seed, "per_student", None))


def question_markdown(problem: Problem, seed: int) -> str:
    kind = kind_of(problem)
    return kind.drill_text(problem, kind.variant(problem, seed, "per_student", None))


def key_of(problem: Problem, seed: int) -> ProblemKey:
    kind = kind_of(problem)
    return kind.key(problem, kind.variant(problem, seed, "per_student", None))


def judge(problem: Problem, seed: int, typed: Mapping[str, str]) -> Judged:
    """Every part's answer judged; Unreadable (with a one-line reason naming the part) when one is missing or
    malformed. A skip is `skipped()`, not an empty answer."""
    asked = questions(problem, seed)
    parts, earned = [], 0.0
    for question in asked:
        answer = typed.get(question.label, "").strip()
        if not answer:
            raise Unreadable(f"{question.label}: no answer (answer every part, or show the solution)")
        if len(answer) > ANSWER_CHARS:
            raise Unreadable(f"{question.label}: the answer is longer than {ANSWER_CHARS} characters")
        try:
            question.read(answer)
        except AnswerFormatError as err:
            raise Unreadable(f"{question.label}: {err}") from None
        verdict = question.judge(answer)
        earned += question.points if verdict.correct else 0.0
        parts.append(Part(question.label, answer, verdict.correct, verdict.message, verdict.misconception))
    possible = sum(q.points for q in asked)
    # parts' shares need not add up in floating point (6 x 4/6 is 3.9999...): every part right is the whole
    share = 1.0 if all(p.correct for p in parts) else (min(1.0, round(earned / possible, 6)) if possible else 0.0)
    return Judged(tuple(parts), share)


def skipped() -> Judged:
    return Judged((), 0.0, skipped=True)
