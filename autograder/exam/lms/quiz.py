"""A quiz for learning platforms: bank problems (with points) in; question groups, each holding the variants of one
problem from which a platform draws one per student, out.

Neutral between the formats: qti.py, moodle.py and gift.py only write it down.
Each problem's kind makes its groups (`Kind.lms_groups`; the question values
are in autograder/kinds/items.py). Every part of one variant stays in one
question (a `cloze` holds several), so no platform can hand a student the
entries of two different draws; how each platform keeps that is its writer's
business (Moodle: one cloze question; Canvas: one quiz per variant; GIFT: one
category per variant). Numeric tolerances become absolute windows per entry
(abs + rel * |answer|, as the grader judges).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from autograder.kinds import Problem, kind_of
from autograder.kinds.items import Answerable, Question, QuestionGroup, answerables


@dataclass(frozen=True)
class Quiz:
    ident: str
    title: str
    groups: tuple[QuestionGroup, ...]

    @property
    def variants(self) -> int:
        """The most variants any group has: a platform without random draws gets that many quizzes."""
        return max((len(g.questions) for g in self.groups), default=1)


def build_quiz(ident: str, title: str, problems: list[tuple[Problem, float]], seed: int, variants: int) -> Quiz:
    """Every problem's groups, from its kind; code problems give none (platforms cannot run them)."""
    groups: list[QuestionGroup] = []
    for problem, points in problems:
        groups += kind_of(problem).lms_groups(problem, points, seed, variants)
    return Quiz(ident, title, tuple(groups))


def question_of_variant(group: QuestionGroup, n: int) -> Question:
    """The question variant n (from 1) of a group gives; a group with fewer variants repeats them."""
    return group.questions[(n - 1) % len(group.questions)]


def weights(question: Question) -> list[tuple[Answerable, int]]:
    """Each answer of a question with a whole-number weight in proportion to its points, as the grader splits them."""
    found = answerables(question)
    shares = [Fraction(a.points / question.points).limit_denominator(10_000) for a in found]
    common = math.lcm(*(s.denominator for s in shares))
    whole = [int(s * common) for s in shares]
    divisor = math.gcd(*whole)
    return [(a, w // divisor) for a, w in zip(found, whole)]


def number_text(x: float) -> str:
    """A number as the platforms' files write it: up to 10 significant digits, no trailing zeros."""
    return f"{float(x):.10g}"
