"""Written corrections of true/false statements, for the instructor to read: a class's `Scores` in, one row per
non-empty correction out.

A free-text correction cannot be judged without a person, so the grader never scores it (the verdict and the
graded follow-up earn a statement's points, kinds/true_false/); it keeps every answer as handed in with the
grading, and `qkv stats` lists the corrections here, in stats.html, with the points the rest of the answer earned.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.classroom.stats import Scores
from autograder.kinds import KINDS


@dataclass(frozen=True)
class Correction:
    problem: str
    student: str
    text: str
    points: float  # what the verdict and the follow-up earned
    max_points: float


def written_corrections(scores: Scores) -> tuple[Correction, ...]:
    """Every non-empty `correction` of an answer to a kind that takes one (`written_correction`: true/false
    statements), by problem, then student."""
    earned: dict[tuple[str, str], list[float]] = {}
    for column, (problem, _, _) in enumerate(scores.columns):
        for row, student in enumerate(scores.students):
            entry = earned.setdefault((student, problem), [0.0, 0.0])
            entry[0] += float(scores.tests[row, column])
            entry[1] += float(scores.test_max[column])
    out = []
    for student in scores.students:
        for problem, answer in scores.answers.get(student, {}).items():
            kind = KINDS.get(scores.problem_kinds.get(problem, ""))
            if scores.problem_kinds and not (kind is not None and kind.written_correction):
                continue
            text = answer.get("correction") if isinstance(answer, dict) else None
            if isinstance(text, str) and text.strip():
                points, most = earned.get((student, problem), [0.0, 0.0])
                out.append(Correction(problem, student, text.strip(), points, most))
    return tuple(sorted(out, key=lambda c: (c.problem, c.student)))
