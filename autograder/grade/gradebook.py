"""The gradebook: an embedded SQLite database in the output folder; `SubmissionResult`s in, rows out.

One transaction per graded submission, so `kill -9` at any moment loses at
most the submissions in flight and never leaves a half-written row; running
the same command again grades exactly what is missing or changed. CSV, JSON
and HTML reports are exports of this database.

`gradings` and `grading_tests` keep every grading ever made (the submission's digest, when,
the bundle's fingerprint, per-test scores, where the file came from and when it was handed in);
`submissions` points at each student's latest grading, and `test_scores` is a view of that
grading's tests, so a grading's tests are written once. autograder/classroom/history.py reads
them (grading_tests is clustered by grading, so one grading's tests, or a whole class's in
order, are read without a sort).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import QkvError
from autograder.results import SubmissionResult

FORMAT = 2  # PRAGMA user_version; 1 kept each latest grading's tests a second time
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gradings (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    student      TEXT NOT NULL,
    digest       TEXT NOT NULL,
    graded_at    REAL NOT NULL,
    bundle       TEXT NOT NULL,
    status       TEXT NOT NULL,
    score        REAL NOT NULL,
    max_score    REAL NOT NULL,
    isolation    TEXT NOT NULL,
    source       TEXT NOT NULL,
    submitted_at TEXT,
    time_source  TEXT NOT NULL,
    answers      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS gradings_by_student ON gradings (student, id);
CREATE TABLE IF NOT EXISTS grading_tests (
    grading       INTEGER NOT NULL REFERENCES gradings(id) ON DELETE CASCADE,
    problem       TEXT NOT NULL,
    test          TEXT NOT NULL,
    visibility    TEXT NOT NULL,
    score         REAL NOT NULL,
    max_score     REAL NOT NULL,
    passed        INTEGER NOT NULL,
    misconception TEXT,
    PRIMARY KEY (grading, problem, test)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS submissions (
    student    TEXT PRIMARY KEY,
    digest     TEXT NOT NULL,
    graded_at  REAL NOT NULL,
    status     TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    isolation  TEXT NOT NULL,
    result     TEXT NOT NULL,
    grading    INTEGER NOT NULL REFERENCES gradings(id)
);
CREATE VIEW IF NOT EXISTS test_scores (student, problem, test, score, max_score) AS
    SELECT s.student, t.problem, t.test, t.score, t.max_score
    FROM submissions AS s JOIN grading_tests AS t ON t.grading = s.grading;
PRAGMA user_version = {FORMAT};
"""


@dataclass(frozen=True)
class GradingContext:
    """What intake knew about the graded file, kept with the grading."""

    source: str = ""  # where in SUBMISSIONS, as shown
    submitted_at: str | None = None  # ISO 8601
    time_source: str = ""  # "Gradescope metadata", "zip entry time", "file mtime", ...


class Gradebook:
    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            blocked = path.parent.exists() and not path.parent.is_dir()
            what = "exists and is not a folder" if blocked else f"cannot make the output folder: {err.strerror or err}"
            raise QkvError(str(path.parent), what) from None
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            made = self.db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if made and version != FORMAT:
                self.db.close()
                raise QkvError(str(path), f"a gradebook of format {version}, this qkv writes format {FORMAT};"
                                          " choose another --out")
            self.db.executescript(SCHEMA)
        except sqlite3.Error as err:
            self.db.close()
            raise QkvError(str(path), f"not a gradebook qkv can use ({err}); choose another --out") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Gradebook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_assignment(self, name: str, bundle_fingerprint: str) -> str | None:
        """Bind this gradebook to one assignment build; returns a reason when it belongs to another."""
        rows = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if not rows:
            with self.db:
                self.db.executemany("INSERT INTO meta VALUES (?, ?)",
                                    [("assignment", name), ("bundle", bundle_fingerprint)])
            return None
        if rows.get("assignment") != name:
            return f"this gradebook belongs to assignment '{rows.get('assignment')}'"
        if rows.get("bundle") != bundle_fingerprint:
            return "the assignment was rebuilt since this gradebook was started"
        return None

    def rebind(self, bundle_fingerprint: str) -> None:
        with self.db:
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'bundle'", (bundle_fingerprint,))

    def graded_digests(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT student, digest FROM submissions").fetchall())

    def record(self, result: SubmissionResult, isolation: str, context: GradingContext = GradingContext()) -> None:
        """Store one grading of a submission in a single transaction; it becomes the student's latest."""
        # a mistake of a function built on is stored as "that problem/mistake", so the class counts it where it starts
        tests = [(p.problem_id, t.name, t.visibility, t.score, t.max_score, int(t.passed),
                  f"{t.cause}/{t.misconception}" if t.cause and t.misconception else t.misconception)
                 for p in result.problems for t in p.tests]
        now = time.time()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            grading = self.db.execute(
                "INSERT INTO gradings (student, digest, graded_at, bundle, status, score, max_score, isolation, source,"
                " submitted_at, time_source, answers) VALUES (?, ?, ?,"
                " COALESCE((SELECT value FROM meta WHERE key = 'bundle'), ''), ?, ?, ?, ?, ?, ?, ?, ?)",
                (result.student, result.digest, now, result.status, result.score,
                 result.max_score, isolation, context.source, context.submitted_at, context.time_source,
                 json.dumps(result.answers, allow_nan=True)),
            ).lastrowid
            self.db.executemany("INSERT INTO grading_tests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                [(grading, *test) for test in tests])
            self.db.execute(
                "INSERT OR REPLACE INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (result.student, result.digest, now, result.status, result.score, result.max_score,
                 isolation, json.dumps(result.to_json(), allow_nan=True), grading),
            )

    def results(self, known: Mapping[str, SubmissionResult] = {}) -> list[tuple[SubmissionResult, str]]:
        """Every stored result with its isolation, by student; those in `known` (just recorded) are not decoded again."""
        rows = self.db.execute("SELECT student, isolation, result FROM submissions ORDER BY student").fetchall()
        return [(known[student] if student in known else SubmissionResult.from_json(json.loads(result)), isolation)
                for student, isolation, result in rows]
