"""The gradebook's writes: binding it to an assignment build, one grading at a time, and the class beside them.

Each is one transaction, so `kill -9` at any moment loses at most the submissions in flight and never
leaves a half-written row.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from typing import Optional

from autograder.grade.gradebook.database import Database
from autograder.grade.gradebook.records import Counting, GradingContext, LateEntry, LateRules, RosterEntry
from autograder.results import SubmissionResult


def _iso(moment: Optional[dt.datetime]) -> Optional[str]:
    return moment.isoformat() if moment else None


# the grading that counts for a student: the newest grading of the attempt received last, or of the attempt
# whose newest grading has the highest final score (the later of equals); gradings of no attempt (`qkv grade`)
# are attempts of their own, in the order they were made
_COUNTED = """
SELECT id FROM gradings WHERE id IN (
    SELECT MAX(id) FROM gradings WHERE student = ? GROUP BY COALESCE(attempt, CAST(id AS TEXT)))
ORDER BY {order} LIMIT 1"""
_ORDER = {Counting.LATEST: "COALESCE((SELECT received_at FROM attempts WHERE attempts.id = gradings.attempt), 0) DESC,"
                           " id DESC",
          Counting.BEST: "final DESC, id DESC"}


def _late_row(o: LateEntry) -> tuple:
    return (o.student, _iso(o.due), _iso(o.submitted_at), o.time_source, o.late_seconds, o.raw, o.penalty, o.final,
            o.max_score, o.rule, o.extension)


class Writes:
    _db: Database

    def check_assignment(self, name: str, bundle_fingerprint: str) -> str | None:
        """Bind this gradebook to one assignment build; returns a reason when it belongs to another."""
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not rows:
            with self._db.write():
                self._db.executemany("INSERT INTO meta VALUES (?, ?)",
                                     [("assignment", name), ("bundle", bundle_fingerprint)])
            return None
        if rows.get("assignment") != name:
            return f"this gradebook belongs to assignment '{rows.get('assignment')}'"
        if rows.get("bundle") != bundle_fingerprint:
            return "the assignment was rebuilt since this gradebook was started"
        return None

    def rebind(self, bundle_fingerprint: str) -> None:
        with self._db.write():
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'bundle'", (bundle_fingerprint,))

    def record(self, result: SubmissionResult, isolation: str, context: GradingContext = GradingContext(),
               attempt: Optional[str] = None, late: Optional[LateEntry] = None,
               counting: Counting = Counting.LATEST, shown: Optional[float] = None) -> Optional[int]:
        """Store one grading of a submission in a single transaction and choose the student's counted grading
        (`qkv grade`: this one). With `attempt`, the grading of an attempt `qkv serve` accepted: it is recorded
        once (a second grading of an attempt already graded, say after a restart, returns None and writes
        nothing) and the attempt is marked graded in the same transaction. `late` is its late outcome (the
        grading service's, grade/service.py): kept with it, its final score the grading's, and, for an
        attempt, the counted grading's kept beside the class (class_late) for the exports. `shown`: the score its
        student is shown before hand-in closes (grade/written_policy.py), when not the score. Returns its id."""
        # a mistake of a function built on is stored as "that problem/mistake", so the class counts it where it starts
        tests = [(p.problem_id, t.name, t.visibility, t.score, t.max_score, int(t.passed),
                  f"{t.cause}/{t.misconception}" if t.cause and t.misconception else t.misconception)
                 for p in result.problems for t in p.tests]
        now = time.time()
        with self._db.write():
            if attempt is not None:
                state = self._db.execute("SELECT state FROM attempts WHERE id = ?", (attempt,)).fetchone()
                if state is None or state[0] == "graded":
                    return None
            grading = self._db.execute(
                "INSERT INTO gradings (student, digest, graded_at, bundle, status, score, max_score, isolation, source,"
                " submitted_at, time_source, late_marked, answers, result, attempt, final, shown) VALUES (?, ?, ?,"
                " COALESCE((SELECT value FROM meta WHERE key = 'bundle'), ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (result.student, result.digest, now, result.status, result.score,
                 result.max_score, isolation, context.source, context.submitted_at, context.time_source,
                 int(context.late_marked), json.dumps(result.answers, allow_nan=True),
                 result.to_json_text(), attempt,
                 result.score if late is None else late.final, shown),
            ).fetchone()[0]
            self._db.executemany("INSERT INTO grading_tests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 [(grading, *test) for test in tests])
            if attempt is not None:
                self._db.execute("UPDATE attempts SET state = 'graded', grading = ? WHERE id = ?", (grading, attempt))
            counted = grading if attempt is None else self._db.execute(
                _COUNTED.format(order=_ORDER[counting]), (result.student,)).fetchone()[0]
            self._db.execute("INSERT INTO counted VALUES (?, ?) ON CONFLICT (student) DO UPDATE SET grading = ?",
                             (result.student, counted, counted))
            if late is not None:
                self._db.execute("INSERT INTO grading_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 (grading, *_late_row(late)[1:]))
            if late is not None and attempt is not None:  # `qkv grade` keeps the whole class's once, at the end
                self._db.execute("DELETE FROM class_late WHERE student = ?", (result.student,))
                self._db.execute("INSERT INTO class_late SELECT ?, due, submitted_at, time_source, late_seconds, raw,"
                                 " penalty, final, max_score, rule, extension FROM grading_late WHERE grading = ?",
                                 (result.student, counted))
        return grading

    def store_class(self, title: str, roster: Optional[Sequence[RosterEntry]], late: Sequence[LateEntry],
                    rules: LateRules = LateRules()) -> None:
        """Replace the class beside the grades in one transaction: the title, the roster (kept as it was when
        `roster` is None), every late outcome, and the late policy they were worked out under."""
        kept_rules = {"due": rules.due, "late": rules.late.to_json() if rules.late else None}
        with self._db.write():
            self._db.executemany("INSERT INTO class_meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value ="
                                 " excluded.value", [("title", title), ("late_rules", json.dumps(kept_rules))])
            if roster is not None:
                self._db.execute("DELETE FROM class_roster")
                self._db.executemany("INSERT INTO class_roster VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                    (s.id, s.name, s.email, s.lms_id, s.section, s.extension, json.dumps(list(s.extra)), i)
                    for i, s in enumerate(roster)])
            self._db.execute("DELETE FROM class_late")
            self._db.executemany("INSERT INTO class_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [_late_row(o) for o in sorted(late, key=lambda o: o.student)])

    def store_late(self, grading: int, entry: LateEntry) -> None:
        """Keep a grading's late outcome worked out again under a changed extension (grade/service.py's
        `settled`), and, when the grading counts, beside the class."""
        with self._db.write():
            self._db.execute("DELETE FROM grading_late WHERE grading = ?", (grading,))
            self._db.execute("INSERT INTO grading_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (grading, *_late_row(entry)[1:]))
            if self._db.execute("SELECT 1 FROM counted WHERE grading = ?", (grading,)).fetchone():
                self._db.execute("DELETE FROM class_late WHERE student = ?", (entry.student,))
                self._db.execute("INSERT INTO class_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _late_row(entry))
