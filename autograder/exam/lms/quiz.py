"""A quiz for learning platforms: bank problems (with points) in; question groups, each holding the variants of one
problem from which a platform draws one per student, out.

Neutral between the formats: qti.py, moodle.py and gift.py only write it down.
Numeric tolerances become absolute windows per entry (abs + rel * |answer|, as
the grader judges). Platforms that take one number per question (Canvas, GIFT)
get one group per answer entry (`split_entries`); Moodle takes every entry of a
variant in one cloze question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from autograder.bank.answers import expected_shape
from autograder.bank.model import (
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    Problem,
    ShapeProblem,
    TrueFalseProblem,
)
from autograder.bank.render import render_prompt, render_solution
from autograder.bank.variants import Variant, draw_variant
from autograder.exam.key import part_answer

QuestionKind = Literal["numerical", "cloze", "multichoice", "truefalse", "shortanswer"]
DRAWS_PER_VARIANT = 4  # small parameter spaces may not have K distinct variants: stop looking after 4K draws


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


@dataclass(frozen=True)
class Question:
    ident: str
    title: str
    kind: QuestionKind
    text: str  # Markdown with LaTeX
    points: float
    feedback: str  # the worked solution, shown after the attempt
    blanks: tuple[NumericBlank, ...] = ()  # numerical: one; cloze: every entry, part by part
    part_of_blank: tuple[int, ...] = ()  # cloze: which answer part each blank belongs to
    part_labels: tuple[str, ...] = ()  # cloze: the label of each answer part
    choices: tuple[Choice, ...] = ()  # multichoice
    truth: bool | None = None  # truefalse
    accepted: tuple[str, ...] = ()  # shortanswer


@dataclass(frozen=True)
class QuestionGroup:
    ident: str
    title: str
    points: float  # of each question; a student answers one question of the group
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Quiz:
    ident: str
    title: str
    groups: tuple[QuestionGroup, ...]


def distinct_variants(problem: NumericProblem, seed: int, count: int) -> list[Variant]:
    """Up to `count` variants with different parameters (problems without parameters have one)."""
    if not problem.parameters:
        return [draw_variant(problem, seed)]
    found: dict[str, Variant] = {}
    for n in range(count * DRAWS_PER_VARIANT):
        variant = draw_variant(problem, seed, f"lms-variant-{n + 1}")
        found.setdefault(repr(sorted(variant.params.items())), variant)
        if len(found) == count:
            break
    return list(found.values())


def shape_spellings(dims: list[str]) -> list[str]:
    """The ways a student may write a shape, for platforms that compare strings."""
    forms: list[str] = []
    for variant in (dims, [d.replace("_", "") for d in dims]):
        forms += ["(" + ", ".join(variant) + ")", "(" + ",".join(variant) + ")", " x ".join(variant),
                  "x".join(variant), " × ".join(variant), "[" + ", ".join(variant) + "]"]
    return list(dict.fromkeys(forms))


def entry_labels(label: str, value: np.ndarray) -> list[str]:
    flat = np.size(value)
    if flat == 1:
        return [label]
    if np.ndim(value) == 2:
        cols = np.shape(value)[1]
        return [f"{label}, row {i // cols + 1}, column {i % cols + 1}" for i in range(flat)]
    return [f"{label}, entry {i + 1} of {flat}" for i in range(flat)]


def numeric_blanks(problem: NumericProblem, variant: Variant) -> list[tuple[int, NumericBlank]]:
    blanks = []
    for index, part in enumerate(problem.parts):
        value = np.asarray(variant.answers[part.name], dtype=float)
        shown = [part_answer(part, x) for x in value.reshape(-1)]
        for label, x, text in zip(entry_labels(part.label, value), value.reshape(-1), shown):
            # four significant digits: the platforms show the window to the instructor
            window = float(f"{part.tolerance.abs + part.tolerance.rel * abs(float(x)):.4g}")
            blanks.append((index, NumericBlank(label, float(x), window, text)))
    return blanks


def _variant_title(problem: Problem, n: int, of: int) -> str:
    return problem.title if of == 1 else f"{problem.title} (variant {n} of {of})"


def numeric_groups(problem: NumericProblem, points: float, seed: int, variants: int,
                   split_entries: bool) -> list[QuestionGroup]:
    drawn = [(render_prompt(problem, v), render_solution(problem, v), numeric_blanks(problem, v))
             for v in distinct_variants(problem, seed, variants)]
    if not split_entries:
        questions = tuple(
            Question(f"{problem.id}-v{n}", _variant_title(problem, n, len(drawn)),
                     "numerical" if len(blanks) == 1 else "cloze", prompt, points, solution,
                     tuple(b for _, b in blanks), tuple(i for i, _ in blanks), tuple(p.label for p in problem.parts))
            for n, (prompt, solution, blanks) in enumerate(drawn, 1))
        return [QuestionGroup(problem.id, problem.title, points, questions)]
    groups = []
    first_blanks = drawn[0][2]
    for e, (part_index, first) in enumerate(first_blanks):
        entries = sum(1 for i, _ in first_blanks if i == part_index)
        share = points / len(problem.parts) / entries
        questions = tuple(
            Question(f"{problem.id}-e{e + 1}-v{n}", f"{_variant_title(problem, n, len(drawn))}: {blanks[e][1].label}",
                     "numerical", f"{prompt.strip()}\n\n**Give:** {blanks[e][1].label}.", share, solution,
                     (blanks[e][1],))
            for n, (prompt, solution, blanks) in enumerate(drawn, 1))
        groups.append(QuestionGroup(f"{problem.id}-e{e + 1}", f"{problem.title}: {first.label}", share, questions))
    return groups


def single_group(problem: Problem, points: float) -> QuestionGroup:
    if isinstance(problem, ShapeProblem):
        accepted = shape_spellings(list(problem.answer))
        if problem.parameters:
            accepted += shape_spellings(list(expected_shape(problem)))
        question = Question(problem.id, problem.title, "shortanswer", problem.prompt, points, problem.solution,
                            accepted=tuple(dict.fromkeys(accepted)))
    elif isinstance(problem, TrueFalseProblem):
        feedback = problem.solution + (f"\n\n**Corrected:** {problem.correction}" if problem.correction else "")
        question = Question(problem.id, problem.title, "truefalse", f"{problem.prompt}\n\n> {problem.statement}",
                            points, feedback, truth=problem.answer)
    else:
        assert isinstance(problem, MultipleChoiceProblem)
        choices = tuple(Choice(c.text, chr(65 + i) == problem.answer, c.misconception or "")
                        for i, c in enumerate(problem.choices))
        question = Question(problem.id, problem.title, "multichoice", problem.prompt, points, problem.solution,
                            choices=choices)
    return QuestionGroup(problem.id, problem.title, points, (question,))


def build_quiz(ident: str, title: str, problems: list[tuple[Problem, float]], seed: int, variants: int,
               split_entries: bool) -> Quiz:
    """Every non-code problem as a group; code problems are left to `qkv build` (platforms cannot run them)."""
    groups: list[QuestionGroup] = []
    for problem, points in problems:
        if isinstance(problem, ImplementProblem):
            continue
        if isinstance(problem, NumericProblem):
            groups += numeric_groups(problem, points, seed, variants, split_entries)
        else:
            groups.append(single_group(problem, points))
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
