"""The class's hand-in: SUBMISSIONS (a folder, or a whole-class zip) and a roster in; the `Submission`s to
grade, one `IntakeRow` per thing seen (intake.csv) and each student's submission time out.

Composes `unpack` (a zip into a private folder), `layouts` (entries as the LMS names them),
`grade.intake.read_submission` (each file read once, bounded, never run), `identity` (whose it is) and
the rule for two submissions of one student: what the LMS itself attributes to the student counts before
what only STUDENT_ID or a file name does, a clean hand-in before a conflicting one, then the latest by time
(ties: the assignment's module name, then .py before a notebook, then the name); the others are
`superseded`, and a conflicting one that does not count stays a `conflict` (so `--strict` sees it). Two
LMS accounts that claim one student whose roster row has no `canvas_user_id` are both conflicts, neither graded.
Roster students with nothing handed in get a `missing` row. Without a roster, a plain folder is taken
exactly as `grade.intake.intake` takes it.

Times come from what the student cannot set, where there is such a thing: the LMS's metadata, then the
class zip's entry time (a student's own zip has the class zip's time of it), then the commit time of a
GitHub Classroom repository (which the student's git sets, and intake.csv says so), then, for a folder the
instructor unpacked, the file's mtime. A file from a zip never takes the time of unpacking. The LMS's `LATE`
marker is kept with the student (`late_marked`) for the late policy. Every row says where its time came from.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from autograder.classroom.identity import GRADED, Decision, decide, student_id_in
from autograder.classroom.layouts import Entry, find_entries
from autograder.classroom.roster import IdKind, Roster
from autograder.classroom.unpack import unpack_class_zip
from autograder.errors import QkvError
from autograder.grade.intake import Submission, display_name, intake, read_submission, work_suffix
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
    late_marked: frozenset[str] = frozenset()  # students whose counted hand-in the LMS marks LATE

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


ZipTimes = Optional[dict[Path, tuple[Optional[dt.datetime], str]]]  # None: SUBMISSIONS is a folder, not a zip


def _file_time(path: Path, zip_times: ZipTimes) -> tuple[Optional[dt.datetime], str]:
    if zip_times is not None:
        return zip_times.get(path, (None, "no zip entry time"))
    when = file_time(path)
    return when, "file mtime" if when else ""


def _times(entry: Entry, zip_times: ZipTimes) -> tuple[Optional[dt.datetime], str]:
    if entry.time is not None or entry.time_source:
        return entry.time, entry.time_source
    if entry.work is not None:
        return _file_time(entry.work, zip_times)
    return None, ""


def _iso(when: Optional[dt.datetime]) -> str:
    return when.isoformat(timespec="seconds") if when else ""


def open_submissions(path: Path, workdir: Path, zone: dt.tzinfo) -> tuple[Path, list[IntakeRow], ZipTimes]:
    """SUBMISSIONS as a folder to read: itself, or the class zip unpacked into `workdir`."""
    if path.is_dir():
        return path, [], None
    if not path.exists():
        raise QkvError(str(path), "no such folder of submissions")
    if not zipfile.is_zipfile(path):
        raise QkvError(str(path), "is a file, not a folder of submissions (nor a zip of the class)")
    folder = workdir / "class"
    folder.mkdir(mode=0o700)
    unpacked = unpack_class_zip(path, folder, zone)
    rows = [IntakeRow(f"{path.name}:{member}", kind, message=what) for member, kind, what in unpacked.notes]
    return folder, rows, unpacked.times


def _legacy(folder: Path, module: Optional[str], zip_times: ZipTimes) -> tuple[list, list[IntakeRow]]:
    report = intake(folder, module)
    chosen, rows = [], []
    for submission in report.submissions:
        when, source = _file_time(submission.path, zip_times) if submission.digest else (None, "")
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


@dataclass(frozen=True)
class _HandIn:
    """One entry attributed to a student, before the choice of which of theirs counts."""

    submission: Submission
    row: IntakeRow
    when: Optional[dt.datetime]
    source: str
    entry: Entry
    decision: Decision


def _rank(hand_in: _HandIn, module: Optional[str]) -> tuple:
    stem = hand_in.submission.path.stem.lower()
    stamp = hand_in.when.timestamp() if hand_in.when else float("-inf")
    return (not hand_in.decision.by_lms, hand_in.decision.status != "graded", -stamp,
            module is None or module.lower() not in stem, work_suffix(hand_in.submission.path.name) != ".py",
            str(hand_in.submission.path))


def _lms_ids(hand_in: _HandIn) -> set[str]:
    return {f"{c.source} {c.value!r}" for c in hand_in.entry.claims if c.key == IdKind.CANVAS_USER_ID.value}


def _choose(student: str, items: list[_HandIn], roster: Optional[Roster], module: Optional[str]
            ) -> tuple[Optional[_HandIn], list[IntakeRow]]:
    """The hand-in of `student` that counts (None: none may) and every row of theirs."""
    accounts = set().union(*(_lms_ids(h) for h in items if h.decision.by_lms))
    row_of = roster.by_id(student) if roster else None
    if len(accounts) > 1 and row_of is not None and not row_of.id_of(IdKind.CANVAS_USER_ID):
        said = ", ".join(sorted(accounts))
        return None, [dataclasses.replace(h.row, status="conflict", message=(
            f"not graded: {len(accounts)} LMS accounts ({said}) claim {student}, whose roster row has no canvas_user_id "
            "to tell them apart")) for h in items]
    items = sorted(items, key=lambda h: _rank(h, module))
    best, rows = items[0], []
    rows.append(best.row if len(items) == 1 else dataclasses.replace(best.row, message="; ".join(
        m for m in (best.row.message, f"the latest of {len(items)} hand-ins") if m)))
    for other in items[1:]:
        if other.decision.status == "conflict":
            rows.append(dataclasses.replace(other.row, message=f"{other.row.message}; not graded: {best.row.entry} counts"))
            continue
        if best.decision.by_lms and not other.decision.by_lms:
            why = "the LMS names another hand-in as theirs"
        elif other.when and best.when and other.when < best.when:
            why = "an earlier hand-in"
        else:
            why = "the same time as another"
        rows.append(dataclasses.replace(other.row, status="superseded", message=f"{why}; {best.row.entry} counts"))
    return best, rows


def collect(submissions: Path, module: Optional[str], assignment: str, roster: Optional[Roster], workdir: Path,
            zone: dt.tzinfo = dt.timezone.utc) -> ClassIntake:
    """Everything in SUBMISSIONS, matched to the roster; `workdir` (private, empty) receives an unpacked zip."""
    folder, rows, zip_times = open_submissions(submissions, workdir, zone)
    usernames = {key for s in roster.students for key in (s.get("github").casefold(), s.id.casefold()) if key} \
        if roster else set()
    found = find_entries(folder, module, assignment, (lambda name: roster.by_id(name) is not None) if roster else None,
                         usernames)
    late_marked: set[str] = set()
    if roster is None and all(e.layout == "plain" for e in found.entries):
        chosen, legacy_rows = _legacy(folder, module, zip_times)
        rows += legacy_rows
    else:
        chosen = []
        rows += [IntakeRow(n.where, "skipped", message=n.what) for n in found.notes]
        by_student: dict[str, list[_HandIn]] = {}
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
            by_student.setdefault(decision.student, []).append(_HandIn(
                dataclasses.replace(submission, student=decision.student), row, when, source, entry, decision))
        for student, items in sorted(by_student.items()):
            best, student_rows = _choose(student, items, roster, module)
            rows += student_rows
            if best is not None:
                chosen.append((best.submission, best.row, best.when, best.source))
                if best.entry.late_marker:
                    late_marked.add(student)
    if roster is not None:
        handed_in = {submission.student for submission, *_ in chosen}
        claimed = {row.student for row in rows if row.student}
        rows += [IntakeRow("", "missing", s.id, message="on the roster, nothing handed in")
                 for s in roster.students if s.id not in handed_in and s.id not in claimed]
    return ClassIntake(
        submissions=tuple(s for s, *_ in chosen), rows=tuple(rows),
        times={s.student: (when, source) for s, _, when, source in chosen},
        sources={s.student: row.entry for s, row, *_ in chosen}, roster=roster, late_marked=frozenset(late_marked),
    )
