"""History: the gradebook's `gradings` in; each student's trail, and who gained or lost points between their
last two gradings (after a hidden test is fixed and the class regraded), out.

Every grading is kept by `Gradebook.record` (digest of the file, time, LATE marker, bundle fingerprint,
per-test scores); `late_outcomes` gives each grading's score after the late penalty; nothing here writes
to the gradebook. `changes_csv` is the table `qkv grade` writes as changes.csv when a run regraded someone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from autograder.classroom.classbook import stored_roster
from autograder.classroom.deadlines import LateOutcome, policy_from
from autograder.grade.gradebook import Gradebook, Grading, HandIn
from autograder.grade.service import late_outcome
from autograder.report.spreadsheet import csv_text

__all__ = ["Change", "Grading", "changes", "changes_csv", "diff", "late_outcomes", "trail"]


@dataclass(frozen=True)
class Change:
    student: str
    before: float
    after: float
    gained: tuple[str, ...]  # "problem::test (+0.5)"
    lost: tuple[str, ...]
    new_bundle: bool  # the assignment was rebuilt between the two gradings
    new_file: bool  # the student handed in another file

    @property
    def delta(self) -> float:
        return round(self.after - self.before, 4)


def trail(book: Gradebook, student: str) -> list[Grading]:
    """Every grading of one student, oldest first."""
    return book.gradings_of(student)


def late_outcomes(book: Gradebook, gradings: Iterable[Grading]) -> list[LateOutcome]:
    """Each grading's score after the late penalty: from its own hand-in time and LATE marker, under the late
    policy and the extensions of the last `qkv grade` (so the latest grading's is what the exports read)."""
    rules = book.late_rules()
    deadline = policy_from(rules.due, rules.late)
    roster = stored_roster(book)
    return [late_outcome(deadline, roster, g.student, g.score, g.max_score,
                         HandIn(g.handed_in, g.time_source, g.late_marked)) for g in gradings]


def diff(before: Grading, after: Grading) -> Change:
    gained: list[str] = []
    lost: list[str] = []
    for key in sorted(set(before.tests) | set(after.tests)):
        old = before.tests.get(key, (0.0, 0.0, False))[0]
        new = after.tests.get(key, (0.0, 0.0, False))[0]
        if abs(new - old) > 1e-9:
            (gained if new > old else lost).append(f"{key[0]}::{key[1]} ({new - old:+.4g})")
    return Change(after.student, before.score, after.score, tuple(gained), tuple(lost),
                  before.bundle != after.bundle, before.digest != after.digest)


def changes(book: Gradebook, students: Iterable[str]) -> list[Change]:
    """For each student with two gradings or more: the last one against the one before."""
    last_two = book.last_two_gradings(students)
    return [diff(*last_two[s]) for s in sorted(set(students)) if s in last_two]


def changes_csv(found: list[Change]) -> str:
    return csv_text([["student", "before", "after", "change", "gained", "lost", "rebuilt", "new_file"],
                     *([c.student, f"{c.before:g}", f"{c.after:g}", f"{c.delta:+g}", "; ".join(c.gained),
                        "; ".join(c.lost), "yes" if c.new_bundle else "no", "yes" if c.new_file else "no"]
                       for c in sorted(found, key=lambda c: (c.delta, c.student)))])
