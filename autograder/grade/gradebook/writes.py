"""The gradebook's writes: binding it to an assignment build, one grading at a time, and the class beside them.

Each is one transaction, so `kill -9` at any moment loses at most the submissions in flight and never
leaves a half-written row.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Optional

from autograder.grade.gradebook.records import GradingContext, LateEntry, LateRules, RosterEntry
from autograder.results import SubmissionResult


def _iso(moment: Optional[dt.datetime]) -> Optional[str]:
    return moment.isoformat() if moment else None


class Writes:
    _db: sqlite3.Connection

    def check_assignment(self, name: str, bundle_fingerprint: str) -> str | None:
        """Bind this gradebook to one assignment build; returns a reason when it belongs to another."""
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not rows:
            with self._db:
                self._db.executemany("INSERT INTO meta VALUES (?, ?)",
                                     [("assignment", name), ("bundle", bundle_fingerprint)])
            return None
        if rows.get("assignment") != name:
            return f"this gradebook belongs to assignment '{rows.get('assignment')}'"
        if rows.get("bundle") != bundle_fingerprint:
            return "the assignment was rebuilt since this gradebook was started"
        return None

    def rebind(self, bundle_fingerprint: str) -> None:
        with self._db:
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'bundle'", (bundle_fingerprint,))

    def record(self, result: SubmissionResult, isolation: str, context: GradingContext = GradingContext()) -> None:
        """Store one grading of a submission in a single transaction; it becomes the student's latest."""
        # a mistake of a function built on is stored as "that problem/mistake", so the class counts it where it starts
        tests = [(p.problem_id, t.name, t.visibility, t.score, t.max_score, int(t.passed),
                  f"{t.cause}/{t.misconception}" if t.cause and t.misconception else t.misconception)
                 for p in result.problems for t in p.tests]
        now = time.time()
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            grading = self._db.execute(
                "INSERT INTO gradings (student, digest, graded_at, bundle, status, score, max_score, isolation, source,"
                " submitted_at, time_source, late_marked, answers) VALUES (?, ?, ?,"
                " COALESCE((SELECT value FROM meta WHERE key = 'bundle'), ''), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (result.student, result.digest, now, result.status, result.score,
                 result.max_score, isolation, context.source, context.submitted_at, context.time_source,
                 int(context.late_marked), json.dumps(result.answers, allow_nan=True)),
            ).lastrowid
            self._db.executemany("INSERT INTO grading_tests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 [(grading, *test) for test in tests])
            self._db.execute(
                "INSERT OR REPLACE INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (result.student, result.digest, now, result.status, result.score, result.max_score,
                 isolation, json.dumps(result.to_json(), allow_nan=True), grading),
            )

    def store_class(self, title: str, roster: Optional[Sequence[RosterEntry]], late: Sequence[LateEntry],
                    rules: LateRules = LateRules()) -> None:
        """Replace the class beside the grades in one transaction: the title, the roster (kept as it was when
        `roster` is None), every late outcome, and the late policy they were worked out under."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO class_meta VALUES (?, ?)", [
                ("title", title), ("late_rules", json.dumps({"due": rules.due, "late": rules.late}))])
            if roster is not None:
                self._db.execute("DELETE FROM class_roster")
                self._db.executemany("INSERT INTO class_roster VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                    (s.id, s.name, s.email, s.lms_id, s.section, s.extension, json.dumps(list(s.extra)), i)
                    for i, s in enumerate(roster)])
            self._db.execute("DELETE FROM class_late")
            self._db.executemany("INSERT INTO class_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                (o.student, _iso(o.due), _iso(o.submitted_at), o.time_source, o.late_seconds, o.raw, o.penalty,
                 o.final, o.max_score, o.rule, o.extension)
                for o in sorted(late, key=lambda o: o.student)])
