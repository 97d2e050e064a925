"""What the service keeps as an LTI 1.3 tool.

Beside the accounts (the same SQLite file or PostgreSQL schema), LtiStore: the OIDC logins' nonces and state and
each launch's claims, with an expiry; which roster row each LMS user (`sub` per issuer) was matched to on their first
launch, so that later launches need nothing else and the row is no other user's; each student's LMS user id and grade service from their latest launch;
the LMS line item each assignment's scores go to; the LMS course an assignment was launched from (its roster
service), and each roster sync's differences (the history `qkv lti sync` keeps). PyLTI1p3 asks its storage for a
value by key; a nonce is taken, not read: `take` deletes the row in the same transaction that finds it, so one
id_token signs in once, whichever of several web processes it reaches.

In each assignment's gradebook, ScoreOutbox: every counted grading of an attempt, queued to be posted to the LMS
(table `lti_scores`, one row per grading, so a grading is queued once however often the queue is filled), marked
sent once the LMS took it, or tried again later with the error kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Optional, Union

from autograder.grade.gradebook.accounts import open_service_database
from autograder.grade.gradebook.database import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS lti_values (
    key     TEXT PRIMARY KEY,
    value   TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS lti_values_by_expiry ON lti_values (expires);
CREATE TABLE IF NOT EXISTS lti_people (
    person    TEXT PRIMARY KEY,
    issuer    TEXT NOT NULL,
    sub       TEXT NOT NULL,
    grades    TEXT NOT NULL,
    launched  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS lti_claims (
    issuer  TEXT NOT NULL,
    sub     TEXT NOT NULL,
    student TEXT NOT NULL,
    claimed REAL NOT NULL,
    PRIMARY KEY (issuer, sub),
    UNIQUE (issuer, student)
);
CREATE TABLE IF NOT EXISTS lti_contexts (
    assignment  TEXT PRIMARY KEY,
    issuer      TEXT NOT NULL,
    context     TEXT NOT NULL,
    memberships TEXT NOT NULL,
    launched    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS lti_syncs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    assignment TEXT NOT NULL,
    at         REAL NOT NULL,
    diff       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lti_lineitems (
    assignment TEXT NOT NULL,
    issuer     TEXT NOT NULL,
    url        TEXT NOT NULL,
    PRIMARY KEY (assignment, issuer)
);
"""


@dataclass(frozen=True)
class LmsPerson:
    """Where a student's scores go: their LMS, their user id there, its grade service claim (scope, lineitems)."""

    issuer: str
    sub: str
    grades: dict
KEY_CHARS = 300  # PyLTI1p3 makes keys of a prefix and a random id: a longer one (a hostile state) is none of them


class LtiStore:
    """Launch values that expire, in the accounts' database (`where`: its file or PostgreSQL URL)."""

    def __init__(self, where: Union[Path, str]):
        self.where, self._db = open_service_database(where, SCHEMA)

    def close(self) -> None:
        self._db.close()

    def put(self, key: str, value: Any, expires: float, now: float) -> None:
        with self._db.write():
            self._db.execute("DELETE FROM lti_values WHERE expires < ?", (now,))
            self._db.execute("INSERT INTO lti_values VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE "
                             "SET value = excluded.value, expires = excluded.expires",
                             (key, json.dumps(value), expires))

    def get(self, key: str, now: float) -> Optional[Any]:
        if len(key) > KEY_CHARS:
            return None
        row = self._db.execute("SELECT value FROM lti_values WHERE key = ? AND expires >= ?", (key, now)).fetchone()
        return json.loads(row[0]) if row else None

    def take(self, key: str, now: float) -> Optional[Any]:
        """The value, removed: a second `take` of the same key (a replayed nonce) finds nothing."""
        if len(key) > KEY_CHARS:
            return None
        with self._db.write():
            row = self._db.execute("DELETE FROM lti_values WHERE key = ? AND expires >= ? RETURNING value",
                                   (key, now)).fetchone()
        return json.loads(row[0]) if row else None

    # ------------------------------------------------------------------ students and line items

    def remember(self, person: str, issuer: str, sub: str, grades: dict, now: float) -> None:
        """A student's latest launch: their LMS user id and its grade service, for their scores."""
        with self._db.write():
            self._db.execute("INSERT INTO lti_people VALUES (?, ?, ?, ?, ?) ON CONFLICT (person) DO UPDATE SET "
                             "issuer = excluded.issuer, sub = excluded.sub, grades = excluded.grades, "
                             "launched = excluded.launched", (person, issuer, sub, json.dumps(grades), now))

    def claim(self, issuer: str, sub: str, student: str, now: float) -> bool:
        """Keeps that `sub` at `issuer` is roster row `student`; False if either was already kept otherwise (a
        launch racing another for the same row), which the launch then refuses."""
        with self._db.write():
            self._db.execute("INSERT INTO lti_claims VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                             (issuer, sub, student, now))
            row = self._db.execute("SELECT student FROM lti_claims WHERE issuer = ? AND sub = ?",
                                   (issuer, sub)).fetchone()
        return row is not None and row[0] == student

    def claimed(self, issuer: str, sub: str) -> Optional[str]:
        row = self._db.execute("SELECT student FROM lti_claims WHERE issuer = ? AND sub = ?", (issuer, sub)).fetchone()
        return row[0] if row else None

    def claimant(self, issuer: str, student: str) -> Optional[str]:
        row = self._db.execute("SELECT sub FROM lti_claims WHERE issuer = ? AND student = ?",
                               (issuer, student)).fetchone()
        return row[0] if row else None

    def claims(self, issuer: str) -> dict[str, str]:
        """Every kept claim of `issuer`: {sub: student}."""
        return {r[0]: r[1] for r in self._db.execute("SELECT sub, student FROM lti_claims WHERE issuer = ?",
                                                     (issuer,))}

    def person(self, person: str) -> Optional[LmsPerson]:
        row = self._db.execute("SELECT issuer, sub, grades FROM lti_people WHERE person = ?", (person,)).fetchone()
        return LmsPerson(row[0], row[1], json.loads(row[2])) if row else None

    def lineitem(self, assignment: str, issuer: str) -> Optional[str]:
        row = self._db.execute("SELECT url FROM lti_lineitems WHERE assignment = ? AND issuer = ?",
                               (assignment, issuer)).fetchone()
        return row[0] if row else None

    def keep_lineitem(self, assignment: str, issuer: str, url: str) -> None:
        with self._db.write():
            self._db.execute("INSERT INTO lti_lineitems VALUES (?, ?, ?) ON CONFLICT (assignment, issuer) DO UPDATE "
                             "SET url = excluded.url", (assignment, issuer, url))

    def forget_lineitem(self, assignment: str, issuer: str) -> None:
        with self._db.write():
            self._db.execute("DELETE FROM lti_lineitems WHERE assignment = ? AND issuer = ?", (assignment, issuer))

    def keep_context(self, assignment: str, issuer: str, context: str, memberships: str, now: float) -> None:
        """The LMS course (and its roster service) an assignment was last launched from."""
        with self._db.write():
            self._db.execute("INSERT INTO lti_contexts VALUES (?, ?, ?, ?, ?) ON CONFLICT (assignment) DO UPDATE SET "
                             "issuer = excluded.issuer, context = excluded.context, memberships = "
                             "excluded.memberships, launched = excluded.launched",
                             (assignment, issuer, context, memberships, now))

    def context(self, assignment: str) -> Optional[tuple[str, str, str]]:
        """(issuer, context id, memberships URL) of the assignment's latest launch, or None."""
        row = self._db.execute("SELECT issuer, context, memberships FROM lti_contexts WHERE assignment = ?",
                               (assignment,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def keep_sync(self, assignment: str, diff: dict, now: float) -> int:
        """One roster sync's differences, kept in the history; returns its number."""
        with self._db.write():
            return int(self._db.execute("INSERT INTO lti_syncs (assignment, at, diff) VALUES (?, ?, ?) RETURNING id",
                                        (assignment, now, json.dumps(diff))).fetchone()[0])

    def last_sync(self, assignment: str) -> Optional[tuple[int, float, dict]]:
        row = self._db.execute("SELECT id, at, diff FROM lti_syncs WHERE assignment = ? ORDER BY id DESC LIMIT 1",
                               (assignment,)).fetchone()
        return (int(row[0]), row[1], json.loads(row[2])) if row else None

    def syncs(self, assignment: str) -> list[tuple[int, float, dict]]:
        return [(int(r[0]), r[1], json.loads(r[2])) for r in self._db.execute(
            "SELECT id, at, diff FROM lti_syncs WHERE assignment = ? ORDER BY id", (assignment,))]


@dataclass(frozen=True)
class QueuedScore:
    grading: int
    attempt: str
    student: str
    final: float
    max_score: float
    graded_at: float
    tries: int


class ScoreOutbox:
    """Counted gradings on their way to the LMS (a part of Gradebook)."""

    _db: Database

    def queue_counted(self, now: float) -> int:
        """Queue each counted grading of an attempt not queued before; returns how many were new."""
        with self._db.write():
            return len(self._db.execute(
                "INSERT INTO lti_scores (grading, attempt, student, sent_at, tries, next_at, error)"
                " SELECT g.id, g.attempt, g.student, NULL, 0, ?, '' FROM counted AS c JOIN gradings AS g"
                " ON g.id = c.grading WHERE g.attempt IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM lti_scores AS s WHERE s.grading = g.id) RETURNING grading", (now,)))

    def due_scores(self, now: float, most: int = 20) -> list[QueuedScore]:
        return [QueuedScore(*row) for row in self._db.execute(
            "SELECT s.grading, s.attempt, s.student, g.final, g.max_score, g.graded_at, s.tries FROM lti_scores AS s"
            " JOIN gradings AS g ON g.id = s.grading WHERE s.sent_at IS NULL AND s.next_at <= ?"
            " ORDER BY s.next_at, s.grading LIMIT ?", (now, most))]

    def score_sent(self, grading: int, now: float) -> None:
        with self._db.write():
            self._db.execute("UPDATE lti_scores SET sent_at = ?, error = '' WHERE grading = ?", (now, grading))

    def score_later(self, grading: int, when: float, error: str, tried: bool = True) -> None:
        """Try again at `when`; `tried`: it was sent and failed (else it waits for something, a student's launch)."""
        with self._db.write():
            self._db.execute("UPDATE lti_scores SET next_at = ?, error = ?, tries = tries + ? WHERE grading = ?",
                             (when, error[:500], int(tried), grading))
