"""History: the gradebook's `gradings` in; each student's trail, and who gained or lost points between their
last two gradings (after a hidden test is fixed and the class regraded), out.

Every grading is kept by `Gradebook.record` (digest of the file, time, bundle fingerprint, per-test
scores); nothing here writes to the gradebook. `changes_csv` is the table `qkv grade` writes as
changes.csv when a run regraded someone.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Iterable, Optional

from autograder.report.spreadsheet import csv_text

TestKey = tuple[str, str]  # (problem id, test name)


@dataclass(frozen=True)
class Grading:
    id: int
    student: str
    digest: str
    graded_at: float
    bundle: str
    status: str
    score: float
    max_score: float
    source: str
    submitted_at: Optional[str]
    time_source: str
    tests: dict[TestKey, tuple[float, float, bool]]  # (score, max, passed)


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


_COLUMNS = "id, student, digest, graded_at, bundle, status, score, max_score, source, submitted_at, time_source"


def _gradings(db: sqlite3.Connection, where: str, args: tuple) -> list[Grading]:
    rows = db.execute(f"SELECT {_COLUMNS} FROM gradings WHERE {where} ORDER BY id", args).fetchall()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    tests: dict[int, dict[TestKey, tuple[float, float, bool]]] = {i: {} for i in ids}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for grading, problem, test, score, max_score, passed in db.execute(
                f"SELECT grading, problem, test, score, max_score, passed FROM grading_tests WHERE grading IN ({marks})",
                chunk):
            tests[grading][(problem, test)] = (score, max_score, bool(passed))
    return [Grading(*row, tests=tests[row[0]]) for row in rows]


def trail(db: sqlite3.Connection, student: str) -> list[Grading]:
    """Every grading of one student, oldest first."""
    return _gradings(db, "student = ?", (student,))


def diff(before: Grading, after: Grading) -> Change:
    gained, lost = [], []
    for key in sorted(set(before.tests) | set(after.tests)):
        old = before.tests.get(key, (0.0, 0.0, False))[0]
        new = after.tests.get(key, (0.0, 0.0, False))[0]
        if abs(new - old) > 1e-9:
            (gained if new > old else lost).append(f"{key[0]}::{key[1]} ({new - old:+.4g})")
    return Change(after.student, before.score, after.score, tuple(gained), tuple(lost),
                  before.bundle != after.bundle, before.digest != after.digest)


def changes(db: sqlite3.Connection, students: Iterable[str]) -> list[Change]:
    """For each student with two gradings or more: the last one against the one before."""
    out = []
    wanted = sorted(set(students))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ",".join("?" * len(chunk))
        last_two = db.execute(
            f"SELECT id FROM (SELECT id, student, ROW_NUMBER() OVER (PARTITION BY student ORDER BY id DESC) AS n "
            f"FROM gradings WHERE student IN ({marks})) WHERE n <= 2", chunk).fetchall()
        by_student: dict[str, list[Grading]] = {}
        ids = [r[0] for r in last_two]
        if not ids:
            continue
        for grading in _gradings(db, f"id IN ({','.join('?' * len(ids))})", tuple(ids)):
            by_student.setdefault(grading.student, []).append(grading)
        for student in chunk:
            pair = by_student.get(student, [])
            if len(pair) == 2:
                out.append(diff(pair[0], pair[1]))
    return out


def changes_csv(found: list[Change]) -> str:
    return csv_text([["student", "before", "after", "change", "gained", "lost", "rebuilt", "new_file"],
                     *([c.student, f"{c.before:g}", f"{c.after:g}", f"{c.delta:+g}", "; ".join(c.gained),
                        "; ".join(c.lost), "yes" if c.new_bundle else "no", "yes" if c.new_file else "no"]
                       for c in sorted(found, key=lambda c: (c.delta, c.student)))])
