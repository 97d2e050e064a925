"""What the service shows its staff from a gradebook, through the code the CLI uses: the class table and the LMS files (classroom/grades_export.py), the item analysis (classroom/stats_page.py), the
copying signals (classroom/signals.py, on each student's counted attempt),
and the late outcomes kept beside the grades (by the grading service, grade/service.py) so that those exports
apply the late policy.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from autograder.classroom import classbook
from autograder.classroom.grade_formats import GRADE_FORMATS
from autograder.classroom.grades_export import export_files, grade_column, grade_lines
from autograder.classroom.mistakes import ClassMistake, class_mistakes
from autograder.classroom.roster import Roster
from autograder.classroom.stats import bundle_info
from autograder.classroom.stats_page import class_report
from autograder.grade.gradebook import Gradebook
from autograder.grade.intake import submission_from_bytes
from autograder.grade.service import GradingService
from autograder.serve.course import ServedAssignment
from autograder.serve.pages import Refusal, when

def settle_class(service: GradingService, a: ServedAssignment) -> None:
    """At start: the class (title, roster, late policy) and every counted attempt's late outcome, as kept (worked
    out again only under an extension changed since, or for a grading of before the service kept them)."""
    classbook.store_class(service.book, service.roster, service.settled(), a.bundle.title, a.bundle.due,
                          a.bundle.late)


@dataclass(frozen=True)
class ClassRow:
    student: str
    name: str
    made: int
    waiting: int
    score: Optional[float]
    max_score: Optional[float]
    final: Optional[float]
    penalty: float = 0.0  # the late policy's, on the counted attempt
    due: Optional[dt.datetime] = None  # the student's own (an extension moves it)


def class_rows(a: ServedAssignment, book: Gradebook, roster: Optional[Roster]) -> list[ClassRow]:
    """One row per roster student and per student with attempts: the grade lines the exports write."""
    totals = book.attempt_totals()
    lines, _ = grade_lines(book, roster)
    rows = [ClassRow(line.student, line.name, *totals.get(line.student, (0, 0)), line.raw, line.max_score,
                     line.final, line.penalty, a.dates_of(line.student, roster)[0]) for line in lines]
    listed = {r.student for r in rows}
    rows += [ClassRow(student, "", made, waiting, None, None, None, 0.0, a.dates_of(student, roster)[0])
             for student, (made, waiting) in sorted(totals.items()) if student not in listed]
    return rows


BANDS = 5  # the score distribution's bars: 0-20%, ..., 80-100% of the points


@dataclass(frozen=True)
class Band:
    label: str
    students: int
    share: float  # of the students with a counted score, for the bar's length


@dataclass(frozen=True)
class ClassView:
    """What the class page answers at one look: who has not handed in, how the class is doing (the final scores'
    distribution) and what it gets wrong (the named mistakes most students' counted attempts make now)."""

    rows: list[ClassRow]
    missing: list[ClassRow]
    bands: list[Band]
    mistakes: tuple[ClassMistake, ...]
    late: int  # students whose counted attempt lost points to the late policy


def distribution(rows: list[ClassRow]) -> list[Band]:
    """The final scores (after the late policy) of the students with one, as a share of the points, in BANDS bands;
    a full score falls in the top band."""
    shares = [r.final / r.max_score for r in rows if r.final is not None and r.max_score]
    counts = [0] * BANDS
    for share in shares:
        counts[min(BANDS - 1, max(0, int(share * BANDS)))] += 1
    width = 100 // BANDS
    return [Band(f"{i * width}–{(i + 1) * width}%", n, n / len(shares) if shares else 0.0)
            for i, n in enumerate(counts)]


MISTAKES_SHOWN = 5


def class_view(a: ServedAssignment, book: Gradebook, roster: Optional[Roster]) -> ClassView:
    rows = class_rows(a, book, roster)
    info = bundle_info(a.bundle)
    return ClassView(rows, [r for r in rows if r.made == 0], distribution(rows),
                     class_mistakes(book, info[3], info[0])[:MISTAKES_SHOWN], sum(1 for r in rows if r.penalty > 0))


def lms_class_list(lti: Any, name: str) -> Optional[str]:
    """The latest sync of the LMS's class list (`qkv lti sync`, or the service's schedule), counted, for staff;
    None without one or without an LTI tool (`lti`)."""
    last = lti.store.last_sync(name) if lti is not None else None
    if last is None:
        return None
    from autograder.serve.lti.members import summary  # the LMS library: only where the course is an LTI tool

    number, at, diff = last
    return f"LMS class list, sync {number} at {when(at)}: {summary(diff)}."


def copying_page(a: ServedAssignment, book: Gradebook) -> str:
    """`qkv copying`'s page for the class as served: each student's counted attempt is their code."""
    from autograder import extras
    from autograder.classroom.collect import program_text
    from autograder.classroom.copying_page import copying_html
    from autograder.classroom.signals import class_signals
    from autograder.classroom.stats import load_scores
    from autograder.errors import QkvError

    try:
        extras.require("copying", "the copying page")
    except QkvError as err:
        raise Refusal(501, str(err), "Not installed") from None
    codes = {}
    for student in book.attempt_totals():
        counted = next((t for t in book.attempts_of(student) if t.counted), None)
        if counted is not None:
            submission = submission_from_bytes(student, Path(counted.filename), book.attempt_body(counted.id))
            if submission.program is not None:
                codes[student] = program_text(submission.program)
    per_student, flags, report = class_signals(a.bundle, a.release_dir, load_scores(book), codes)
    return copying_html(a.bundle.title, per_student, flags, report)


def stats_page(a: ServedAssignment, book: Gradebook) -> str:
    return class_report(book, a.bundle, a.name, a.name)[1]


def export(a: ServedAssignment, book: Gradebook, roster: Optional[Roster], fmt: str) -> tuple[str, bytes]:
    """(a file name, the LMS import file) as `qkv export-grades --format FMT` writes it."""
    if fmt not in GRADE_FORMATS:
        raise Refusal(404, f"no export format {fmt!r}: choose {', '.join(GRADE_FORMATS)}", "Not found")
    column = grade_column(fmt, classbook.stored_title(book) or a.name,
                          a.lms.canvas_assignment_id)
    out = Path(f"{a.name}-{fmt}.csv")
    files, _ = export_files(book, fmt, out, column, roster)
    return out.name, files[out]
