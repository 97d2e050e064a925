"""The gradebook: an embedded SQLite database in the output folder; `SubmissionResult`s in, rows out.

One transaction per graded submission, so `kill -9` at any moment loses at
most the submissions in flight and never leaves a half-written row; running
the same command again grades exactly what is missing or changed. CSV, JSON
and HTML reports are exports of this database.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path

from autograder.errors import QkvError
from autograder.results import SubmissionResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS submissions (
    student    TEXT PRIMARY KEY,
    digest     TEXT NOT NULL,
    graded_at  REAL NOT NULL,
    status     TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    isolation  TEXT NOT NULL,
    result     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS test_scores (
    student    TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    problem    TEXT NOT NULL,
    test       TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    PRIMARY KEY (student, problem, test)
);
"""


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

    def record(self, result: SubmissionResult, isolation: str) -> None:
        """Store one submission's result in a single transaction (replacing an older one)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM submissions WHERE student = ?", (result.student,))
            self.db.execute(
                "INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (result.student, result.digest, time.time(), result.status, result.score, result.max_score,
                 isolation, json.dumps(result.to_json(), allow_nan=True)),
            )
            self.db.executemany(
                "INSERT INTO test_scores VALUES (?, ?, ?, ?, ?)",
                [(result.student, p.problem_id, t.name, t.score, t.max_score) for p in result.problems for t in p.tests],
            )

    def results(self, known: Mapping[str, SubmissionResult] = {}) -> list[tuple[SubmissionResult, str]]:
        """Every stored result with its isolation, by student; those in `known` (just recorded) are not decoded again."""
        rows = self.db.execute("SELECT student, isolation, result FROM submissions ORDER BY student").fetchall()
        return [(known[student] if student in known else SubmissionResult.from_json(json.loads(result)), isolation)
                for student, isolation, result in rows]
