"""The class beside the grades in gradebook.sqlite: the roster a run used, each student's late outcome and the
late policy they were worked out under, as the class's own types (the gradebook stores them as plain records).

Written by `qkv grade` (each run replaces them in one transaction, so a changed extension takes
effect without regrading); read by the exports, `qkv history` and `qkv stats`. `open_gradebook`
opens a grading folder read-only for those commands, or says in one line why it cannot.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Optional

from autograder.classroom.deadlines import LateOutcome
from autograder.classroom.roster import LEGACY_KINDS, Extension, IdKind, Roster, Student, parse_extension
from autograder.errors import QkvError
from autograder.late_policy import LatePolicy
from autograder.grade.gradebook import GRADEBOOK_FILE, Gradebook, LateEntry, LateRules, RosterEntry


def _extension_text(student: Student) -> str:
    ext = student.extension
    if ext is None:
        return ""
    if ext.hours is not None:
        return f"{ext.hours:g}"
    return ext.due.isoformat() if ext.due is not None else ""


def extension_of(roster: Optional[Roster], student: str) -> Optional[Extension]:
    """The extension of exactly this roster id (`Roster.by_id` also finds an id that differs only in case)."""
    found = roster.by_id(student) if roster else None
    return found.extension if found and found.id == student else None


def store_class(book: Gradebook, roster: Optional[Roster], late: dict[str, LateOutcome], title: str,
                due: Optional[str] = None, rules: Optional[LatePolicy] = None) -> None:
    """Keep what this run knew of the class; `due` and `rules` are the bundle's due date and late policy."""
    entries = None if roster is None else [
        RosterEntry(s.id, s.name, s.email, "", s.section, _extension_text(s),
                    # the LMS identifiers ride with the other columns: the gradebook's table keeps one column of
                    # the old single id, read back below as a roster of before reads it
                    s.extra + tuple((kind.value, value) for kind, value in s.ids)) for s in roster.students]
    book.store_class(title, entries, [late_entry(student, o) for student, o in late.items()], LateRules(due, rules))


def late_entry(student: str, o: LateOutcome) -> LateEntry:
    return LateEntry(student, o.due, o.submitted_at, o.time_source, o.late_seconds, o.raw, o.penalty, o.final,
                     o.max_score, o.rule, o.extension)


def stored_title(book: Gradebook) -> str:
    return book.class_title()


def stored_roster(book: Gradebook) -> Optional[Roster]:
    entries = book.class_roster()
    if not entries:
        return None
    def student(e: RosterEntry) -> Student:
        ids = tuple((IdKind(c), v) for c, v in e.extra if c in IdKind._value2member_map_)
        ids += tuple((kind, e.lms_id) for kind in LEGACY_KINDS if e.lms_id)
        extra = tuple((c, v) for c, v in e.extra if c not in IdKind._value2member_map_)
        return Student(e.id, e.name, e.email, e.section, parse_extension(e.extension), extra, ids)
    return Roster(tuple(student(e) for e in entries), "the gradebook's roster")


def outcome_of(e: LateEntry) -> LateOutcome:
    return LateOutcome(e.raw, e.penalty, e.final, e.max_score, e.rule, e.due, e.submitted_at, e.time_source,
                       e.late_seconds, e.extension)


def stored_late(book: Gradebook) -> dict[str, LateOutcome]:
    return {e.student: outcome_of(e) for e in book.class_late()}


@contextlib.contextmanager
def open_gradebook(grades: Path, name: str) -> Iterator[Gradebook]:
    """A grading folder's gradebook, read-only; a missing folder, file or a gradebook of another assignment is an error."""
    path = grades / GRADEBOOK_FILE
    if not grades.is_dir():
        raise QkvError(str(grades), f"no such grades folder: run `qkv grade {name} SUBMISSIONS --out {grades}` first")
    if not path.is_file():
        raise QkvError(str(grades), f"no gradebook here ({GRADEBOOK_FILE}): run `qkv grade {name} SUBMISSIONS` first")
    with Gradebook(path, read_only=True) as book:
        assignment = book.assignment()
        if assignment != name:
            raise QkvError(str(path), f"this gradebook belongs to assignment '{assignment}', not '{name}'")
        yield book
