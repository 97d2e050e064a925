"""What a kind hands the stages: plain values, no behaviour.

Variants (the numbers, or the order of the choices, that one student is given),
verdicts and marks for grading and the drill, key lines for answer keys, blanks
for exam papers, drill questions, and the neutral quiz questions the LMS writers
(exam/lms/qti.py, moodle.py, gift.py) write down. They live here, below the
kinds, because the kinds make them and the stages read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np


@dataclass(frozen=True)
class Variant:
    """One instance of a problem: its parameters and the answer to each part (numeric/variants.py draws them), or
    the order of its choices (choices.py)."""

    problem_id: str
    params: dict[str, Any]
    answers: dict[str, np.ndarray]
    label: str  # "lecture" or "seed:<seed>/<student>"
    quantities: dict[str, np.ndarray] = field(default_factory=dict)  # all `compute` gives: parts and extra values


@dataclass(frozen=True)
class Verdict:
    correct: bool
    message: str
    misconception: str | None = None


@dataclass(frozen=True)
class Marked:
    """A written answer judged for the grader: the share of the points it earns, and why."""

    fraction: float
    message: str
    misconception: str | None = None


# ------------------------------------------------------------ answer keys


@dataclass(frozen=True)
class KeyLine:
    label: str
    answer: str  # as a student writes it, e.g. "(0.0634, 0.4683, 0.4683)"
    accepted: str = ""  # e.g. "within 0.0005 of each entry"; empty when nothing else needs saying


@dataclass(frozen=True)
class Mistake:
    answer: str  # the wrong answer it gives, e.g. "B" or "scores: (2, 4, 4)"
    message: str


@dataclass(frozen=True)
class ProblemKey:
    lines: tuple[KeyLine, ...]
    solution: str  # Markdown with LaTeX
    mistakes: tuple[Mistake, ...]


# ---------------------------------------------------------- exams, drill


@dataclass(frozen=True)
class Blank:
    label: str
    tall: bool = False  # room for a corrected statement or a function, not one line


@dataclass(frozen=True)
class DrillQuestion:
    """One answer the student types: a label, a reader that raises on a malformed answer, and a judge."""

    label: str
    read: Callable[[str], object]
    judge: Callable[[str], Verdict]
    points: float


# ---------------------------------------------------------------- quizzes

QuestionKind = Literal["numerical", "cloze", "multichoice", "truefalse", "shortanswer"]  # a cloze holds parts


@dataclass(frozen=True)
class NumericBlank:
    label: str
    value: float
    tolerance: float  # absolute: answers within value ± tolerance are right
    shown: str  # the value as the key shows it


@dataclass(frozen=True)
class Choice:
    text: str  # Markdown
    correct: bool
    feedback: str = ""
    ident: str = ""  # the choice's id in the bank, the same whatever the order


@dataclass(frozen=True)
class Question:
    ident: str
    title: str
    kind: QuestionKind
    text: str  # Markdown with LaTeX
    points: float
    feedback: str  # the worked solution, shown after the attempt
    blanks: tuple[NumericBlank, ...] = ()  # numerical: one, or (a part of a cloze) each entry of a vector
    choices: tuple[Choice, ...] = ()  # multichoice
    truth: bool | None = None  # truefalse
    accepted: tuple[str, ...] = ()  # shortanswer
    parts: tuple["Question", ...] = ()  # cloze: the answers of one variant, each a question of its own kind


@dataclass(frozen=True)
class Answerable:
    """One answer a platform grades on its own: a part of a question (or the whole of a simple one)."""

    question: Question  # the part: its kind, choices, truth, accepted spellings
    blank: NumericBlank | None  # numerical: the one entry
    points: float

    @property
    def entry(self) -> NumericBlank:
        """The one entry of a numerical answer, which has one."""
        if self.blank is None:
            raise ValueError(f"{self.question.ident}: a {self.question.kind} answer has no numeric entry")
        return self.blank


@dataclass(frozen=True)
class QuestionGroup:
    ident: str
    title: str
    points: float  # of each question; a student answers one question of the group
    questions: tuple[Question, ...]


def answerables(question: Question) -> list[Answerable]:
    """Every answer of a question, one by one, with its share of the points: what a platform that takes one
    answer per question (Canvas, GIFT) asks as separate questions, all from the same variant."""
    parts = question.parts or (question,)
    out = []
    for part in parts:
        if part.kind == "numerical":
            out += [Answerable(part, blank, part.points / len(part.blanks)) for blank in part.blanks]
        else:
            out.append(Answerable(part, None, part.points))
    return out
