"""Whose work is it: an entry's claims (what the LMS says), the STUDENT_ID in the file and its names in,
one `Decision` out. Pure functions; nothing is read here.

With a roster, sources are asked in this order and the first that names a roster student decides:
the LMS's own naming (Canvas user id, Moodle participant id then full name, GitHub username,
nbgrader's student folder, Gradescope SID then email), then `STUDENT_ID = "..."` in the file, then
the file or folder name. A later source that names a *different* roster student makes the entry a
`conflict`: graded under the LMS's student (reported, refused by `--strict`) when the LMS named one,
and not graded at all when the disagreement is the LMS's own (a Moodle name that reads two ways).
What the student writes never outweighs the LMS: when the LMS's id for the entry is on no roster row,
STUDENT_ID or a file name may identify only a student whose roster row has no such id to compare
(a roster without `canvas_user_id`s); naming a student whose id differs is a `conflict`, not graded. Ids no roster
student has make the entry `off_roster`; an entry nothing identifies (a file left as the stub's own
name, `STUDENT_ID` empty) is `unmatched`. Neither of those two is graded. Without a roster nothing can
be checked: the id is the LMS's own id for the student, else the name (as `grade.intake` makes it), and
a `STUDENT_ID` that says otherwise is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from autograder.classroom.layouts import Claim
from autograder.classroom.roster import IdKind, Roster, Student
from autograder.grade.intake import safe_student_id

GRADED = ("graded", "conflict")  # the statuses of an entry that is graded
# matched at the start of a line (`student_id_in` finds the lines): re's "^" in MULTILINE mode tries every
# character of the file, 0.15 ms for a 38 kB module, and a class's intake reads every one
_STUDENT_ID = re.compile(r"""[ \t]*STUDENT_ID[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*(?P<q>['"])(?P<id>[^'"\n\\]{0,100})(?P=q)""")
GENERIC = ("untitled", "copy of", "submission", "solution", "homework", "assignment", "notebook", "main")


@dataclass(frozen=True)
class Decision:
    student: Optional[str]
    status: str  # graded, conflict, off_roster, unmatched
    identified_by: str  # e.g. "Canvas user id '1001'", "STUDENT_ID 's001'", "file name 's001'"
    message: str = ""
    by_lms: bool = False  # the LMS's own naming identified the student, not what the student wrote


def student_id_in(text: str) -> str:
    """The last `STUDENT_ID = "..."` at the start of a line (what Python would keep), or ''."""
    at = text.rfind("STUDENT_ID")
    while at >= 0:
        line = text.rfind("\n", 0, at) + 1
        found = _STUDENT_ID.match(text, line)
        if found:
            return found.group("id").strip()
        at = text.rfind("STUDENT_ID", 0, line)  # a line holds one assignment at its start, if any
    return ""


def is_generic(name: str, module: Optional[str]) -> bool:
    """A name that says nothing about the student: the stub's own, an editor's default."""
    stem = re.sub(r"-\d+$", "", name).strip().lower()
    return (module is not None and stem == module.lower()) or stem.startswith(GENERIC) or not stem


def _lookup(roster: Roster, key: str, value: str) -> Optional[Student]:
    if key in IdKind._value2member_map_:
        return roster.match([(IdKind(key), value)]).student
    if key == "email":
        return roster.by_email(value)
    if key == "name":
        return roster.by_name(value)
    if key == "github":
        return roster.by_github(value) or roster.by_id(value)
    return roster.by_id(value)


_ID_KEYS = {IdKind.CANVAS_USER_ID.value: lambda s: s.id_of(IdKind.CANVAS_USER_ID), "github": lambda s: s.get("github"), "id": lambda s: s.id}  # ids, not names


def decide(claims: tuple[Claim, ...], student_id: str, names: tuple[str, ...], roster: Optional[Roster],
           module: Optional[str]) -> Decision:
    if roster is None:
        return _without_roster(claims, student_id, names)
    lms = [(f"{c.source} {c.value!r}", _lookup(roster, c.key, c.value), c.key) for c in claims]
    own = [(f"STUDENT_ID {student_id!r}", _lookup(roster, "id", student_id))] if student_id else []
    own += [(f"{'file name' if i == 0 else 'folder name'} {name!r}", _lookup(roster, "id", name))
            for i, name in enumerate(names) if not is_generic(name, module)]
    asked = [(label, s) for label, s, _ in lms] + own
    chosen = next(((label, s) for label, s in asked if s is not None), None)
    if chosen is None:
        if asked:
            return Decision(None, "off_roster", "", "not on the roster: " + ", ".join(label for label, _ in asked))
        said = "STUDENT_ID is empty" + (f", the name {names[0]!r} is the stub's own or an editor's" if names else "")
        return Decision(None, "unmatched", "", f"nothing says whose it is: {said}")
    label, student = chosen
    by_lms = any(label == other for other, _, _ in lms)
    lms_students = {s.id for _, s, _ in lms if s is not None}
    if len(lms_students) > 1:
        said = "; ".join(f"{other} says {s.id}" for other, s, _ in lms if s is not None)
        return Decision(None, "conflict", "", f"not graded: the LMS's own naming names two students ({said})")
    # an LMS id that names no one, beside a student named by anything weaker than an LMS id, who has such an
    # id of their own: two people (a Gradescope SID is only compared when no LMS source found the student)
    by_lms_id = any(s is not None and key in _ID_KEYS for _, s, key in lms)
    compared = () if by_lms_id else (IdKind.CANVAS_USER_ID.value, "github") if lms_students else tuple(_ID_KEYS)
    contradicted = [(other, key, _ID_KEYS[key](student)) for other, s, key in lms
                    if s is None and key in compared and _ID_KEYS[key](student)]
    if contradicted:
        other, key, theirs = contradicted[0]
        return Decision(None, "conflict", "", f"not graded: {other} is on no roster row, and {label} names "
                                              f"{student.id}, whose {key} is {theirs!r}")
    others = [(other, s) for other, s in asked if s is not None and s.id != student.id]
    if others:
        said = "; ".join(f"{other} says {s.id}" for other, s in others)
        return Decision(student.id, "conflict", label, f"graded as {student.id} ({label}), but {said}", by_lms)
    unknown = [other for other, s in asked
               if s is None and not other.startswith(("Moodle participant", "Gradescope", "folder name"))]
    message = f"not on the roster: {', '.join(unknown)}" if unknown else ""
    return Decision(student.id, "graded", label, message, by_lms)


def _without_roster(claims: tuple[Claim, ...], student_id: str, names: tuple[str, ...]) -> Decision:
    if claims:
        label, student = f"{claims[0].source} {claims[0].value!r}", safe_student_id(claims[0].value)
    elif names:
        label, student = f"file name {names[0]!r}", safe_student_id(names[0])
    else:
        return Decision(None, "unmatched", "", "no name to take an id from")
    message = ""
    if student_id and student_id != student:
        message = f"STUDENT_ID says {student_id!r}; without a roster the id is {student!r} (pass --roster to check)"
    return Decision(student, "graded", label, message, bool(claims))
