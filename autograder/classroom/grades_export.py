"""Grades back to the LMS: the gradebook (latest grading, late outcome, roster snapshot) in, import files out.

- `canvas`: Canvas's gradebook import CSV. Columns `Student, ID, SIS User ID, SIS Login ID, Section`, then
  the assignment's column (`Name (assignment id)` matches an existing Canvas assignment; a bare name
  makes a new one, which `export_notes` warns of), and a `Points Possible` row. ID is the roster's
  `canvas_user_id`, SIS User ID its `id`, SIS Login ID its `email`. A blank cell leaves
  Canvas's grade as it is. Canvas's CSV import takes no comments: push-grades posts them.
- `moodle`: Moodle's "Import grades from CSV": `Full name, Email address, ID number, Section`, the grade
  column and a `Feedback` column; match users by email address or ID number (the roster's `id`),
  map the grade column to the assignment's grade item and Feedback to its feedback.
- `csv`: every number qkv has: raw score, penalty, final score, status, the rule, the submission time.
Each also writes `<out>-comments.csv`: one feedback comment per student (the score, points lost,
the mistakes recognised, the late rule), never anything of the copying signals.
The final score (after the late penalty) is what is exported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from autograder.classroom.classbook import stored_late, stored_roster
from autograder.classroom.roster import IdKind, Roster
from autograder.grade.gradebook import Gradebook
from autograder.report.lessons import summarise
from autograder.report.spreadsheet import csv_text
from autograder.report.summary import points
from autograder.results import SubmissionResult

FORMATS = ("canvas", "moodle", "csv")
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
_CANVAS_ASSIGNMENT = re.compile(r".*\(\d+\)\s*", re.S)  # "Title (12345)": the header Canvas matches to assignment 12345


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


def _comment(result: dict, penalty: float, final: float, rule: str) -> str:
    parts = [f"{points(final)}/{points(result['max_score'])}"]
    if penalty:
        parts[0] += f" (raw {points(result['score'])}, late penalty -{points(penalty)}: {rule})"
    if result.get("status") != "graded":
        parts.append(f"not run: {result.get('status')}" + (f" ({result['message']})" if result.get("message") else ""))
    lost = [f"{p['problem_id']} {points(p['score'])}/{points(p['max_score'])}" for p in result.get("problems", [])
            if p["score"] < p["max_score"] - 1e-9]
    if lost and result.get("status") == "graded":
        parts.append("points lost on: " + ", ".join(lost[:12]) + (" ..." if len(lost) > 12 else ""))
    # each mistake once, largest first, in the feedback page's words (report/lessons.py)
    lessons = summarise(SubmissionResult.from_json(result), {}, {}).lessons if result.get("problems") else []
    if lessons:
        parts.append("mistakes recognised: " + " | ".join(f"{lesson.message[:200]} (-{points(lesson.points)})"
                                                          for lesson in lessons[:6]))
    return "; ".join(parts)


def grade_lines(book: Gradebook, roster: Optional[Roster] = None) -> tuple[list[GradeLine], float]:
    """One line per roster student (and per graded student not on it), and the assignment's points."""
    roster = roster or stored_roster(book)
    late = stored_late(book)
    lines: dict[str, GradeLine] = {}
    max_points = 0.0
    for stored in book.latest_submissions():
        student, status, score, max_score, data = (stored.student, stored.status, stored.score, stored.max_score,
                                                   stored.result)
        max_points = max(max_points, max_score)
        outcome = late.get(student)
        penalty = outcome.penalty if outcome else 0.0
        final = outcome.final if outcome else score
        lines[student] = GradeLine(student, status=status, raw=score, penalty=penalty, final=final, max_score=max_score,
                                   rule=outcome.rule if outcome else "",
                                   submitted_at=outcome.submitted_at.isoformat() if outcome and outcome.submitted_at else "",
                                   comment=_comment(data, penalty, final, outcome.rule if outcome else ""))
    ordered: list[GradeLine] = []
    for s in roster.students if roster else ():
        line = lines.pop(s.id, GradeLine(s.id, max_score=max_points))
        ordered.append(GradeLine(**{**line.__dict__, "name": s.name, "email": s.email, "lms_id": s.id_of(IdKind.CANVAS_USER_ID),
                                    "section": s.section, "max_score": line.max_score or max_points}))
    ordered += sorted(lines.values(), key=lambda line: line.student)  # graded, not on the roster
    return ordered, max_points


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


def render(fmt: str, lines: list[GradeLine], column: str, max_points: float) -> str:
    if fmt == "canvas":
        return canvas_csv(lines, column, max_points)
    if fmt == "moodle":
        return moodle_csv(lines, column)
    return plain_csv(lines)


def comments_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}-comments.csv")


def export_files(book: Gradebook, fmt: str, out: Path, column: str,
                 roster: Optional[Roster] = None) -> tuple[dict[Path, bytes], list[GradeLine]]:
    """{path: bytes} of the import file and its comment file (written by the caller, atomically), and the lines."""
    lines, max_points = grade_lines(book, roster)
    files = {out: render(fmt, lines, column, max_points).encode("utf-8"),
             comments_path(out): comments_csv(lines).encode("utf-8")}
    return files, lines


def grade_column(fmt: str, title: str, canvas_assignment_id: Optional[int]) -> str:
    """The grade column's default header: for Canvas, `Title (id)` when the assignment is known (the manifest's
    lms.canvas_assignment_id), so that Canvas updates it; else the bare title."""
    return f"{title} ({canvas_assignment_id})" if fmt == "canvas" and canvas_assignment_id else title


def export_notes(fmt: str, name: str, lines: list[GradeLine], column: str, comments: Path) -> list[tuple[str, str]]:
    """(warning or note, text): what to know before importing the files into the LMS."""
    notes: list[tuple[str, str]] = []
    if fmt == "canvas" and not _CANVAS_ASSIGNMENT.fullmatch(column):
        notes.append(("warning", f"the column {column!r} names no Canvas assignment id, so Canvas's import makes a NEW "
                                 f"assignment of it; to update the existing one, export again with "
                                 f"--column \"{column} (ID)\", ID being the number at the end of the assignment's "
                                 "address in Canvas (/assignments/ID), or set `lms: {canvas_assignment_id: ID}` in "
                                 "its manifest"))
    graded = [line for line in lines if line.final is not None]
    blank = [line.student for line in graded if not line.lms_id]
    if fmt == "canvas" and blank:
        notes.append(("note", f"{len(blank)} of {len(graded)} graded students have no canvas_user_id in the roster "
                              f"({', '.join(blank[:5])}{' ...' if len(blank) > 5 else ''}), so Canvas's ID column is "
                              "blank for them and Canvas can match them only by SIS User ID (the roster's id) or SIS "
                              "Login ID (its email); where those are not Canvas's, fill canvas_user_id with each student's "
                              "Canvas user id (the ID column of a gradebook Canvas exports, or /users/ID in their "
                              "profile's address) and export again with --roster FILE"))
    use = {"canvas": "Canvas's CSV import takes no comments: `qkv push-grades "
                     f"{name} --canvas URL --course C --assignment A` posts the grades with these comments",
           "moodle": "the same comments as the Feedback column of the import file",
           "csv": "for mail or another LMS, matched by id, lms_id (the Canvas user id) or email"}[fmt]
    notes.append(("note", f"{comments.name}: one feedback comment per graded student; {use}"))
    return notes
