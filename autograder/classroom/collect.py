"""The class's hand-in: SUBMISSIONS (a folder, or a whole-class zip) and a roster in; the `Submission`s to
grade, one `IntakeRow` per thing seen (intake.csv) and each student's submission time out.

Composes `unpack` (a zip into a private folder), `layouts` (entries as the LMS names them),
`grade.intake.read_submission` (each file read once, bounded, never run), `identity` (whose it is) and
the rule for two submissions of one student: the latest by time counts (ties: the assignment's module
name, then .py before a notebook, then the name), the others are `superseded`. Roster students with
nothing handed in get a `missing` row. Without a roster, a plain folder is taken exactly as
`grade.intake.intake` takes it. Times come from the LMS's metadata where it has one, else the zip
entry's time, else the file's mtime; every row says which.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from autograder.classroom.identity import GRADED, decide, student_id_in
from autograder.classroom.layouts import Entry, find_entries
from autograder.classroom.roster import Roster
from autograder.classroom.unpack import unpack_class_zip
from autograder.errors import QkvError
from autograder.grade.intake import Submission, display_name, intake, read_submission
from autograder.sandbox import Program

BLOCKING = ("conflict", "off_roster", "unmatched", "rejected")  # what --strict refuses to grade past


@dataclass(frozen=True)
class IntakeRow:
    entry: str  # where in SUBMISSIONS, safe to print
    status: str  # graded, conflict, superseded, off_roster, unmatched, missing, rejected, skipped
    student: str = ""
    layout: str = ""
    identified_by: str = ""
    submitted_at: str = ""  # ISO 8601
    time_source: str = ""
    late_marker: bool = False
    message: str = ""

    @property
    def graded(self) -> bool:
        return self.status in GRADED


@dataclass(frozen=True)
class ClassIntake:
    submissions: tuple[Submission, ...]
    rows: tuple[IntakeRow, ...]
    times: dict[str, tuple[Optional[dt.datetime], str]]  # student -> (submission time, where it came from)
    sources: dict[str, str]  # student -> the entry graded
    roster: Optional[Roster] = None

    @property
    def blocking(self) -> list[IntakeRow]:
        return [r for r in self.rows if r.status in BLOCKING]


def program_text(program: Optional[Program]) -> str:
    if program is None:
        return ""
    if program.source is not None:
        return program.source
    return "\n".join(step.text for step in program.steps or () if step.action == "python")


def file_time(path: Path) -> Optional[dt.datetime]:
    try:
        return dt.datetime.fromtimestamp(os.lstat(path).st_mtime, dt.timezone.utc)
    except OSError:
        return None


def _times(entry: Entry, zip_times: dict[Path, dt.datetime]) -> tuple[Optional[dt.datetime], str]:
    if entry.time is not None:
        return entry.time, entry.time_source
    if entry.work is not None and entry.work in zip_times:
        return zip_times[entry.work], "zip entry time"
    if entry.work is not None:
        when = file_time(entry.work)
        return when, "file mtime" if when else ""
    return None, ""


def _iso(when: Optional[dt.datetime]) -> str:
    return when.isoformat(timespec="seconds") if when else ""


def open_submissions(path: Path, workdir: Path, zone: dt.tzinfo) -> tuple[Path, list[IntakeRow], dict[Path, dt.datetime]]:
    """SUBMISSIONS as a folder to read: itself, or the class zip unpacked into `workdir`."""
    if path.is_dir():
        return path, [], {}
    if not path.exists():
        raise QkvError(str(path), "no such folder of submissions")
    if not zipfile.is_zipfile(path):
        raise QkvError(str(path), "is a file, not a folder of submissions (nor a zip of the class)")
    folder = workdir / "class"
    folder.mkdir(mode=0o700)
    unpacked = unpack_class_zip(path, folder, zone)
    rows = [IntakeRow(f"{path.name}:{member}", kind, message=what) for member, kind, what in unpacked.notes]
    return folder, rows, unpacked.times


def _legacy(folder: Path, module: Optional[str], zip_times: dict[Path, dt.datetime]) -> tuple[list, list[IntakeRow]]:
    report = intake(folder, module)
    chosen, rows = [], []
    for submission in report.submissions:
        when = zip_times.get(submission.path) or file_time(submission.path) if submission.digest else None
        source = ("zip entry time" if submission.path in zip_times else "file mtime") if when else ""
        said = student_id_in(program_text(submission.program))
        message = submission.message
        if said and said != submission.student:
            message = (f"STUDENT_ID says {said!r}; without a roster the id is the name "
                       f"{submission.student!r} (pass --roster to check)")
        row = IntakeRow(display_name(submission.path, folder), "graded", submission.student, "plain", "file name",
                        _iso(when), source, False, message)
        chosen.append((submission, row, when, source))
        rows.append(row)
    rows += [IntakeRow(n.where, "skipped", message=n.what) for n in report.notes]
    return chosen, rows


def _rank(entry: Entry, submission: Submission, when: Optional[dt.datetime], module: Optional[str]) -> tuple:
    stem = submission.path.stem.lower()
    stamp = when.timestamp() if when else float("-inf")
    return (-stamp, module is None or module.lower() not in stem, submission.path.suffix != ".py", str(submission.path))


def collect(submissions: Path, module: Optional[str], assignment: str, roster: Optional[Roster], workdir: Path,
            zone: dt.tzinfo = dt.timezone.utc) -> ClassIntake:
    """Everything in SUBMISSIONS, matched to the roster; `workdir` (private, empty) receives an unpacked zip."""
    folder, rows, zip_times = open_submissions(submissions, workdir, zone)
    found = find_entries(folder, module, assignment, (lambda name: roster.by_id(name) is not None) if roster else None)
    if roster is None and all(e.layout == "plain" for e in found.entries):
        chosen, legacy_rows = _legacy(folder, module, zip_times)
        rows += legacy_rows
    else:
        chosen = []
        rows += [IntakeRow(n.where, "skipped", message=n.what) for n in found.notes]
        by_student: dict[str, list] = {}
        for entry in found.entries:
            shown = display_name(entry.work or entry.origin, folder)
            when, source = _times(entry, zip_times)
            if entry.work is None:
                submission = Submission("", entry.origin, "", None, "missing", "no .py or .ipynb file in the submission folder")
            else:
                submission = read_submission("", entry.work)
            decision = decide(entry.claims, student_id_in(program_text(submission.program)), entry.names, roster, module)
            message = "; ".join(m for m in (decision.message, entry.note, submission.message,
                                             "the LMS marks it LATE" if entry.late_marker else "") if m)
            row = IntakeRow(shown, decision.status, decision.student or "", entry.layout, decision.identified_by,
                            _iso(when), source, entry.late_marker, message)
            if decision.student is None or decision.status not in GRADED:
                rows.append(row)
                continue
            by_student.setdefault(decision.student, []).append(
                (dataclasses.replace(submission, student=decision.student), row, when, source, entry))
        for student, items in sorted(by_student.items()):
            items.sort(key=lambda item: _rank(item[4], item[0], item[2], module))
            best = items[0]
            chosen.append(best[:4])
            rows.append(best[1] if len(items) == 1 else dataclasses.replace(best[1], message="; ".join(
                m for m in (best[1].message, f"the latest of {len(items)} hand-ins") if m)))
            for submission, row, when, *_ in items[1:]:
                why = "an earlier hand-in" if (when and best[2] and when < best[2]) else "the same time as another"
                rows.append(dataclasses.replace(row, status="superseded",
                                                message=f"{why}; {best[1].entry} counts"))
    if roster is not None:
        handed_in = {submission.student for submission, *_ in chosen}
        rows += [IntakeRow("", "missing", s.id, message="on the roster, nothing handed in")
                 for s in roster.students if s.id not in handed_in]
    return ClassIntake(
        submissions=tuple(s for s, *_ in chosen), rows=tuple(rows),
        times={s.student: (when, source) for s, _, when, source in chosen},
        sources={s.student: row.entry for s, row, *_ in chosen}, roster=roster,
    )
