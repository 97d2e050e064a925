"""The LMS's class list (Names and Role Provisioning Services) against the roster: who the LMS has that the roster
lacks, who the roster has that the LMS dropped, and whose email changed.

One sync is `pull`, whether `qkv lti sync` runs it or the service on its schedule (roster_sync.py).
The roster stays the course's own file: a sync shows the differences and keeps them in the history, and writes a
roster with them applied only to a new file the instructor names (then points course.yaml at it), so a roster
edited by hand (extensions, sections, ids the LMS does not know) is never overwritten by what the LMS says.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from autograder.classroom.roster import Roster, Student
from autograder.errors import QkvError
from autograder.serve.lti.adapter import platform_session

MOST_PAGES = 100  # a platform whose `next` links never end is not followed past this
MOST_MEMBERS = 100_000
# a learner of the course (its context), in full or as LTI's short form; not the system `User` or the institution
# `Student` PyLTI1p3's StudentRole also takes, which every account of an LMS may hold without being in the course
LEARNER_ROLES = frozenset({"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner", "Learner"})


def is_learner(roles: Any) -> bool:
    return isinstance(roles, list) and any(isinstance(r, str) and r in LEARNER_ROLES for r in roles)


def lms_person(user_id: str) -> str:
    """The id of a student known only to the LMS: the one a launch signs them in under (with `lti.add_unknown`) and
    the one their roster row gets from a sync, so their attempts stay theirs once the roster has them. The readable
    part is cut and its odd characters replaced, so the hash of the whole user id tells "a/b" from "a_b"."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", user_id)[:40]
    return f"lms-{readable}-{hashlib.sha256(user_id.encode()).hexdigest()[:12]}"


def roster_match(roster: Roster, user_id: str, sourced_id: str, email: str) -> Optional[Student]:
    """The roster's student an LMS user is: the LMS user id (`sub`) or LIS person id as `lms_id`, else the email,
    but only for a row without an `lms_id`: one that has it is that LMS user's alone, whoever has the email at
    the LMS (an LMS lets users set their own)."""
    found = (roster.by_lms_id(user_id) if user_id else None) or (roster.by_lms_id(sourced_id) if sourced_id else None)
    if found is not None:
        return found
    by_email = roster.by_email(email) if email else None
    return by_email if by_email is not None and not by_email.lms_id else None


@dataclass(frozen=True)
class Member:
    """A learner as the LMS lists them."""

    user_id: str
    name: str
    email: str
    sourced_id: str



@dataclass
class RosterDiff:
    added: list[Member] = field(default_factory=list)
    dropped: list[Student] = field(default_factory=list)
    changed: list[tuple[Student, str]] = field(default_factory=list)  # (the student, the LMS's email)

    def as_record(self) -> dict:
        return {"added": [vars(m) for m in self.added], "dropped": [s.id for s in self.dropped],
                "changed": [{"id": s.id, "from": s.email, "to": email} for s, email in self.changed]}

    def summary(self) -> str:
        return summary(self.as_record())

    def lines(self) -> list[str]:
        return ([f"added: {m.name or '(no name)'} <{m.email}> (LMS user {m.user_id})" for m in self.added]
                + [f"dropped: {s.id} {s.name}" for s in self.dropped]
                + [f"changed email: {s.id} {s.email} -> {email}" for s, email in self.changed])


def learners(tool: Any, issuer: str, memberships_url: str) -> list[Member]:
    """The course's active learners, pulled from the LMS with the tool's own service token."""
    registration = tool.tool_config().find_registration_by_issuer(issuer)
    service = NamesRolesProvisioningService(ServiceConnector(registration, platform_session()),
                                            {"context_memberships_url": memberships_url})
    found: list[Member] = []
    url: Optional[str] = memberships_url
    for _ in range(MOST_PAGES):
        if not url or len(found) >= MOST_MEMBERS:
            break
        page, url = service.get_members_page(url)
        for member in page if isinstance(page, list) else []:
            if not isinstance(member, dict) or member.get("status", "Active") != "Active":
                continue
            if is_learner(member.get("roles")):
                found.append(Member(*(str(member.get(k) or "")[:200] for k in
                                      ("user_id", "name", "email", "lis_person_sourcedid"))))
    return found


def summary(record: dict) -> str:
    """A kept sync's differences counted (what the log and the class page say of it)."""
    return ", ".join(f"{len(record.get(key) or ())} {what}" for key, what in
                     (("added", "added"), ("dropped", "dropped"), ("changed", "changed email")))


@dataclass(frozen=True)
class Sync:
    number: int  # its row in the history
    issuer: str
    course_id: str
    members: list[Member]
    diff: RosterDiff


def pull(tool: Any, name: str, roster: Optional[Roster], now: float) -> Sync:
    """One sync of NAME's class list, kept in the history: what `qkv lti sync` runs, and `qkv serve` on its
    schedule. A QkvError (one line) when there is nothing to compare, no launch has named the LMS course's roster
    service yet, or the LMS's answer cannot be read (refused, away, not a class list)."""
    if roster is None:
        raise QkvError("--roster", "no roster to compare with: name one with --roster FILE")
    context = tool.store.context(name)
    if context is None:
        raise QkvError(name, "no launch from the LMS has named its course's roster service yet: open the "
                             "assignment from the LMS once, then sync")
    issuer, course_id, memberships = context
    try:
        members = learners(tool, issuer, memberships)
    except Exception as err:  # whatever the LMS's answer made the library raise
        said = (str(err).splitlines() or [type(err).__name__])[0]  # some errors have no message at all
        raise QkvError(memberships, f"the LMS's class list could not be read: {said[:300]}") from None
    diff = roster_diff(roster, members)
    return Sync(tool.store.keep_sync(name, diff.as_record(), now), issuer, course_id, members, diff)


def roster_diff(roster: Roster, members: list[Member]) -> RosterDiff:
    """Each learner matched to the roster as a launch is (the LMS user id as `lms_id`, its person id, the email)."""
    diff, matched = RosterDiff(), set()
    for member in members:
        student = roster_match(roster, member.user_id, member.sourced_id, member.email)
        if student is None:
            diff.added.append(member)
            continue
        matched.add(student.id)
        if member.email and member.email.casefold() != student.email.casefold():
            diff.changed.append((student, member.email))
    diff.dropped = [s for s in roster.students if s.id not in matched]
    return diff


def applied(roster: Roster, diff: RosterDiff) -> list[list[str]]:
    """The roster's rows with the differences applied (its own columns kept), for a new roster file."""
    extra = [column for column, _ in (roster.students[0].extra if roster.students else ())]
    header = ["id", "name", "email", "lms_id", "section", "extension", *extra]
    dropped, emails = {s.id for s in diff.dropped}, {s.id: email for s, email in diff.changed}
    rows = [header]
    for s in roster.students:
        if s.id not in dropped:
            rows.append([s.id, s.name, emails.get(s.id, s.email), s.lms_id, s.section,
                         _extension_cell(s), *(s.get(c) for c in extra)])
    taken = {s.id for s in roster.students}
    for member in diff.added:
        if lms_person(member.user_id) not in taken:  # a roster id of that shape is someone else's: left for a hand
            taken.add(lms_person(member.user_id))
            rows.append([lms_person(member.user_id), member.name, member.email, member.user_id, "", "",
                         *("" for _ in extra)])
    return rows


def _extension_cell(student: Student) -> str:
    """The extension as a roster cell reads it back (hours, or the new due date)."""
    found = student.extension
    if found is None:
        return ""
    return f"{found.hours:g}" if found.hours is not None else found.due.isoformat()
