"""The class's tables beside the grades in gradebook.sqlite: the roster a run used and each student's late outcome.

Written by `qkv grade` (each run replaces them in one transaction, so a changed extension takes
effect without regrading); read by the exports, `qkv history` and `qkv stats`. `open_gradebook`
opens a grading folder read-only for those commands, or says in one line why it cannot.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import Iterator, Optional

from autograder.classroom.deadlines import LateOutcome
from autograder.classroom.roster import Roster, Student, parse_extension
from autograder.errors import QkvError

GRADEBOOK_FILE = "gradebook.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS class_roster (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, lms_id TEXT NOT NULL, section TEXT NOT NULL,
    extension TEXT NOT NULL, extra TEXT NOT NULL, position INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS class_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS class_late (
    student TEXT PRIMARY KEY, due TEXT, submitted_at TEXT, time_source TEXT NOT NULL, late_seconds REAL NOT NULL,
    raw REAL NOT NULL, penalty REAL NOT NULL, final REAL NOT NULL, max_score REAL NOT NULL, rule TEXT NOT NULL,
    extension TEXT NOT NULL
);
"""


def _extension_text(student: Student) -> str:
    ext = student.extension
    if ext is None:
        return ""
    return f"{ext.hours:g}" if ext.hours is not None else ext.due.isoformat()


def store_class(db: sqlite3.Connection, roster: Optional[Roster], late: dict[str, LateOutcome], title: str) -> None:
    db.executescript(SCHEMA)
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR REPLACE INTO class_meta VALUES ('title', ?)", (title,))
        if roster is not None:
            db.execute("DELETE FROM class_roster")
            db.executemany("INSERT INTO class_roster VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                (s.id, s.name, s.email, s.lms_id, s.section, _extension_text(s), json.dumps(list(s.extra)), i)
                for i, s in enumerate(roster.students)])
        db.execute("DELETE FROM class_late")
        db.executemany("INSERT INTO class_late VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            (student, o.due.isoformat() if o.due else None, o.submitted_at.isoformat() if o.submitted_at else None,
             o.time_source, o.late_seconds, o.raw, o.penalty, o.final, o.max_score, o.rule, o.extension)
            for student, o in sorted(late.items())])


def _has(db: sqlite3.Connection, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def stored_title(db: sqlite3.Connection) -> str:
    if not _has(db, "class_meta"):
        return ""
    row = db.execute("SELECT value FROM class_meta WHERE key = 'title'").fetchone()
    return row[0] if row else ""


def stored_roster(db: sqlite3.Connection) -> Optional[Roster]:
    if not _has(db, "class_roster"):
        return None
    rows = db.execute("SELECT id, name, email, lms_id, section, extension, extra FROM class_roster ORDER BY position").fetchall()
    if not rows:
        return None
    return Roster(tuple(Student(i, n, e, lms, sec, parse_extension(ext), tuple(tuple(x) for x in json.loads(extra)))
                        for i, n, e, lms, sec, ext, extra in rows), "the gradebook's roster")


def stored_late(db: sqlite3.Connection) -> dict[str, LateOutcome]:
    if not _has(db, "class_late"):
        return {}
    moment = lambda text: dt.datetime.fromisoformat(text) if text else None  # noqa: E731
    return {student: LateOutcome(raw, penalty, final, max_score, rule, moment(due), moment(submitted), source, late,
                                 ext)
            for student, due, submitted, source, late, raw, penalty, final, max_score, rule, ext
            in db.execute("SELECT * FROM class_late")}


@contextlib.contextmanager
def open_gradebook(grades: Path, name: str) -> Iterator[sqlite3.Connection]:
    """A grading folder's gradebook, read-only; a missing folder, file or a gradebook of another assignment is an error."""
    path = grades / GRADEBOOK_FILE
    if not grades.is_dir():
        raise QkvError(str(grades), f"no such grades folder: run `qkv grade {name} SUBMISSIONS --out {grades}` first")
    if not path.is_file():
        raise QkvError(str(grades), f"no gradebook here ({GRADEBOOK_FILE}): run `qkv grade {name} SUBMISSIONS` first")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise QkvError(str(path), f"cannot open the gradebook: {err}") from None
    try:
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise QkvError(str(path), f"not a gradebook qkv can read ({err})") from None
        if meta.get("assignment") != name:
            raise QkvError(str(path), f"this gradebook belongs to assignment '{meta.get('assignment')}', not '{name}'")
        yield db
    finally:
        db.close()
