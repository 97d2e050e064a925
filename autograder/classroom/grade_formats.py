"""The LMS import files qkv writes, one registered `GradeFormat` each: grade lines in, a file's text out.

- `canvas`: Canvas's gradebook import CSV. Columns `Student, ID, SIS User ID, SIS Login ID, Section`, then
  the assignment's column (`Name (assignment id)` matches an existing Canvas assignment; a bare name
  makes a new one, which `export_notes` warns of), and a `Points Possible` row. ID is the roster's
  `canvas_user_id`, SIS User ID its `id`, SIS Login ID its `email`. A blank cell leaves
  Canvas's grade as it is. Canvas's CSV import takes no comments: push-grades posts them.
- `moodle`: Moodle's "Import grades from CSV": `Full name, Email address, ID number, Section`, the grade
  column and a `Feedback` column; match users by email address or ID number (the roster's `id`),
  map the grade column to the assignment's grade item and Feedback to its feedback.
- `csv`: every number qkv has: raw score, penalty, final score, status, the rule, the submission time.
`GRADE_FORMATS` is the registry: `qkv export-grades --format`, the service's export links and routes and the
notes after an export read it, so a format is added here and nowhere else. This module stays light (no gradebook,
no NumPy): the command line reads its names before any command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from autograder.report.spreadsheet import csv_text

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


@dataclass(frozen=True)
class GradeLine:
    student: str
    name: str = ""
    email: str = ""
    lms_id: str = ""
    section: str = ""
    status: str = "missing"  # the grading status, or missing (on the roster, nothing graded)
    raw: Optional[float] = None
    penalty: float = 0.0
    final: Optional[float] = None
    max_score: float = 0.0
    rule: str = ""
    submitted_at: str = ""
    comment: str = ""


def _number(value: Optional[float]) -> str:
    return "" if value is None else f"{round(value, 2):g}"


def _write(rows: list[list[str]]) -> str:
    return csv_text(rows, line_end="\r\n")


def canvas_csv(lines: list[GradeLine], column: str, max_points: float) -> str:
    rows = [CANVAS_COLUMNS + [column], ["Points Possible", "", "", "", ""] + [_number(max_points)]]
    rows += [[line.name or line.student, line.lms_id, line.student, line.email, line.section, _number(line.final)]
             for line in lines]
    return _write(rows)


def moodle_csv(lines: list[GradeLine], column: str) -> str:
    rows = [["Full name", "Email address", "ID number", "Section", column, "Feedback"]]
    rows += [[line.name or line.student, line.email, line.student, line.section, _number(line.final),
              line.comment if line.final is not None else ""] for line in lines]
    return _write(rows)


def plain_csv(lines: list[GradeLine]) -> str:
    rows = [["id", "name", "email", "lms_id", "section", "status", "raw", "penalty", "final", "max", "late_rule",
             "submitted_at"]]
    rows += [[line.student, line.name, line.email, line.lms_id, line.section, line.status, _number(line.raw),
              _number(line.penalty) if line.raw is not None else "", _number(line.final), _number(line.max_score),
              line.rule, line.submitted_at] for line in lines]
    return _write(rows)


def comments_csv(lines: list[GradeLine]) -> str:
    rows = [["id", "lms_id", "email", "name", "comment"]]
    rows += [[line.student, line.lms_id, line.email, line.name, line.comment] for line in lines if line.raw is not None]
    return _write(rows)


@dataclass(frozen=True)
class GradeFormat:
    """One LMS import file: its name (`--format`, the service's /export/NAME), how the class page and docs name
    it, how its rows are written (lines, the grade column, the assignment's points), and what the comment file
    beside it is for."""

    name: str
    label: str
    render: Callable[[list[GradeLine], str, float], str]
    comments_use: str  # {name} is the assignment's name
    # the LMS matches a grade column headed "Title (id)" to that assignment (else it makes a new one), and its rows
    # to users by the roster's LMS user id: the export names the assignment's id and warns of rows without one
    column_names_assignment: bool = False


# The registry of grade exports: `qkv export-grades --format`, the service's export links and routes read it.
GRADE_FORMATS: dict[str, GradeFormat] = {f.name: f for f in (
    GradeFormat("canvas", "Canvas", canvas_csv,
                "Canvas's CSV import takes no comments: `qkv push-grades {name} --canvas URL --course C "
                "--assignment A` posts the grades with these comments", column_names_assignment=True),
    GradeFormat("moodle", "Moodle", lambda lines, column, _: moodle_csv(lines, column),
                "the same comments as the Feedback column of the import file"),
    GradeFormat("csv", "plain CSV", lambda lines, _column, _points: plain_csv(lines),
                "for mail or another LMS, matched by id, lms_id (the Canvas user id) or email"),
)}


def grade_format(fmt: str) -> GradeFormat:
    """The registered format named `fmt`; KeyError, naming the formats there are, for any other."""
    found = GRADE_FORMATS.get(fmt)
    if found is None:
        raise KeyError(f"no export format {fmt!r}: choose {', '.join(GRADE_FORMATS)}")
    return found
