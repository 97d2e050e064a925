"""The gradebook (autograder/grade/gradebook/): the one module that speaks SQL, the class kept beside the grades as
it went in, the history's final scores after the late penalty (LATE marker included), and the format rule for the
commands that only read. Real SQLite, written by Gradebook's own writes; the qkv command run as a user would.
"""

from __future__ import annotations

import ast
import datetime as dt
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from autograder.classroom import history
from autograder.classroom.classbook import open_gradebook, store_class, stored_late, stored_roster, stored_title
from autograder.classroom.deadlines import LateOutcome
from autograder.classroom.roster import parse_roster
from autograder.errors import QkvError
from autograder.late_policy import LatePolicy
from autograder.grade.gradebook import FORMAT, GRADEBOOK_FILE, Gradebook, GradingContext
from autograder.results import ProblemResult, SubmissionResult, TestResult
from conftest import QKV, ROOT, said

ENGINE = ROOT / "autograder"
GRADEBOOK = ENGINE / "grade" / "gradebook"
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA)\b")  # upper case: SQL, not prose


def sql_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string literal (f-string parts included) in a Python file that holds an SQL keyword."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value)]


def test_sql_on_the_gradebook_is_written_in_the_gradebook_module_only():
    inside, outside = [], []
    for path in sorted(ENGINE.rglob("*.py")):
        found = sql_literals(path)
        (inside if GRADEBOOK in path.parents else outside).extend(
            f"{path.relative_to(ROOT)}:{line}: {text.strip()[:70]!r}" for line, text in found)
    assert outside == [], "SQL outside autograder/grade/gradebook/: add a method there instead\n" + "\n".join(outside)
    # the scan sees the statements where they are, so an empty `outside` is a finding, not a blind spot
    assert any("INSERT INTO gradings" in s for s in inside) and any("FROM grading_tests" in s for s in inside)
    assert any("class_late" in s for s in inside)


def result(student: str, score: float, digest: str = "") -> SubmissionResult:
    test = TestResult("P", "t", "hidden", score, 10.0, score == 10.0, "")
    return SubmissionResult(student, digest or f"digest-{student}-{score}", "graded", "", score, 10.0,
                            (ProblemResult("P", "implement", score, 10.0, "", (test,)),))


DUE = "2026-12-18T23:59:00+00:00"
RULES = LatePolicy(penalty_percent=10, per="day")  # no grace: the LATE marker alone costs a day
ROSTER = ("id,name,email,lms_id,section,extension,pronouns\n"
          's1,"O\'Brien, Siobhán",s1@x,1001,A,,she\n'
          "s2,Bo,s2@x,1002,B,48,\n")


@pytest.fixture
def late_class(tmp_path) -> Path:
    """s1 graded twice: two days late by its time; then on time by its time, but the LMS marks it LATE.
    s2 two days late by its time, with a 48-hour extension."""
    with Gradebook(tmp_path / GRADEBOOK_FILE) as book:
        book.check_assignment("tiny", "f" * 64)
        book.record(result("s1", 8.0), "bwrap", GradingContext("s1.py", "2026-12-20T10:00:00+00:00", "zip entry time"))
        book.record(result("s1", 9.0), "bwrap", GradingContext("s1_LATE.py", "2026-12-18T20:00:00+00:00",
                                                               "zip entry time", late_marked=True))
        book.record(result("s2", 7.0), "bwrap", GradingContext("s2.py", "2026-12-20T10:00:00+00:00", "zip entry time"))
        store_class(book, parse_roster(ROSTER, "roster.csv"), {}, "Tiny", DUE, RULES)
    return tmp_path


def test_each_gradings_final_score_follows_its_own_time_marker_and_extension(late_class):
    with open_gradebook(late_class, "tiny") as book:
        s1 = history.trail(book, "s1")
        s2 = history.trail(book, "s2")
        late = history.late_outcomes(book, s1) + history.late_outcomes(book, s2)
    assert [g.late_marked for g in s1] == [False, True]
    # by hand: 2 started days after the due date at 10% of 10 points each; the LATE marker puts an on-time
    # time a second after the due date, so one started day; 48 hours' extension makes 2026-12-20T10:00 on time
    assert [(o.raw, o.penalty, o.final) for o in late] == [(8.0, 2.0, 6.0), (9.0, 1.0, 8.0), (7.0, 0.0, 7.0)]
    assert [o.rule for o in late] == ["2 days late: -20% of 10 points", "1 day late: -10% of 10 points",
                                      "on time (with the extension)"]
    assert late[1].time_source.startswith("the LMS marks it LATE")


def test_qkv_history_shows_the_final_score_beside_the_raw_one(late_class):
    shown = subprocess.run([str(QKV), "history", "tiny", "s1", "--grades", str(late_class)],
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr
    assert "6/10 (raw 8; 2 days late: -20% of 10 points)" in shown.stdout
    assert "8/10 (raw 9; 1 day late: -10% of 10 points)" in shown.stdout
    on_time = subprocess.run([str(QKV), "history", "tiny", "s2", "--grades", str(late_class)],
                             capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    assert on_time.returncode == 0 and "7/10" in on_time.stdout and "raw" not in on_time.stdout, on_time.stdout


def test_the_class_comes_back_as_it_went_in(tmp_path):
    roster = parse_roster(ROSTER, "roster.csv")
    zone = dt.timezone(dt.timedelta(hours=8))
    late = {"s1": LateOutcome(8.0, 2.0, 6.0, 10.0, "2 days late: -20% of 10 points",
                              dt.datetime(2026, 12, 18, 23, 59, tzinfo=zone),
                              dt.datetime(2026, 12, 20, 10, tzinfo=zone),
                              "zip entry time", 122_460.0, ""),
            "s2": LateOutcome(7.0, 0.0, 7.0, 10.0, "no submission time known: no penalty", None, None, "", 0.0,
                              "+48 h")}
    with Gradebook(tmp_path / GRADEBOOK_FILE) as book:
        book.check_assignment("tiny", "f" * 64)
        store_class(book, roster, late, "Tiny 'quoted'; DROP TABLE gradings", DUE, RULES)
        store_class(book, None, late, "Tiny again")  # no roster this run: the stored one stays
    with open_gradebook(tmp_path, "tiny") as book:
        assert stored_title(book) == "Tiny again"
        assert stored_roster(book).students == roster.students
        assert stored_late(book) == late
        assert book.late_rules().due is None  # the last run's policy: it had no due date


def test_last_two_gradings_are_found_across_chunks_of_students(tmp_path):
    """More students than one query's chunk (500): every regraded student's change is found, in student order."""
    with Gradebook(tmp_path / GRADEBOOK_FILE) as book:
        book.check_assignment("tiny", "f" * 64)
        for i in range(620):
            book.record(result(f"s{i:04d}", 5.0), "bwrap")
        regraded = [f"s{i:04d}" for i in range(0, 620, 7)]
        for student in regraded:
            book.record(result(student, 6.0), "bwrap")
        book.record(result("s0007", 4.0), "bwrap")  # a third grading: the last two count
        found = history.changes(book, [f"s{i:04d}" for i in range(620)])
    assert [c.student for c in found] == regraded
    assert {c.student: (c.before, c.after) for c in found}["s0007"] == (6.0, 4.0)
    assert all((c.before, c.after) == (5.0, 6.0) for c in found if c.student != "s0007")


def test_the_readers_refuse_a_gradebook_of_another_format_in_one_line(tmp_path):
    with sqlite3.connect(tmp_path / GRADEBOOK_FILE) as db:  # an older qkv's: bound to the assignment, format 2
        db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                         "INSERT INTO meta VALUES ('assignment', 'tiny'); PRAGMA user_version = 2;")
    db.close()
    before = (tmp_path / GRADEBOOK_FILE).read_bytes()
    refusal = f"a gradebook of format 2, this qkv reads format {FORMAT}"
    with pytest.raises(QkvError, match=refusal):  # the one door of history, export-grades, push-grades, stats, copying
        with open_gradebook(tmp_path, "tiny"):
            pass
    done = subprocess.run([str(QKV), "history", "tiny", "s1", "--grades", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr and refusal in done.stderr, done.stderr
    assert len(said(done.stderr)) == 1, done.stderr
    assert (tmp_path / GRADEBOOK_FILE).read_bytes() == before, "a reader changed the gradebook"


OLD = Path(__file__).parents[1] / "fixtures" / "gradebooks" / "format4-before-one-path"  # write_format4.py says how


def test_a_gradebook_of_before_the_grading_service_reads_the_same(tmp_path):
    """Written by the code before late outcomes were kept with each grading: the exports' late outcomes, the
    history's final scores and the attempt's final score read as that code wrote them (worked out by hand here:
    10% of 10 points a started day after 2026-12-18T23:59Z), and the grading service, opening it, keeps the same
    outcomes with each counted grading rather than new ones."""
    import shutil

    from autograder.bundle import GradingBundle
    from autograder.grade.service import GradingService

    by_hand = {"s1": (9.0, 1.0, 8.0, "1 day late: -10% of 10 points"),
               "s2": (7.0, 0.0, 7.0, "on time (with the extension)"),
               "s3": (6.0, 3.0, 3.0, "3 days late: -30% of 10 points")}
    for copy in ("read", "old"):  # SQLite writes its WAL index beside even a gradebook opened to read
        shutil.copytree(OLD, tmp_path / copy)
    with open_gradebook(tmp_path / "read", "tiny") as book:
        kept = stored_late(book)
        assert {s: (o.raw, o.penalty, o.final, o.rule) for s, o in kept.items()} == by_hand
        assert [s.id for s in stored_roster(book).students] == ["s1", "s2", "s3"]
        assert book.late_rules().late == LatePolicy(penalty_percent=10, per="day")
        assert [(o.penalty, o.final) for o in history.late_outcomes(book, history.trail(book, "s1"))] == [
            (2.0, 6.0), (1.0, 8.0)]
        assert book.attempt("a" * 22).final == 3.0
    bundle = GradingBundle("tiny", "Tiny", "numpy", 1, "same", DUE, (), (), ("P",), late=LatePolicy(penalty_percent=10))
    with Gradebook(tmp_path / "old" / GRADEBOOK_FILE) as book:
        service = GradingService(bundle, book, stored_roster(book))
        assert service.settled() == kept
        assert service.kept_late(book.attempt("a" * 22).grading) == kept["s3"]
        assert {c.student: c.late is not None for c in book.counted_late()} == {"s1": True, "s2": True, "s3": True}
