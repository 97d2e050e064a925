"""Whose work is it: an entry's claims (what the LMS says), the STUDENT_ID in the file and its names in,
one `Decision` out. Pure functions; nothing is read here.

With a roster, sources are asked in this order and the first that names a roster student decides:
the LMS's own naming (Canvas user id, Moodle participant id then full name, GitHub username,
nbgrader's student folder, Gradescope SID then email), then `STUDENT_ID = "..."` in the file, then
the file or folder name. A later source that names a *different* roster student makes the entry a
`conflict` (graded under the first, reported, refused by `--strict`); ids no roster student has make
it `off_roster`; an entry nothing identifies (a file left as the stub's own name, `STUDENT_ID` empty)
is `unmatched`. Neither of those two is graded. Without a roster nothing can be checked: the id is the
LMS's own id for the student, else the name (as `grade.intake` makes it), and a `STUDENT_ID` that says
otherwise is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from autograder.classroom.layouts import Claim
from autograder.classroom.roster import Roster, Student
from autograder.grade.intake import safe_student_id

GRADED = ("graded", "conflict")  # the statuses of an entry that is graded
_STUDENT_ID = re.compile(r"""^[ \t]*STUDENT_ID[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*(?P<q>['"])(?P<id>[^'"\n\\]{0,100})(?P=q)""",
                         re.M)
GENERIC = ("untitled", "copy of", "submission", "solution", "homework", "assignment", "notebook", "main")


@dataclass(frozen=True)
class Decision:
    student: Optional[str]
    status: str  # graded, conflict, off_roster, unmatched
    identified_by: str  # e.g. "Canvas user id '1001'", "STUDENT_ID 's001'", "file name 's001'"
    message: str = ""


def student_id_in(text: str) -> str:
    """The last `STUDENT_ID = "..."` at the start of a line (what Python would keep), or ''."""
    found = [m.group("id").strip() for m in _STUDENT_ID.finditer(text)]
    return found[-1] if found else ""


def is_generic(name: str, module: Optional[str]) -> bool:
    """A name that says nothing about the student: the stub's own, an editor's default."""
    stem = re.sub(r"-\d+$", "", name).strip().lower()
    return (module is not None and stem == module.lower()) or stem.startswith(GENERIC) or not stem


def _lookup(roster: Roster, key: str, value: str) -> Optional[Student]:
    if key == "lms_id":
        return roster.by_lms_id(value)
    if key == "email":
        return roster.by_email(value)
    if key == "name":
        return roster.by_name(value)
    if key == "github":
        return roster.by_github(value) or roster.by_id(value)
    return roster.by_id(value)


def decide(claims: tuple[Claim, ...], student_id: str, names: tuple[str, ...], roster: Optional[Roster],
           module: Optional[str]) -> Decision:
    sources: list[tuple[str, str, str]] = [(c.source, c.value, c.key) for c in claims]
    if student_id:
        sources.append(("STUDENT_ID", student_id, "id"))
    for i, name in enumerate(names):
        if not is_generic(name, module):
            sources.append(("file name" if i == 0 else "folder name", name, "id"))
    if roster is None:
        return _without_roster(claims, student_id, names)
    asked = [(f"{label} {value!r}", _lookup(roster, key, value)) for label, value, key in sources]
    chosen = next(((label, s) for label, s in asked if s is not None), None)
    if chosen is None:
        if asked:
            return Decision(None, "off_roster", "", "not on the roster: " + ", ".join(label for label, _ in asked))
        said = "STUDENT_ID is empty" + (f", the name {names[0]!r} is the stub's own or an editor's" if names else "")
        return Decision(None, "unmatched", "", f"nothing says whose it is: {said}")
    label, student = chosen
    others = [(other, s) for other, s in asked if s is not None and s.id != student.id]
    if others:
        said = "; ".join(f"{other} says {s.id}" for other, s in others)
        return Decision(student.id, "conflict", label, f"graded as {student.id} ({label}), but {said}")
    unknown = [other for other, s in asked
               if s is None and not other.startswith(("Moodle participant", "Gradescope", "folder name"))]
    message = f"not on the roster: {', '.join(unknown)}" if unknown else ""
    return Decision(student.id, "graded", label, message)


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
    return Decision(student, "graded", label, message)
