"""The gradebook: an embedded SQLite database in the output folder, and the one place that speaks SQL to it.

`SubmissionResult`s and the class (roster, late outcomes) go in through `Gradebook`'s writes
(writes.py); everything that reads grades (the history, the exports, the item analysis, the
mistakes across the class, `qkv grade` itself) calls its reads (reads.py, analysis.py) and gets the
frozen records of records.py, never rows. CSV, JSON and HTML reports are exports of this database.
A run killed at any point resumes where it stopped: each grading is one transaction.

`gradings` and `grading_tests` keep every grading ever made (the submission's digest, when, the
bundle's fingerprint, per-test scores, where the file came from, when it was handed in and whether
the LMS marks it LATE); `submissions` points at each student's latest grading, and `test_scores` is a
view of that grading's tests, so a grading's tests are written once. The `class_*` tables hold what
the last `qkv grade` knew of the class. The tables and the format number are in schema.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from autograder.errors import QkvError
from autograder.grade.gradebook.analysis import Analysis
from autograder.grade.gradebook.reads import Reads
from autograder.grade.gradebook.records import (Grading, GradingContext, HandIn, LateEntry, LateRules, LatestGrading,
                                                MistakeHit, RosterEntry, ScoreTable, StoredSubmission, TestKey)
from autograder.grade.gradebook.schema import FORMAT, GRADEBOOK_FILE, SCHEMA
from autograder.grade.gradebook.writes import Writes

__all__ = ["FORMAT", "GRADEBOOK_FILE", "Gradebook", "Grading", "GradingContext", "HandIn", "LateEntry", "LateRules",
           "LatestGrading", "MistakeHit", "RosterEntry", "ScoreTable", "StoredSubmission", "TestKey"]


def _writable(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocked = path.parent.exists() and not path.parent.is_dir()
        what = "exists and is not a folder" if blocked else f"cannot make the output folder: {err.strerror or err}"
        raise QkvError(str(path.parent), what) from None
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        made = db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if made and version != FORMAT:
            db.close()
            raise QkvError(str(path), f"a gradebook of format {version}, this qkv writes format {FORMAT};"
                                      " choose another --out")
        db.executescript(SCHEMA)
    except sqlite3.Error as err:
        db.close()
        raise QkvError(str(path), f"not a gradebook qkv can use ({err}); choose another --out") from None
    return db


def _read_only(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise QkvError(str(path), f"cannot open the gradebook: {err}") from None
    try:
        db.execute("SELECT key, value FROM meta").fetchall()
        version = db.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as err:
        db.close()
        raise QkvError(str(path), f"not a gradebook qkv can read ({err})") from None
    if version != FORMAT:
        db.close()
        raise QkvError(str(path), f"a gradebook of format {version}, this qkv reads format {FORMAT}: grade the class "
                                  "again into another --out")
    return db


class Gradebook(Writes, Reads, Analysis):
    """One gradebook file; `read_only` for the commands that only read grades (nothing is created or changed)."""

    def __init__(self, path: Path, read_only: bool = False):
        self.path = path
        self._db = _read_only(path) if read_only else _writable(path)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Gradebook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
