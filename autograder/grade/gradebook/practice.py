"""What the service keeps of practice (`/practice`), beside the accounts (the same SQLite file or PostgreSQL schema).

One row per variant a student was given (`practice_variants`): its random id (the page's address), the student, the
problem, the seed of its numbers, why it was chosen and when; once answered also when, the share of the points
earned, the misconceptions named and the answers typed (JSON), so the page shows the same verdicts again. Only
these facts are kept: mastery, held misconceptions and reviews are replayed from them by the practice rule
(autograder/practice/rule.py), as the offline drill replays its history file. An answer is committed (durably) in
the request that gives it, before the reply; a variant is answered once (a second post of the form changes nothing).

A code problem's try (`practice_code`, one row a variant) keeps the code handed in, when, the practice grader's
claim on it and, once graded in the sandbox, the feedback shown (JSON): its variant is answered in the same
transaction. These are practice tries only: no attempt, grading or export of an assignment ever reads them.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from autograder.grade.gradebook.accounts import open_service_database
from autograder.practice.rule import Try

SCHEMA = """
CREATE TABLE IF NOT EXISTS practice_variants (
    id             TEXT PRIMARY KEY,
    student        TEXT NOT NULL,
    problem        TEXT NOT NULL,
    seed           BIGINT NOT NULL,
    reason         TEXT NOT NULL,
    shown          REAL NOT NULL,
    answered       REAL,
    score          REAL,
    misconceptions TEXT,
    answers        TEXT
);
CREATE INDEX IF NOT EXISTS practice_variants_by_student ON practice_variants (student, shown);
CREATE INDEX IF NOT EXISTS practice_variants_answered ON practice_variants (answered);
CREATE TABLE IF NOT EXISTS practice_code (
    variant   TEXT PRIMARY KEY,
    student   TEXT NOT NULL,
    source    TEXT NOT NULL,
    handed    REAL NOT NULL,
    claimed   REAL,
    feedback  TEXT
);
CREATE INDEX IF NOT EXISTS practice_code_waiting ON practice_code (feedback, handed);
"""
ID_CHARS = 40  # a variant's id is 16 url-safe characters: a longer one is no id, refused before any lookup


@dataclass(frozen=True)
class PracticeVariant:
    id: str
    student: str
    problem: str
    seed: int
    reason: str  # why it was given, as the page says it
    shown: float
    answered: Optional[float] = None
    score: Optional[float] = None
    misconceptions: tuple[str, ...] = ()
    answers: Optional[dict[str, str]] = None  # None when skipped (or not answered yet)

    def as_try(self) -> Try:
        assert self.answered is not None and self.score is not None
        return Try(self.problem, self.seed, _moment(self.answered), self.score, self.misconceptions)


@dataclass(frozen=True)
class CodeTry:
    """A code problem's try: the code handed in, when, and once graded the feedback shown (plain data)."""

    variant: str
    student: str
    source: str
    handed: float
    feedback: Optional[dict] = None


def _moment(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


_COLUMNS = "id, student, problem, seed, reason, shown, answered, score, misconceptions, answers"


def _variant(row) -> PracticeVariant:
    return PracticeVariant(row[0], row[1], row[2], int(row[3]), row[4], row[5], row[6], row[7],
                           tuple(json.loads(row[8])) if row[8] else (), json.loads(row[9]) if row[9] else None)


class PracticeStore:
    """Practice variants and tries, in the accounts' database (`where`: its file or PostgreSQL URL)."""

    def __init__(self, where: Union[Path, str]):
        self.location = where  # as given (a URL with its password): what another connection opens
        self.where, self._db = open_service_database(where, SCHEMA)

    def close(self) -> None:
        self._db.close()

    def give(self, student: str, problem: str, seed: int, reason: str, now: float) -> str:
        """A new variant for `student`: its id."""
        variant = secrets.token_urlsafe(12)
        with self._db.write():
            self._db.execute("INSERT INTO practice_variants (id, student, problem, seed, reason, shown) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (variant, student, problem, seed, reason, now))
        return variant

    def variant(self, variant: str, student: str) -> Optional[PracticeVariant]:
        """`student`'s variant of that id; None for another's as for one that does not exist."""
        if len(variant) > ID_CHARS:
            return None
        row = self._db.execute(f"SELECT {_COLUMNS} FROM practice_variants WHERE id = ? AND student = ?",
                               (variant, student)).fetchone()
        return _variant(row) if row else None

    def waiting(self, student: str) -> Optional[PracticeVariant]:
        """The variant `student` was given last, when it is not answered yet (to resume it)."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM practice_variants WHERE student = ? "
                               "ORDER BY shown DESC, id LIMIT 1", (student,)).fetchone()
        found = _variant(row) if row else None
        return found if found is not None and found.answered is None else None

    def answer(self, variant: str, student: str, now: float, score: float, misconceptions: tuple[str, ...],
               answers: Optional[dict[str, str]]) -> bool:
        """Keep the try (committed before this returns); False when the variant was answered already."""
        with self._db.write():
            done = self._db.execute(
                "UPDATE practice_variants SET answered = ?, score = ?, misconceptions = ?, answers = ? "
                "WHERE id = ? AND student = ? AND answered IS NULL RETURNING id",
                (now, score, json.dumps(list(misconceptions)), None if answers is None else json.dumps(answers),
                 variant, student)).fetchone()
        return done is not None

    def tries(self, student: str) -> list[PracticeVariant]:
        """`student`'s answered variants, oldest first."""
        return [_variant(row) for row in self._db.execute(
            f"SELECT {_COLUMNS} FROM practice_variants WHERE student = ? AND answered IS NOT NULL "
            "ORDER BY answered, id", (student,))]

    def everyone(self) -> dict[str, list[PracticeVariant]]:
        """Every student's answered variants, oldest first: the class view's."""
        found: dict[str, list[PracticeVariant]] = {}
        for row in self._db.execute(f"SELECT {_COLUMNS} FROM practice_variants WHERE answered IS NOT NULL "
                                    "ORDER BY student, answered, id"):
            found.setdefault(row[1], []).append(_variant(row))
        return found

    # ------------------------------------------------------------------ code problems' tries

    def hand_in_code(self, variant: str, student: str, source: str, now: float) -> bool:
        """Keep `student`'s code for their unanswered variant (committed before this returns); False when the
        variant has an answer or code already (a second post changes nothing)."""
        with self._db.write():
            open_ = self._db.execute("SELECT id FROM practice_variants WHERE id = ? AND student = ? "
                                     "AND answered IS NULL", (variant, student)).fetchone()
            if open_ is None:
                return False
            done = self._db.execute("INSERT INTO practice_code (variant, student, source, handed) VALUES (?, ?, ?, ?) "
                                    "ON CONFLICT (variant) DO NOTHING RETURNING variant",
                                    (variant, student, source, now)).fetchone()
        return done is not None

    def code_try(self, variant: str, student: str) -> Optional[CodeTry]:
        """`student`'s code try of that variant; None for another's, or none handed in."""
        row = self._db.execute("SELECT variant, student, source, handed, feedback FROM practice_code "
                               "WHERE variant = ? AND student = ?", (variant, student)).fetchone()
        return None if row is None else CodeTry(row[0], row[1], row[2], row[3],
                                                json.loads(row[4]) if row[4] else None)

    def claim_code(self, now: float, stale: float, problems: tuple[str, ...]) -> Optional[tuple[CodeTry, str]]:
        """The longest-waiting code try of one of `problems` not graded and not claimed within `stale` seconds,
        claimed now, and its problem; None when none waits."""
        if not problems:
            return None
        among = ", ".join("?" * len(problems))
        with self._db.write():
            row = self._db.execute(
                "SELECT c.variant, c.student, c.source, c.handed, v.problem FROM practice_code c "
                "JOIN practice_variants v ON v.id = c.variant WHERE c.feedback IS NULL "
                f"AND (c.claimed IS NULL OR c.claimed < ?) AND v.problem IN ({among}) "
                "ORDER BY c.handed, c.variant LIMIT 1", (now - stale, *problems)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE practice_code SET claimed = ? WHERE variant = ?", (now, row[0]))
        return CodeTry(row[0], row[1], row[2], row[3]), row[4]

    def judge_code(self, variant: str, student: str, now: float, score: float, misconceptions: tuple[str, ...],
                   feedback: dict) -> bool:
        """Keep a code try's grading: its feedback and its variant answered, in one transaction; False when it was
        judged already (by a grader that had lost its claim)."""
        with self._db.write():
            done = self._db.execute("UPDATE practice_code SET feedback = ? WHERE variant = ? AND student = ? "
                                    "AND feedback IS NULL RETURNING variant",
                                    (json.dumps(feedback), variant, student)).fetchone()
            if done is None:
                return False
            self._db.execute(
                "UPDATE practice_variants SET answered = ?, score = ?, misconceptions = ?, answers = ? "
                "WHERE id = ? AND student = ? AND answered IS NULL",
                (now, score, json.dumps(list(misconceptions)), json.dumps({}), variant, student))
        return True
