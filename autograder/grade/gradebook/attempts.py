"""The attempts `qkv serve` accepted: stored whole before the student is answered, claimed by one grader at
a time, graded exactly once (writes.py's `record` marks an attempt graded in the grading's transaction).

A grader renews its claims while it grades; a claim not renewed for `stale` seconds (its process was
killed) is taken again by the next grader, so a restart, or another web process, grades what was
accepted and never graded; a second grading of an attempt already graded is refused at `record`. Not
closed: a grader stalled past `stale` whose attempt another graded and an instructor then queued again
could still record it (`record` checks the state, not whose claim it is).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

from autograder.grade.gradebook.database import Database
from autograder.grade.gradebook.records import Attempt, AttemptState, NewAttempt

_SHOWN = ("a.id, a.student, a.received_at, a.filename, a.digest, a.state, a.grading, g.status, g.score, g.max_score,"
          " g.final, (SELECT COUNT(*) FROM counted AS c WHERE c.grading = a.grading), {seed}")
_SEED = {4: "NULL, NULL", 5: "a.seed, g.shown"}  # a gradebook of format 4, read as it is, kept neither
_JOINED = "FROM attempts AS a LEFT JOIN gradings AS g ON g.id = a.grading"


def _attempt(row: Sequence) -> Attempt:
    return Attempt(row[0], row[1], row[2], row[3], row[4], AttemptState(row[5]), row[6], row[7], row[8], row[9],
                   row[10], bool(row[11]), row[12], row[13])


class Attempts:
    _db: Database
    format: int

    @property
    def _shown(self) -> str:
        return _SHOWN.format(seed=_SEED[self.format])

    def accept(self, new: NewAttempt, most: int, most_per_hour: int,
               seed_of: Optional[Callable[[int], int]] = None) -> Optional[str]:
        """Store an accepted attempt, its file included, in one transaction, unless the student has made `most`
        attempts, or `most_per_hour` in the hour before it: then the reason, and nothing is stored. The count
        and the insert are one transaction, so attempts sent at once cannot pass the limit together. `seed_of`
        gives the seed of the student's attempt number N (0 first) of fresh numbers, kept with it."""
        with self._db.write():
            hour, made = self.attempt_counts(new.student, new.received_at - 3600)
            if made >= most:
                return f"you have made all {most} attempts this assignment allows"
            if hour >= most_per_hour:
                return f"you have made {hour} attempts in the last hour, the most it allows; try again later"
            self._db.execute("INSERT INTO attempts (id, student, received_at, filename, digest, body, state, seed)"
                             " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (new.id, new.student, new.received_at, new.filename, new.digest, new.body,
                              AttemptState.QUEUED.value, seed_of(made) if seed_of else None))
        return None

    def answers_before(self, attempt_id: str) -> list[dict[str, Any]]:
        """The written answers of the student's attempts received before this one, oldest first (each as its
        latest grading kept them; attempts not graded yet are left out)."""
        rows = self._db.execute(
            "SELECT g.answers FROM attempts AS a JOIN attempts AS b ON b.student = a.student"
            " JOIN gradings AS g ON g.id = b.grading WHERE a.id = ? AND (b.received_at < a.received_at OR"
            " (b.received_at = a.received_at AND b.id < a.id)) ORDER BY b.received_at, b.id", (attempt_id,))
        return [loaded for (text,) in rows if isinstance(loaded := json.loads(text), dict)]

    def requeue_claimed(self) -> int:
        """Queue again every attempt a grader had taken: for the one process that serves a SQLite gradebook,
        whose graders cannot still be running when it starts."""
        with self._db.write():
            found = self._db.execute("SELECT COUNT(*) FROM attempts WHERE state = 'grading'").fetchone()[0]
            self._db.execute("UPDATE attempts SET state = 'queued', claimed_at = NULL WHERE state = 'grading'")
        return int(found)

    def attempt(self, attempt_id: str) -> Optional[Attempt]:
        row = self._db.execute(f"SELECT {self._shown} {_JOINED} WHERE a.id = ?", (attempt_id,)).fetchone()
        return _attempt(row) if row else None

    def attempt_body(self, attempt_id: str) -> bytes:
        row = self._db.execute("SELECT body FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
        return bytes(row[0]) if row else b""

    def attempts_of(self, student: str) -> list[Attempt]:
        """A student's attempts, newest first."""
        return [_attempt(r) for r in self._db.execute(
            f"SELECT {self._shown} {_JOINED} WHERE a.student = ? ORDER BY a.received_at DESC, a.id", (student,))]

    def attempt_counts(self, student: str, since: float) -> tuple[int, int]:
        """How many attempts a student has made since `since`, and in all."""
        row = self._db.execute("SELECT COUNT(CASE WHEN received_at >= ? THEN 1 END), COUNT(*) FROM attempts"
                               " WHERE student = ?", (since, student)).fetchone()
        return int(row[0]), int(row[1])

    def attempt_totals(self) -> dict[str, tuple[int, int]]:
        """By student: attempts made, and those not graded yet."""
        return {student: (int(made), int(waiting)) for student, made, waiting in self._db.execute(
            "SELECT student, COUNT(*), COUNT(CASE WHEN state <> 'graded' THEN 1 END) FROM attempts GROUP BY student")}

    def claim(self, now: float, stale: float) -> Optional[Attempt]:
        """Take the oldest attempt waiting to be graded (or whose claim went stale), or None."""
        with self._db.write():
            row = self._db.execute(
                "SELECT id FROM attempts WHERE state = 'queued' OR (state = 'grading' AND claimed_at < ?)"
                " ORDER BY received_at, id LIMIT 1", (now - stale,)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE attempts SET state = 'grading', claimed_at = ? WHERE id = ?", (now, row[0]))
        return self.attempt(row[0])

    def renew_claims(self, attempt_ids: Sequence[str], now: float) -> None:
        if attempt_ids:
            with self._db.write():
                self._db.executemany("UPDATE attempts SET claimed_at = ? WHERE id = ? AND state = 'grading'",
                                     [(now, a) for a in attempt_ids])

    def regrade_attempts(self, student: Optional[str] = None) -> int:
        """Queue again every graded attempt (one student's, or everyone's), so the counted one is chosen again
        from new gradings; returns how many."""
        where, args = ("", ()) if student is None else (" AND student = ?", (student,))
        with self._db.write():
            found = self._db.execute(f"SELECT COUNT(*) FROM attempts WHERE state = 'graded'{where}", args).fetchone()
            self._db.execute(f"UPDATE attempts SET state = 'queued', claimed_at = NULL WHERE state = 'graded'{where}",
                             args)
        return int(found[0])

    def waiting(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM attempts WHERE state <> 'graded'").fetchone()[0])
