"""The gradebook: an embedded SQLite database in the output folder (or a PostgreSQL schema for `qkv serve`),
and the one place that speaks SQL to it.

`SubmissionResult`s and the class (roster, late outcomes) go in through `Gradebook`'s writes
(writes.py); attempts that `qkv serve` accepted go in and are claimed for grading through attempts.py;
everything that reads grades (the history, the exports, the item analysis, the mistakes across the
class, `qkv grade` itself, the service's pages) calls its reads (reads.py, analysis.py) and gets the
frozen records of records.py, never rows. CSV, JSON and HTML reports are exports of this database.
A run killed at any point resumes where it stopped: each grading is one transaction.

`gradings` and `grading_tests` keep every grading ever made (the submission's digest, when, the
bundle's fingerprint, the whole result, per-test scores, where the file came from, when it was handed
in and whether the LMS marks it LATE); `counted` points at the grading that counts for each student
(`qkv grade`: the latest; `qkv serve`: the latest or best attempt, as the manifest says), and the
views `submissions` and `test_scores` read it. The `class_*` tables hold what the last `qkv grade`
knew of the class. The tables and the format number are in schema.py; the two databases in database.py.
The service's own tables sit beside its accounts: accounts.py, lti.py (its LTI launches) and practice.py (the
/practice variants and tries, which the practice rule replays).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from autograder.errors import QkvError
from autograder.grade.gradebook.analysis import Analysis
from autograder.grade.gradebook.attempts import Attempt, Attempts, NewAttempt
from autograder.grade.gradebook.database import (Database, database_errors, is_postgres, open_postgres, open_sqlite,
                                                 schema_name, shown_url)
from autograder.grade.gradebook.lti import ScoreOutbox
from autograder.grade.gradebook.reads import Reads
from autograder.grade.gradebook.records import (CountedLate, Grading, GradingContext, HandIn, LateEntry, LateRules, LatestGrading,
                                                MistakeHit, RosterEntry, ScoreTable, StoredSubmission, TestKey)
from autograder.grade.gradebook.schema import FORMAT, GRADEBOOK_FILE, SCHEMA
from autograder.grade.gradebook.writes import Writes

__all__ = ["Attempt", "CountedLate", "NewAttempt", "FORMAT", "GRADEBOOK_FILE", "Gradebook", "Grading", "GradingContext", "HandIn", "LateEntry", "LateRules",
           "LatestGrading", "MistakeHit", "RosterEntry", "ScoreTable", "StoredSubmission", "TestKey"]


def _opened(db: Database, where: str, read_only: bool) -> Database:
    """Check the format of an opened gradebook (made afresh when empty, unless `read_only`)."""
    try:
        made, version = db.format()
        if made and version != FORMAT and read_only:
            raise QkvError(where, f"a gradebook of format {version}, this qkv reads format {FORMAT}: grade the class "
                                  "again into another --out")
        if made and version != FORMAT:
            raise QkvError(where, f"a gradebook of format {version}, this qkv writes format {FORMAT}; choose another"
                                  " --out")
        if read_only:
            if not made:
                raise QkvError(where, "not a gradebook qkv can read (no tables)")
            db.execute("SELECT key, value FROM meta").fetchall()
        else:
            db.script(SCHEMA)
            db.set_format(FORMAT)
    except QkvError:
        db.close()
        raise
    except database_errors() as err:
        db.close()
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise QkvError(where, f"not a gradebook qkv can use ({first}); choose another --out") from None
    return db


class Gradebook(Writes, Attempts, Reads, Analysis, ScoreOutbox):
    """One assignment's gradebook: a file (`where` a Path) or a schema of a PostgreSQL database (`where` its URL,
    `assignment` naming the schema); `read_only` for the commands that only read grades (nothing is made);
    `durable` for the service, whose accepted attempts must survive a power cut (database.open_sqlite)."""

    def __init__(self, where: Union[Path, str], read_only: bool = False, assignment: Optional[str] = None,
                 durable: bool = False):
        if isinstance(where, str) and is_postgres(where):
            self.path: Union[Path, str] = shown_url(where)
            self._db = _opened(open_postgres(where, schema_name(assignment or "")), self.path, read_only)
        else:
            self.path = Path(where)
            self._db = _opened(open_sqlite(self.path, read_only, durable), str(self.path), read_only)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Gradebook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
