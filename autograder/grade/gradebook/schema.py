"""The gradebook's tables and its format number (SQLite's `PRAGMA user_version`, a table in PostgreSQL).

Written in SQLite's words; database.py turns them into PostgreSQL's. `gradings` keeps every grading
whole (its result as JSON, the final score after any late penalty, the attempt it graded); `counted`
names the one grading per student that counts, and `submissions` is that grading as a row. `attempts`
holds what `qkv serve` accepted, the file itself included, until and after it is graded.

A gradebook of another format is refused, never migrated in place: grading the class again into a
new folder makes one of this format, and `make demo` grades afresh each time.
"""

from __future__ import annotations

# 1 kept each latest grading's tests a second time; 2 kept no LMS LATE marker with a grading and no late
# policy beside the class, so `qkv history` could not say a grading's final score; 3 kept only the latest
# grading's whole result and no attempts, so `qkv serve` could show no earlier attempt and count no best one.
# Format 4 gained lti_scores (the LMS outbox of qkv serve as an LTI tool, gradebook/lti.py) without a new number:
# no reader needs it, and a format-4 gradebook gets it, empty, when it is next opened for writing; so did
# grading_late (each grading's late outcome, worked out once by the grading service, grade/service.py): a grading
# of before has none, and its readers fall back on class_late, the outcome kept beside the class then
# Format 5 keeps each attempt's seed of fresh numbers (attempts.seed; NULL: the assignment's) and the score its
# student is shown before hand-in closes (gradings.shown; NULL: the score), grade/written_policy.py's; a gradebook of
# format 4 is migrated to it when opened for writing (`MIGRATIONS`), and read as it is otherwise.
FORMAT = 5
READABLE = (4, 5)  # the formats the readers take as they are
# what turns a gradebook of format N into one of N + 1, in SQLite's words (database.py turns them into PostgreSQL's)
MIGRATIONS = {4: ("ALTER TABLE attempts ADD COLUMN seed INTEGER", "ALTER TABLE gradings ADD COLUMN shown REAL")}
GRADEBOOK_FILE = "gradebook.sqlite"

SCHEMA = """
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
    late_marked  INTEGER NOT NULL,
    answers      TEXT NOT NULL,
    result       TEXT NOT NULL,
    attempt      TEXT,
    final        REAL NOT NULL,
    shown        REAL
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
CREATE TABLE IF NOT EXISTS counted (
    student TEXT PRIMARY KEY,
    grading INTEGER NOT NULL REFERENCES gradings(id)
);
CREATE VIEW IF NOT EXISTS submissions (student, digest, graded_at, status, score, max_score, isolation, result,
                                       grading) AS
    SELECT g.student, g.digest, g.graded_at, g.status, g.score, g.max_score, g.isolation, g.result, g.id
    FROM counted AS c JOIN gradings AS g ON g.id = c.grading;
CREATE VIEW IF NOT EXISTS test_scores (student, problem, test, score, max_score) AS
    SELECT s.student, t.problem, t.test, t.score, t.max_score
    FROM submissions AS s JOIN grading_tests AS t ON t.grading = s.grading;
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
CREATE TABLE IF NOT EXISTS grading_late (
    grading INTEGER PRIMARY KEY REFERENCES gradings(id) ON DELETE CASCADE, due TEXT, submitted_at TEXT,
    time_source TEXT NOT NULL, late_seconds REAL NOT NULL, raw REAL NOT NULL, penalty REAL NOT NULL,
    final REAL NOT NULL, max_score REAL NOT NULL, rule TEXT NOT NULL, extension TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id          TEXT PRIMARY KEY,
    student     TEXT NOT NULL,
    received_at REAL NOT NULL,
    filename    TEXT NOT NULL,
    digest      TEXT NOT NULL,
    body        BLOB NOT NULL,
    state       TEXT NOT NULL,
    claimed_at  REAL,
    grading     INTEGER REFERENCES gradings(id),
    seed        INTEGER
);
CREATE INDEX IF NOT EXISTS attempts_by_student ON attempts (student, received_at);
CREATE INDEX IF NOT EXISTS attempts_by_state ON attempts (state, received_at);
CREATE TABLE IF NOT EXISTS lti_scores (
    grading INTEGER PRIMARY KEY REFERENCES gradings(id),
    attempt TEXT NOT NULL,
    student TEXT NOT NULL,
    sent_at REAL,
    tries   INTEGER NOT NULL,
    next_at REAL NOT NULL,
    error   TEXT NOT NULL
);
"""
