"""The gradebook's reads for grading, the history, the exports and the class beside the grades.

grading_tests is clustered by grading, so one grading's tests, or a whole class's in order, are read
without a sort. Lists of ids or students go in chunks of 500, under SQLite's limit on parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from autograder.grade.gradebook.database import Database
from autograder.late_policy import LatePolicy
from autograder.grade.gradebook.records import (CountedLate, Grading, HandIn, LateEntry, LateRules, RosterEntry, StoredSubmission,
                                                TestKey, moment)
from autograder.results import SubmissionResult

LATEST = "SELECT grading FROM counted"  # each student's grading that counts (`qkv grade`: the latest)
CHUNK = 500
_LATE = "due, submitted_at, time_source, late_seconds, raw, penalty, final, max_score, rule, extension"
_LATE_OF_L = ", ".join(f"l.{column}" for column in _LATE.split(", "))  # beside gradings' columns of the same names


def _late_entry(row: Sequence[Any]) -> LateEntry:
    student, due, submitted, source, late, raw, penalty, final, max_score, rule, ext = row
    return LateEntry(student, moment(due), moment(submitted), source, late, raw, penalty, final, max_score, rule, ext)

_GRADING = "id, student, digest, graded_at, bundle, status, score, max_score, source, submitted_at, time_source"


def _grading(row: Sequence[Any], tests: dict[TestKey, tuple[float, float, bool]]) -> Grading:
    """A row of _GRADING and late_marked, with the grading's tests."""
    id, student, digest, graded_at, bundle, status, score, max_score, source, submitted_at, time_source, marked = row
    return Grading(id, student, digest, graded_at, bundle, status, score, max_score, source, submitted_at,
                   time_source, bool(marked), tests)


def _marks(values: list) -> str:
    return ",".join("?" * len(values))


class Reads:
    _db: Database

    # ------------------------------------------------------------------ grading

    def graded_digests(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT student, digest FROM submissions").fetchall())

    def results(self, known: Mapping[str, SubmissionResult] = {}) -> list[tuple[SubmissionResult, str]]:
        """Every stored result with its isolation, by student; those in `known` (just recorded) are not decoded
        again."""
        rows = self._db.execute("SELECT student, isolation FROM submissions ORDER BY student").fetchall()
        unknown = [student for student, _ in rows if student not in known]
        stored: dict[str, tuple[SubmissionResult, str]] = {}
        for start in range(0, len(unknown), CHUNK):  # a result is some 60 kB of JSON: only those not in hand
            chunk = unknown[start:start + CHUNK]
            stored.update((student, (SubmissionResult.from_json(json.loads(result)), isolation))
                          for student, isolation, result in self._db.execute(
                              f"SELECT student, isolation, result FROM submissions WHERE student IN ({_marks(chunk)})",
                              chunk))
        # a result and its isolation are read together; a student gone between the two reads is left out
        return [(known[student], isolation) if student in known else stored[student] for student, isolation in rows
                if student in known or student in stored]

    def latest_hand_ins(self) -> dict[str, HandIn]:
        """When each student's latest grading was handed in, by student."""
        return {student: HandIn(moment(at), source, bool(marked)) for student, at, source, marked in self._db.execute(
            f"SELECT student, submitted_at, time_source, late_marked FROM gradings WHERE id IN ({LATEST})")}

    # ------------------------------------------------------------------ history

    def _gradings(self, where: str, args: tuple) -> list[Grading]:
        rows = self._db.execute(f"SELECT {_GRADING}, late_marked FROM gradings WHERE {where} ORDER BY id",
                                args).fetchall()
        if not rows:
            return []
        ids = [r[0] for r in rows]
        tests: dict[int, dict[TestKey, tuple[float, float, bool]]] = {i: {} for i in ids}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            for grading, problem, test, score, max_score, passed in self._db.execute(
                    "SELECT grading, problem, test, score, max_score, passed FROM grading_tests "
                    f"WHERE grading IN ({_marks(chunk)})", chunk):
                tests[grading][(problem, test)] = (score, max_score, bool(passed))
        return [_grading(row, tests[row[0]]) for row in rows]

    def gradings_of(self, student: str) -> list[Grading]:
        """Every grading of one student, oldest first."""
        return self._gradings("student = ?", (student,))

    def last_two_gradings(self, students: Iterable[str]) -> dict[str, list[Grading]]:
        """The last two gradings, oldest first, of each of `students` graded twice or more. A student graded
        once is left out before any of their test rows is read: a class's first grading reads none."""
        out: dict[str, list[Grading]] = {}
        wanted = sorted(set(students))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            ids = [r[0] for r in self._db.execute(
                "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY student ORDER BY id DESC) AS n, "
                "COUNT(*) OVER (PARTITION BY student) AS graded "
                f"FROM gradings WHERE student IN ({_marks(chunk)})) AS ranked WHERE n <= 2 AND graded >= 2",
                chunk).fetchall()]
            if ids:
                for grading in self._gradings(f"id IN ({_marks(ids)})", tuple(ids)):
                    out.setdefault(grading.student, []).append(grading)
        return out

    # ------------------------------------------------------------------ exports

    def latest_submissions(self) -> list[StoredSubmission]:
        """Each student's latest grading, by student."""
        return [StoredSubmission(student, status, score, max_score, json.loads(result))
                for student, status, score, max_score, result in self._db.execute(
                    "SELECT student, status, score, max_score, result FROM submissions ORDER BY student")]

    def grading_result(self, grading: int) -> Optional[tuple[SubmissionResult, str]]:
        """One grading's whole result and the isolation it ran under, or None."""
        row = self._db.execute("SELECT result, isolation FROM gradings WHERE id = ?", (grading,)).fetchone()
        return (SubmissionResult.from_json(json.loads(row[0])), row[1]) if row else None

    # ------------------------------------------------------------------ the class

    def assignment(self) -> Optional[str]:
        """The assignment this gradebook is bound to (None before the first grading)."""
        return dict(self._db.execute("SELECT key, value FROM meta").fetchall()).get("assignment")

    def class_title(self) -> str:
        row = self._db.execute("SELECT value FROM class_meta WHERE key = 'title'").fetchone()
        return row[0] if row else ""

    def late_rules(self) -> LateRules:
        row = self._db.execute("SELECT value FROM class_meta WHERE key = 'late_rules'").fetchone()
        data = json.loads(row[0]) if row else {}
        late = data.get("late")
        return LateRules(data.get("due"), LatePolicy.model_validate(late) if isinstance(late, dict) else None)

    def grading_late(self, grading: int) -> Optional[LateEntry]:
        """A grading's late outcome as the grading service kept it; None for a grading of before it kept them."""
        row = self._db.execute(f"SELECT g.student, {_LATE_OF_L} FROM grading_late AS l JOIN gradings AS g ON g.id ="
                               " l.grading WHERE l.grading = ?", (grading,)).fetchone()
        return _late_entry(row) if row else None

    def counted_late(self) -> list[CountedLate]:
        """Each student's counted grading with its hand-in and its kept late outcome (None for one of before)."""
        rows = self._db.execute("SELECT g.id, g.score, g.max_score, g.submitted_at, g.time_source, g.late_marked,"
                                f" l.grading, g.student, {_LATE_OF_L} FROM counted AS c JOIN gradings AS g ON g.id ="
                                " c.grading LEFT JOIN grading_late AS l ON l.grading = g.id ORDER BY g.student")
        return [CountedLate(row[0], row[7], row[1], row[2], HandIn(moment(row[3]), row[4], bool(row[5])),
                            _late_entry(row[7:]) if row[6] is not None else None) for row in rows]

    def class_roster(self) -> list[RosterEntry]:
        """The roster the last run that had one used, in its order; [] when none had."""
        return [RosterEntry(i, n, e, lms, sec, ext, tuple(tuple(x) for x in json.loads(extra)))
                for i, n, e, lms, sec, ext, extra in self._db.execute(
                    "SELECT id, name, email, lms_id, section, extension, extra FROM class_roster ORDER BY position")]

    def class_late(self) -> list[LateEntry]:
        """Each student's late outcome as the last run worked it out."""
        return [_late_entry(row) for row in self._db.execute(f"SELECT student, {_LATE} FROM class_late")]
