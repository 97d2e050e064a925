"""Who an LMS user is on the roster (launches and the class list alike), and the LMS's class list (Names and Role
Provisioning Services) against the roster: who the LMS has that the roster lacks, who the roster has that the LMS
dropped, and whose email changed.

One sync is `pull`, whether `qkv lti sync` runs it or the service on its schedule (roster_sync.py).
The roster stays the course's own file: a sync shows the differences and keeps them in the history, and writes a
roster with them applied only to a new file the instructor names (then points course.yaml at it), so a roster
edited by hand (extensions, sections, ids the LMS does not know) is never overwritten by what the LMS says.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from pylti1p3.service_connector import ServiceConnector

from autograder.classroom.roster import IdKind, Roster, Student
from autograder.course.lti_settings import Lms, Platform
from autograder.errors import QkvError
from autograder.serve.lti.adapter import platform_session, service_pages

NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
NRPS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
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


CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
# the custom claims the Canvas configuration asks for (registration.py), by the substitution variable's name
CANVAS_CUSTOM = {"canvas_user_id": "$Canvas.user.id", "canvas_user_sis_integration_id": "$Canvas.user.sisIntegrationId",
                 "canvas_course_id": "$Canvas.course.id"}


def _text(value: Any) -> str:
    """A claim as an identifier: a string or a whole number, cut; Canvas sends a variable it cannot fill (a user
    without an integration id) as its own name, `$Canvas...`, which names no one."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    text = str(value).strip()[:200]
    return "" if text.startswith("$") else text


@dataclass(frozen=True)
class LmsUser:
    """An LMS user as a launch or the class list names them: their `sub` at `issuer`, the identifiers of the
    roster's kinds the platform gives (each read as that LMS sends it), their email."""

    issuer: str
    sub: str
    email: str
    ids: tuple[tuple[IdKind, str], ...]


def lms_user(platform: Platform, sub: Any, sourced_id: Any, email: Any, custom: Any) -> LmsUser:
    """What a platform's launch or class-list member says, as identifiers of the roster's kinds. Canvas: its numeric
    id and SIS integration id in the custom claim the configuration asks for, the SIS User ID as LIS person id
    (its `sub` is an opaque id of its own); Moodle: `sub` is the Moodle user id, the LIS person id the user's ID
    number; any other LMS: the LIS person id as the SIS id."""
    custom = custom if isinstance(custom, dict) else {}
    ids = [(IdKind.SIS_ID, _text(sourced_id))]
    if platform.lms is Lms.CANVAS:
        ids += [(IdKind.CANVAS_USER_ID, _text(custom.get("canvas_user_id"))),
                (IdKind.SIS_INTEGRATION_ID, _text(custom.get("canvas_user_sis_integration_id")))]
    elif platform.lms is Lms.MOODLE:
        ids += [(IdKind.MOODLE_USER_ID, _text(sub))]
    return LmsUser(platform.issuer, _text(sub), _text(email), tuple((k, v) for k, v in ids if v))


@dataclass(frozen=True)
class Found:
    """Whom an LMS user is on the roster: `student`, else `why` not (one sentence), and whether the match is one
    the store has yet to keep (`new`: their first launch as that student)."""

    student: Optional[Student]
    why: str = ""
    new: bool = False


class Claims(Protocol):
    """Which roster row each user of one LMS was matched to on their first launch (the store keeps them)."""

    def student_of(self, sub: str) -> Optional[str]: ...

    def sub_of(self, student: str) -> Optional[str]: ...


@dataclass(frozen=True)
class KeptClaims:
    """An LMS's claims read whole (a sync compares a class with them)."""

    by_sub: dict[str, str] = field(default_factory=dict)
    by_student: dict[str, str] = field(default_factory=dict)

    def student_of(self, sub: str) -> Optional[str]:
        return self.by_sub.get(sub)

    def sub_of(self, student: str) -> Optional[str]:
        return self.by_student.get(student)


def roster_match(roster: Roster, user: LmsUser, claims: Claims, emails_verified: bool) -> Found:
    """The roster's student an LMS user is, one rule for launches and the class list: the student their `sub` at
    this LMS was matched to before, else the one row the identifiers of each kind name (Roster.match), else, only
    where course.yaml says the LMS's emails are verified, the row with their email that has no identifier of a
    kind the LMS gave. A row another user of this LMS claimed is never theirs."""
    claimed = claims.student_of(user.sub) if user.sub else None
    if claimed is not None:
        found = roster.by_id(claimed)
        if found is not None and found.id == claimed:
            return Found(found)
        return Found(None, f"the roster no longer has {claimed}, whom this LMS user was")
    match = roster.match(user.ids)
    if match.ambiguous:
        return Found(None, "the LMS's ids for you name several roster rows ("
                           + ", ".join(s.id for s in match.ambiguous[:4]) + ")")
    student = match.student
    if student is None and emails_verified and user.email:
        by_email = roster.by_email(user.email)
        kinds = {kind for kind, _ in user.ids}
        if by_email is not None and not any(by_email.id_of(kind) for kind in kinds):
            student = by_email
    if student is None:
        return Found(None)
    if claims.sub_of(student.id) is not None:  # and not this user's, or their sub would have found it
        return Found(None, f"roster row {student.id} is already another LMS user's")
    return Found(student, new=True)


@dataclass(frozen=True)
class Member:
    """A learner as the LMS lists them."""

    user: LmsUser
    name: str

    def as_record(self) -> dict:
        return {"user_id": self.user.sub, "name": self.name, "email": self.user.email,
                **{kind.value: value for kind, value in self.user.ids}}


@dataclass
class RosterDiff:
    added: list[Member] = field(default_factory=list)
    dropped: list[Student] = field(default_factory=list)
    changed: list[tuple[Student, str]] = field(default_factory=list)  # (the student, the LMS's email)

    def as_record(self) -> dict:
        return {"added": [m.as_record() for m in self.added], "dropped": [s.id for s in self.dropped],
                "changed": [{"id": s.id, "from": s.email, "to": email} for s, email in self.changed]}

    def summary(self) -> str:
        return summary(self.as_record())

    def lines(self) -> list[str]:
        return ([f"added: {m.name or '(no name)'} <{m.user.email}> (LMS user {m.user.sub})" for m in self.added]
                + [f"dropped: {s.id} {s.name}" for s in self.dropped]
                + [f"changed email: {s.id} {s.email} -> {email}" for s, email in self.changed])


def learners(tool: Any, platform: Platform, memberships_url: str) -> list[Member]:
    """The course's active learners, pulled from the LMS with the tool's own service token, page by page; every
    page's address (the first one's, and each `Link: rel="next"`) held to the platform's sites."""
    registration = tool.tool_config().find_registration_by_issuer(platform.issuer)
    connector = ServiceConnector(registration, platform_session())
    found: list[Member] = []
    for page in service_pages(connector, platform, memberships_url, [NRPS_SCOPE], NRPS_TYPE, MOST_PAGES):
        members = page.get("members") if isinstance(page, dict) else None
        for member in members if isinstance(members, list) else []:
            if not isinstance(member, dict) or member.get("status", "Active") != "Active":
                continue
            if is_learner(member.get("roles")):
                # no custom claims: a class list carries them only for one resource link's launches (`rlid`)
                user = lms_user(platform, member.get("user_id"), member.get("lis_person_sourcedid"),
                                member.get("email"), None)
                found.append(Member(user, _text(member.get("name"))))
        if len(found) >= MOST_MEMBERS:
            break
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
    platform = tool.settings.platform(issuer)
    if platform is None:
        raise QkvError(name, f"its last launch came from {issuer[:200]!r}, a platform course.yaml no longer lists")
    try:
        members = learners(tool, platform, memberships)
    except Exception as err:  # whatever the LMS's answer made the library raise
        said = (str(err).splitlines() or [type(err).__name__])[0]  # some errors have no message at all
        raise QkvError(memberships, f"the LMS's class list could not be read: {said[:300]}") from None
    kept = tool.store.claims(issuer)
    claims = KeptClaims(kept, {student: sub for sub, student in kept.items()})
    diff = roster_diff(roster, members, claims, tool.settings.emails_verified)
    return Sync(tool.store.keep_sync(name, diff.as_record(), now), issuer, course_id, members, diff)


def roster_diff(roster: Roster, members: list[Member], claims: Claims = KeptClaims(),
                emails_verified: bool = False) -> RosterDiff:
    """Each learner matched to the roster as a launch is (roster_match, with the LMS's kept claims)."""
    diff, matched = RosterDiff(), set()
    for member in members:
        student = roster_match(roster, member.user, claims, emails_verified).student
        if student is None or student.id in matched:
            diff.added.append(member)
            continue
        matched.add(student.id)
        if member.user.email and member.user.email.casefold() != student.email.casefold():
            diff.changed.append((student, member.user.email))
    diff.dropped = [s for s in roster.students if s.id not in matched]
    return diff


def applied(roster: Roster, diff: RosterDiff) -> list[list[str]]:
    """The roster's rows with the differences applied (its own columns kept, each LMS identifier in its own
    column), for a new roster file."""
    extra = [column for column, _ in (roster.students[0].extra if roster.students else ())]
    kinds = [kind for kind in IdKind if any(s.id_of(kind) for s in roster.students)
             or any(m.user.ids and dict(m.user.ids).get(kind) for m in diff.added)]
    header = ["id", "name", "email", *(kind.value for kind in kinds), "section", "extension", *extra]
    dropped, emails = {s.id for s in diff.dropped}, {s.id: email for s, email in diff.changed}
    rows = [header]
    for s in roster.students:
        if s.id not in dropped:
            rows.append([s.id, s.name, emails.get(s.id, s.email), *(s.id_of(kind) for kind in kinds), s.section,
                         _extension_cell(s), *(s.get(c) for c in extra)])
    taken = {s.id for s in roster.students}
    for member in diff.added:
        person = lms_person(member.user.sub)
        if person not in taken:  # a roster id of that shape is someone else's: left for a hand
            taken.add(person)
            given = dict(member.user.ids)
            rows.append([person, member.name, member.user.email, *(given.get(kind, "") for kind in kinds), "", "",
                         *("" for _ in extra)])
    return rows


def _extension_cell(student: Student) -> str:
    """The extension as a roster cell reads it back (hours, or the new due date)."""
    found = student.extension
    if found is None:
        return ""
    return found.due.isoformat() if found.due is not None else f"{found.hours:g}"
