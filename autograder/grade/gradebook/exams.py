"""What the service keeps of its timed mock exams (`/exams`), beside the accounts (the same SQLite file or PostgreSQL
schema).

One row per sitting (`exam_sittings`): its random id (the paper's address), the exam, the student, the problems of
their paper (JSON ids, fixed at the start, so a bank rebuilt during the exam changes no paper), when it started,
when it ends (the start plus the student's time, by the server's clock, stored at the start and never moved) and
when it was handed in early. One row per item answered (`exam_answers`): the answers typed, by part label (JSON),
and when they were saved. An answer is committed in the request that gives it, before the reply, and only while its
sitting runs: the check and the write are one transaction, so no answer lands after the end.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from autograder.grade.gradebook.accounts import open_service_database

SCHEMA = """
CREATE TABLE IF NOT EXISTS exam_sittings (
    id        TEXT PRIMARY KEY,
    exam      TEXT NOT NULL,
    student   TEXT NOT NULL,
    problems  TEXT NOT NULL,
    started   REAL NOT NULL,
    ends      REAL NOT NULL,
    handed_in REAL,
    UNIQUE (exam, student)
);
CREATE TABLE IF NOT EXISTS exam_answers (
    sitting TEXT NOT NULL,
    item    INTEGER NOT NULL,
    answers TEXT NOT NULL,
    saved   REAL NOT NULL,
    PRIMARY KEY (sitting, item)
);
"""
ID_CHARS = 40  # a sitting's id is 16 url-safe characters: a longer one is no id, refused before any lookup


@dataclass(frozen=True)
class Sitting:
    id: str
    exam: str
    student: str
    problems: tuple[str, ...]
    started: float
    ends: float
    handed_in: Optional[float] = None

    def over(self, now: float) -> bool:
        return self.handed_in is not None or now >= self.ends

    def ended(self) -> float:
        """When it ended (or will): handed in, else its end time."""
        return self.handed_in if self.handed_in is not None else self.ends


_COLUMNS = "id, exam, student, problems, started, ends, handed_in"


def _sitting(row) -> Sitting:
    return Sitting(row[0], row[1], row[2], tuple(json.loads(row[3])), row[4], row[5], row[6])


class ExamStore:
    """Sittings and their saved answers, in the accounts' database (`where`: its file or PostgreSQL URL)."""

    def __init__(self, where: Union[Path, str]):
        self.where, self._db = open_service_database(where, SCHEMA)

    def close(self) -> None:
        self._db.close()

    def start(self, exam: str, student: str, problems: tuple[str, ...], now: float, ends: float) -> Sitting:
        """`student`'s sitting of `exam`, begun now unless begun before (then the first, unchanged: a student
        starts an exam once)."""
        with self._db.write():
            self._db.execute("INSERT INTO exam_sittings (id, exam, student, problems, started, ends) "
                             "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (exam, student) DO NOTHING",
                             (secrets.token_urlsafe(12), exam, student, json.dumps(list(problems)), now, ends))
        found = self.of(exam, student)
        assert found is not None
        return found

    def of(self, exam: str, student: str) -> Optional[Sitting]:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM exam_sittings WHERE exam = ? AND student = ?",
                               (exam, student)).fetchone()
        return _sitting(row) if row else None

    def sitting(self, sitting: str, student: str) -> Optional[Sitting]:
        """`student`'s sitting of that id; None for another's as for one that does not exist."""
        if len(sitting) > ID_CHARS:
            return None
        row = self._db.execute(f"SELECT {_COLUMNS} FROM exam_sittings WHERE id = ? AND student = ?",
                               (sitting, student)).fetchone()
        return _sitting(row) if row else None

    def everyone(self, exam: str) -> list[Sitting]:
        return [_sitting(row) for row in self._db.execute(
            f"SELECT {_COLUMNS} FROM exam_sittings WHERE exam = ? ORDER BY student", (exam,))]

    def save(self, sitting: str, student: str, item: int, answers: dict[str, str], now: float) -> bool:
        """Keep the item's answers (committed before this returns), replacing those saved before; False (nothing
        kept) when the sitting is not `student`'s or is over by `now`."""
        with self._db.write():
            running = self._db.execute(
                "SELECT id FROM exam_sittings WHERE id = ? AND student = ? AND handed_in IS NULL AND ends > ?",
                (sitting, student, now)).fetchone()
            if running is None:
                return False
            self._db.execute("INSERT INTO exam_answers (sitting, item, answers, saved) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (sitting, item) DO UPDATE SET answers = excluded.answers, "
                             "saved = excluded.saved", (sitting, item, json.dumps(answers), now))
        return True

    def hand_in(self, sitting: str, student: str, now: float) -> bool:
        """End the sitting now; False when it is not `student`'s or was over already."""
        with self._db.write():
            done = self._db.execute("UPDATE exam_sittings SET handed_in = ? WHERE id = ? AND student = ? "
                                    "AND handed_in IS NULL AND ends > ? RETURNING id",
                                    (now, sitting, student, now)).fetchone()
        return done is not None

    def answers(self, sitting: str) -> dict[int, dict[str, str]]:
        """The sitting's saved answers, by item number."""
        return {int(row[0]): json.loads(row[1]) for row in self._db.execute(
            "SELECT item, answers FROM exam_answers WHERE sitting = ?", (sitting,))}

    def answered(self, exam: str) -> dict[str, int]:
        """How many items each sitting of `exam` has answers saved for, by sitting id."""
        return {row[0]: int(row[1]) for row in self._db.execute(
            "SELECT a.sitting, COUNT(*) FROM exam_answers a JOIN exam_sittings s ON s.id = a.sitting "
            "WHERE s.exam = ? GROUP BY a.sitting", (exam,))}
