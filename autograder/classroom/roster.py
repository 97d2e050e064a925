"""The roster: a CSV file in, a `Roster` of `Student`s out (or a one-line `QkvError` naming the file and line).

Columns (a header row, names in any order and case): `id` (required: the student id grading uses,
letters, digits, `.`, `-`, `_`), `name`, `email`, one column per identifier an LMS gives (`IdKind`:
`canvas_user_id`, `sis_id`, `sis_integration_id`, `moodle_user_id`, `moodle_participant_id`; a JupyterHub's
`hub_user`), `section`,
`extension` (hours, e.g. `48`, or a new due date in ISO 8601, e.g. `2026-12-20T23:59+08:00`). Any other
column is kept as it is (`github` is read by the GitHub Classroom layout). Bounded: size, rows and field
length; ids, emails and each LMS identifier unique.

One identity rule for every route (zip intake, LTI launches, the LMS's class list): `Roster.match` takes what
the LMS says as (kind, value) pairs and compares each only with the roster column of that kind, so a Moodle
user id 5 never meets a participant id 5, nor a Canvas id a SIS id. A roster of before (`lms_id`) is read
with a note: each old `lms_id` is the id that LMS's own files named, the Canvas user id in Canvas and the
Moodle participant id in a Moodle download, never an LTI `sub`, a Moodle user id or a SIS id.
"""

from __future__ import annotations

import csv
import datetime as dt
import enum
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from autograder.errors import QkvError

MAX_ROSTER_BYTES = 20_000_000
MAX_STUDENTS = 100_000
MAX_FIELD = 1_000
MAX_EXTENSION_HOURS = 24 * 366
LEGACY = "lms_id"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class IdKind(enum.Enum):
    """An identifier an LMS gives a student: each its own roster column, compared only with its own kind."""

    CANVAS_USER_ID = "canvas_user_id"  # Canvas's number: $Canvas.user.id, the gradebook export's ID, the zip's
    SIS_ID = "sis_id"  # the school's: Canvas's SIS User ID (lis person_sourcedid), Moodle's ID number (idnumber)
    SIS_INTEGRATION_ID = "sis_integration_id"  # Canvas's $Canvas.user.sisIntegrationId
    MOODLE_USER_ID = "moodle_user_id"  # Moodle's user id: its LTI `sub` and its class list's user_id
    MOODLE_PARTICIPANT_ID = "moodle_participant_id"  # per assignment, in Moodle's submission downloads only
    HUB_USER = "hub_user"  # a JupyterHub user name, where it is not the roster id (qkv serve in a hub)


# an old `lms_id` is what docs/class.md said it was: the id each LMS's own files named
LEGACY_KINDS = (IdKind.CANVAS_USER_ID, IdKind.MOODLE_PARTICIPANT_ID)
KNOWN = ("id", "name", "email", "section", "extension", LEGACY, *(k.value for k in IdKind))
LEGACY_NOTE = ("column `lms_id` is the old one: each value is taken as the student's Canvas user id (Canvas) "
               "and Moodle participant id (Moodle downloads), never as an LTI user id, Moodle user id or SIS id; "
               "rename it canvas_user_id or moodle_participant_id (docs/class.md)")


@dataclass(frozen=True)
class Extension:
    """More time for one student: `hours` after the due date, or a new due date (naive = the due date's zone)."""

    hours: Optional[float] = None
    due: Optional[dt.datetime | dt.date] = None

    def __post_init__(self) -> None:
        if (self.hours is None) == (self.due is None):
            raise ValueError("an extension is either hours or a new due date")

    def __str__(self) -> str:
        return f"until {self.due.isoformat()}" if self.due is not None else f"+{self.hours:g} h"


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""
    email: str = ""
    section: str = ""
    extension: Optional[Extension] = None
    extra: tuple[tuple[str, str], ...] = ()  # the other columns, in file order
    ids: tuple[tuple[IdKind, str], ...] = ()  # the LMS identifiers the row gives

    def get(self, column: str) -> str:
        return dict(self.extra).get(column, "")

    def id_of(self, kind: IdKind) -> str:
        return dict(self.ids).get(kind, "")


@dataclass(frozen=True)
class Match:
    """Whom a set of LMS identifiers names: `student`, or None with `ambiguous` when they name several rows."""

    student: Optional[Student]
    ambiguous: tuple[Student, ...] = ()
    by: Optional[IdKind] = None  # the kind that found the student


@dataclass(frozen=True)
class Roster:
    students: tuple[Student, ...]
    source: str = ""
    notes: tuple[str, ...] = ()  # one line each, for whoever reads the roster (the old `lms_id`)
    _by: dict[str, dict[str, Student]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, dict[str, Student]] = {k: {} for k in ("id", "fold", "email", "name", "github",
                                                                 *(kind.value for kind in IdKind))}
        ambiguous: dict[str, set[str]] = {k: set() for k in index}
        for s in self.students:
            keys = {"id": s.id, "fold": s.id.casefold(), "email": s.email.casefold(),
                    "name": normal_name(s.name), "github": s.get("github").casefold(),
                    **{kind.value: value for kind, value in s.ids}}
            for kind, key in keys.items():
                if not key:
                    continue
                if key in index[kind]:
                    ambiguous[kind].add(key)
                index[kind][key] = s
        for kind, shared in ambiguous.items():  # a key two students share identifies neither
            for key in shared:
                index[kind].pop(key, None)
        object.__setattr__(self, "_by", index)

    def __len__(self) -> int:
        return len(self.students)

    def __contains__(self, student_id: str) -> bool:
        return student_id in self._by["id"]

    def by_id(self, value: str) -> Optional[Student]:
        """A roster id, exactly, else one that differs only in case (when no other student's does)."""
        return self._by["id"].get(value) or self._by["fold"].get(value.casefold())

    def by_lms(self, kind: IdKind, value: str) -> Optional[Student]:
        """The one row whose `kind` column is exactly `value` (compared with that column only)."""
        return self._by[kind.value].get(value.strip()) if value.strip() else None

    def match(self, given: "Iterable[tuple[IdKind, str]]") -> Match:
        """The row the LMS's identifiers name: each compared only with its own column, exactly; identifiers
        that name two rows name neither (`ambiguous`). The one rule of every route (launch, sync, intake)."""
        found: dict[str, tuple[Student, IdKind]] = {}
        for kind, value in given:
            student = self.by_lms(kind, value)
            if student is not None:
                found.setdefault(student.id, (student, kind))
        if len(found) > 1:
            return Match(None, tuple(s for s, _ in found.values()))
        if found:
            student, kind = next(iter(found.values()))
            return Match(student, by=kind)
        return Match(None)

    def by_email(self, value: str) -> Optional[Student]:
        return self._by["email"].get(value.strip().casefold())

    def by_name(self, value: str) -> Optional[Student]:
        return self._by["name"].get(normal_name(value))

    def by_github(self, value: str) -> Optional[Student]:
        return self._by["github"].get(value.casefold())


def normal_name(name: str) -> str:
    return " ".join(name.casefold().split())


def parse_extension(text: str) -> Optional[Extension]:
    """'' -> None; '48' or '1.5' -> hours; an ISO 8601 date or date-time -> a new due date. Raises ValueError."""
    text = text.strip()
    if not text:
        return None
    try:
        hours = float(text)
    except ValueError:
        hours = None
    if hours is not None:
        if not math.isfinite(hours) or not 0 <= hours <= MAX_EXTENSION_HOURS:
            raise ValueError(f"{text!r} hours is not between 0 and {MAX_EXTENSION_HOURS}")
        return Extension(hours=hours)
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return Extension(due=dt.date.fromisoformat(text))
        return Extension(due=dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise ValueError(f"{text[:40]!r} is neither hours nor an ISO 8601 date") from None


def parse_roster(text: str, where: str) -> Roster:
    """A roster from CSV text; `where` names the file in errors."""
    if "\x00" in text:
        raise QkvError(where, "holds NUL bytes: not a CSV text file")
    text = text.removeprefix("\ufeff")
    csv.field_size_limit(MAX_FIELD * 4)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise QkvError(where, "is empty: a roster needs a header row with at least an `id` column")
        columns = [h.strip() for h in header]
        lowered = [c.lower() for c in columns]
        if "id" not in lowered:
            raise QkvError(f"{where}:1", f"no `id` column in the header (found: {', '.join(columns)[:120]})")
        for name in set(lowered):
            if lowered.count(name) > 1 and name:
                raise QkvError(f"{where}:1", f"column `{name}` appears twice")
        if LEGACY in lowered and any(k.value in lowered for k in LEGACY_KINDS):
            raise QkvError(f"{where}:1", "has both the old `lms_id` and canvas_user_id or moodle_participant_id: "
                                         "keep the new columns only")
        kinds: list[tuple[IdKind, str]] = [(kind, kind.value) for kind in IdKind if kind.value in lowered]
        kinds += [(kind, LEGACY) for kind in LEGACY_KINDS if LEGACY in lowered]
        students: list[Student] = []
        seen: dict[str, dict[str, int]] = {key: {} for key in ("id", "email", *(k.value for k in IdKind))}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(students) >= MAX_STUDENTS:
                raise QkvError(where, f"more than {MAX_STUDENTS:,} students")
            if len(row) != len(columns):
                raise QkvError(f"{where}:{line}", f"{len(row)} fields, the header has {len(columns)}")
            for cell in row:
                if len(cell) > MAX_FIELD:
                    raise QkvError(f"{where}:{line}", f"a field longer than {MAX_FIELD} characters")
            values = {c: v.strip() for c, v in zip(lowered, row)}
            student_id = values["id"]
            if not _ID.fullmatch(student_id):
                raise QkvError(f"{where}:{line}", f"id {student_id[:40]!r}: an id is 1-64 letters, digits, '.', '-', '_'")
            try:
                extension = parse_extension(values.get("extension", ""))
            except ValueError as err:
                raise QkvError(f"{where}:{line}", f"extension: {err}") from None
            ids = tuple((kind, values[column]) for kind, column in kinds if values[column])
            for key in seen:
                value = values.get(key, "").casefold() if key == "email" else values.get(key, "")
                if key in IdKind._value2member_map_:
                    value = dict(ids).get(IdKind(key), "")
                if value and value in seen[key]:
                    raise QkvError(f"{where}:{line}", f"{key} {value[:40]!r} is also on line {seen[key][value]}")
                if value:
                    seen[key][value] = line
            extra = tuple((c, v.strip()) for c, low, v in zip(columns, lowered, row) if low not in KNOWN)
            students.append(Student(student_id, values.get("name", ""), values.get("email", ""),
                                    values.get("section", ""), extension, extra, ids))
    except csv.Error as err:
        raise QkvError(f"{where}:{reader.line_num}", f"not valid CSV: {err}") from None
    if not students:
        raise QkvError(where, "has a header but no students")
    return Roster(tuple(students), where, (f"{where}: {LEGACY_NOTE}",) if LEGACY in lowered else ())


def load_roster(path: Path) -> Roster:
    where = str(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise QkvError(where, "is not a file: a roster is a CSV file")
        if size > MAX_ROSTER_BYTES:
            raise QkvError(where, f"is {size:,} bytes; a roster may have at most {MAX_ROSTER_BYTES:,}")
        raw = path.read_bytes()[: MAX_ROSTER_BYTES + 1]
    except FileNotFoundError:
        raise QkvError(where, "no such roster file") from None
    except OSError as err:
        raise QkvError(where, f"cannot read the roster: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise QkvError(where, f"is not UTF-8 text (byte {err.start}); save the roster as UTF-8 CSV") from None
    return parse_roster(text, where)
