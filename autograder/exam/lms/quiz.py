"""A quiz for learning platforms: bank problems (with points) in; question groups, each holding the variants of one
problem from which a platform draws one per student, out.

Neutral between the formats: qti.py, moodle.py and gift.py only write it down.
Each problem's kind makes its groups (`Kind.lms_groups`; the question values
are in autograder/kinds/items.py). Numeric tolerances become absolute windows
per entry (abs + rel * |answer|, as the grader judges). Platforms that take one
number per question (Canvas, GIFT) get one group per answer entry
(`split_entries`); Moodle takes every entry of a variant in one cloze question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autograder.kinds import Problem, kind_of
from autograder.kinds.items import Question, QuestionGroup


@dataclass(frozen=True)
class Quiz:
    ident: str
    title: str
    groups: tuple[QuestionGroup, ...]


def build_quiz(ident: str, title: str, problems: list[tuple[Problem, float]], seed: int, variants: int,
               split_entries: bool) -> Quiz:
    """Every problem's groups, from its kind; code problems give none (platforms cannot run them)."""
    groups: list[QuestionGroup] = []
    for problem, points in problems:
        groups += kind_of(problem).lms_groups(problem, points, seed, variants, split_entries)
    return Quiz(ident, title, tuple(groups))


def cloze_weights(question: Question) -> list[int]:
    """Whole-number weights per blank giving each answer part the same share, as the grader splits points."""
    counts: dict[int, int] = {}
    for part in question.part_of_blank:
        counts[part] = counts.get(part, 0) + 1
    common = math.lcm(*counts.values())
    return [common // counts[part] for part in question.part_of_blank]


def number_text(x: float) -> str:
    """A number as the platforms' files write it: up to 10 significant digits, no trailing zeros."""
    return f"{float(x):.10g}"
