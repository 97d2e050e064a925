"""Grades back to the LMS: the gradebook (latest grading, late outcome, roster snapshot) in, import files out, in
one of the formats grade_formats.py registers (`GRADE_FORMATS`). Each also writes `<out>-comments.csv`: one feedback
comment per student (the score, points lost, the mistakes recognised, the late rule), never anything of the copying
signals. The final score (after the late penalty) is what is exported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from autograder.classroom.classbook import stored_late, stored_roster
from autograder.classroom.grade_formats import GradeLine, comments_csv, grade_format
from autograder.classroom.roster import IdKind, Roster
from autograder.grade.gradebook import Gradebook
from autograder.report.lessons import summarise
from autograder.report.summary import points
from autograder.results import SubmissionResult

_CANVAS_ASSIGNMENT = re.compile(r".*\(\d+\)\s*", re.S)  # "Title (12345)": the header Canvas matches to assignment 12345


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


def comments_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}-comments.csv")


def export_files(book: Gradebook, fmt: str, out: Path, column: str,
                 roster: Optional[Roster] = None) -> tuple[dict[Path, bytes], list[GradeLine]]:
    """{path: bytes} of the import file and its comment file (written by the caller, atomically), and the lines."""
    lines, max_points = grade_lines(book, roster)
    files = {out: grade_format(fmt).render(lines, column, max_points).encode("utf-8"),
             comments_path(out): comments_csv(lines).encode("utf-8")}
    return files, lines


def grade_column(fmt: str, title: str, canvas_assignment_id: Optional[int]) -> str:
    """The grade column's default header: for Canvas, `Title (id)` when the assignment is known (the manifest's
    lms.canvas_assignment_id), so that Canvas updates it; else the bare title."""
    named = grade_format(fmt).column_names_assignment
    return f"{title} ({canvas_assignment_id})" if named and canvas_assignment_id else title


def export_notes(fmt: str, name: str, lines: list[GradeLine], column: str, comments: Path) -> list[tuple[str, str]]:
    """(warning or note, text): what to know before importing the files into the LMS."""
    notes: list[tuple[str, str]] = []
    export = grade_format(fmt)
    if export.column_names_assignment and not _CANVAS_ASSIGNMENT.fullmatch(column):
        notes.append(("warning", f"the column {column!r} names no Canvas assignment id, so Canvas's import makes a NEW "
                                 f"assignment of it; to update the existing one, export again with "
                                 f"--column \"{column} (ID)\", ID being the number at the end of the assignment's "
                                 "address in Canvas (/assignments/ID), or set `lms: {canvas_assignment_id: ID}` in "
                                 "its manifest"))
    graded = [line for line in lines if line.final is not None]
    blank = [line.student for line in graded if not line.lms_id]
    if export.column_names_assignment and blank:
        notes.append(("note", f"{len(blank)} of {len(graded)} graded students have no canvas_user_id in the roster "
                              f"({', '.join(blank[:5])}{' ...' if len(blank) > 5 else ''}), so Canvas's ID column is "
                              "blank for them and Canvas can match them only by SIS User ID (the roster's id) or SIS "
                              "Login ID (its email); where those are not Canvas's, fill canvas_user_id with each student's "
                              "Canvas user id (the ID column of a gradebook Canvas exports, or /users/ID in their "
                              "profile's address) and export again with --roster FILE"))
    use = grade_format(fmt).comments_use.format(name=name)
    notes.append(("note", f"{comments.name}: one feedback comment per graded student; {use}"))
    return notes
