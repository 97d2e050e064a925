"""What a launch does: the tool an LMS calls (its endpoints, OIDC login initiation at /lti/login, the launch at
/lti/launch and the tool's public key set at /lti/jwks.json, are serve/app/lti.py's), and whom a launch signs in.

A launch PyLTI1p3 validated signs its user in with the same session the token sign-in gives: a student found on
the roster by the rule of members.roster_match (their `sub` kept from their first launch, else the identifiers the
LMS gives, each compared with its own roster column, else a verified email), or, where course.yaml's
`lti.add_unknown` says so, one the roster lacks, under an id of their LMS user id; staff by their most specific
context role (a TA is staff, never instructor). A revoked student is refused until reinstated. An instructor's
launch from an LMS course course.yaml does not list yet shows its id to add. Anything else is one sentence on a
refusal page, with what the LMS sent that did not match.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import urlsplit

from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.roles import TeacherRole, TeachingAssistantRole
from starlette.responses import Response

from autograder.grade.gradebook.accounts import Role
from autograder.grade.gradebook.lti import LtiStore
from autograder.serve.lti.adapter import CookieJar, Launch, LtiRequest, Platforms, StoredValues
from autograder.serve.lti.deep_link import picker
from autograder.serve.lti.grades import AGS_CLAIM
from autograder.serve.lti.keys import read_keys
from autograder.serve.lti.members import CUSTOM, Claims, is_learner, lms_person, lms_user, roster_match
from autograder.course.lti_settings import LtiSettings, Platform, origin_of
from autograder.serve.guard import FAILURE_WINDOW, LTI_LOGINS_ALLOWED
from autograder.serve.app.site import Site, session_response
from autograder.serve.pages import Refusal

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
LOGIN_PATH, LAUNCH_PATH, JWKS_PATH = "/lti/login", "/lti/launch", "/lti/jwks.json"


@dataclass
class LtiTool:
    """The tool as `qkv serve` runs it: the course's `lti:` settings, the key pair, and the launch values' store."""

    settings: LtiSettings
    private_pem: str
    public_pem: str
    store: LtiStore
    values: StoredValues = field(init=False)  # the library's view of `store`, one for every request

    def __post_init__(self) -> None:
        self.values = StoredValues(self.store)

    @classmethod
    def open(cls, settings: LtiSettings, keys: Path, where: Any) -> "LtiTool":
        private, public = read_keys(keys)
        return cls(settings, private, public, LtiStore(where))

    @property
    def origins(self) -> tuple[str, ...]:
        return tuple(sorted({o for p in self.settings.platforms for o in p.framing}))

    def tool_config(self) -> Platforms:
        config = Platforms(self.settings.tool_config())
        for platform in self.settings.platforms:
            config.set_private_key(platform.issuer, self.private_pem)
            config.set_public_key(platform.issuer, self.public_pem)
        return config

    def close(self) -> None:
        self.store.close()

    @property
    def launch_url(self) -> str:
        return self.settings.tool_url + LAUNCH_PATH


def signed_in(tool: LtiTool, state: Site, lti_request: LtiRequest) -> Response:
    """The session a launch PyLTI1p3 validated signs in (or the deep-linking picker), else a Refusal."""
    launch = Launch(lti_request, tool.tool_config(), tool.values, CookieJar(lti_request))
    try:
        data = launch.get_launch_data()
        if not isinstance(data, dict) or not isinstance(data.get(CLAIM + "roles"), list):
            raise LtiException("its claims are not an LTI message's")
    except (LtiException, OIDCException) as err:
        raise Refusal(403, f"the LMS's launch was refused: {err}", "Launch refused") from None
    except (ValueError, TypeError, AttributeError, KeyError):  # the library reading claims of other shapes
        raise Refusal(403, "the LMS's launch was refused: its id_token is not one an LMS would send",
                      "Launch refused") from None
    role = role_of(data)
    platform = in_course(data, tool.settings, role)
    services_on(data, platform)
    if launch.is_deep_link_launch():
        if role is not Role.INSTRUCTOR:
            raise Refusal(403, "only the course's instructors add assignment links", "Launch refused")
        return picker(tool.values, launch.get_launch_id(), state.assignments)
    if not launch.is_resource_launch():
        raise Refusal(400, "this service opens assignment links only (an LTI resource-link launch)",
                      "Launch refused")
    now = time.time()
    person, new = person_of(data, role, state.roster, platform, KeptStore(tool.store, platform.issuer),
                            tool.settings.emails_verified, tool.settings.add_unknown)
    if new and not tool.store.claim(platform.issuer, str(data["sub"]), person, now):
        raise Refusal(403, f"roster row {person} was just taken by another LMS user: ask your instructor",
                      "Not on the roster")
    if state.accounts.is_revoked(person):
        raise Refusal(403, "your access to this course was revoked: ask your instructor to reinstate you",
                      "Access revoked")
    account = state.accounts.launched(person, role, now)
    grades = data.get(AGS_CLAIM)
    if role is Role.STUDENT:  # where their scores go (grades.py)
        tool.store.remember(person, str(data["iss"]), str(data["sub"]),
                            grades if isinstance(grades, dict) else {}, now)
    target = landing(data, tool.settings.tool_url, state.assignments)
    if target != "/" and isinstance(grades, dict) and isinstance(grades.get("lineitem"), str):
        # the assignment's own column in the LMS's gradebook: its scores go there (grades.py)
        tool.store.keep_lineitem(target.removeprefix("/a/"), platform.issuer, grades["lineitem"])
    members, context = data.get(NRPS_CLAIM), data.get(CLAIM + "context")
    if target != "/" and isinstance(members, dict) and members.get("context_memberships_url"):
        # the LMS course's class list, which `qkv lti sync NAME` reads
        tool.store.keep_context(target.removeprefix("/a/"), str(data["iss"]),
                                str(context.get("id", "")) if isinstance(context, dict) else "",
                                str(members["context_memberships_url"]), now)
    return session_response(state, account, target, framed=True)


def login_allowed(accounts: Any, address: str, now: float, allowed: int = LTI_LOGINS_ALLOWED) -> bool:
    """Whether a login initiation from `address` is taken, counting it if so (beside the failed sign-ins)."""
    return bool(accounts.take_turn(f"lti-login:{address}", now, FAILURE_WINDOW, allowed))


def on_tool(address: str, tool_url: str) -> bool:
    parts, tool = urlsplit(address), urlsplit(tool_url)
    return (parts.scheme, parts.netloc) == (tool.scheme, tool.netloc)


def in_course(data: Mapping[str, Any], settings: LtiSettings, role: Role) -> Platform:
    """The launch's platform; refuses a launch from an LMS course (context) course.yaml does not name for it, and
    shows an instructor the ids to add (learnt from the LMS, never guessed: the instructor confirms it is their
    course by writing it into course.yaml)."""
    context = data.get(CLAIM + "context")
    context = context if isinstance(context, dict) else {}
    found = str(context.get("id", ""))[:200]
    platform = settings.platform(str(data.get("iss", "")))
    if platform is not None and found in platform.context_ids:
        return platform
    if platform is not None and role is Role.INSTRUCTOR and found:
        custom = data.get(CUSTOM)
        course = str(custom.get("canvas_course_id", ""))[:40] if isinstance(custom, dict) else ""
        shown = "; ".join(f"{what} {value!r}" for what, value in (
            ("title", str(context.get("title", ""))[:200]), ("label", str(context.get("label", ""))[:80]),
            ("Canvas course id", "" if course.startswith("$") else course),
            ("deployment id", str(data.get(CLAIM + "deployment_id", ""))[:200])) if value)
        raise Refusal(403, f"this LMS course is not served yet. It says: context id {found!r} ({shown}). If it is "
                           f"your course, add {found!r} to context_ids of the platform {platform.issuer!r} under "
                           "lti: in course.yaml, restart qkv serve and open the link again", "Course not served yet")
    raise Refusal(403, f"the launch comes from an LMS course this service does not serve (context "
                       f"{found!r}): ask your instructor to add its id to course.yaml's lti: context_ids",
                  "Launch refused")


def services_on(data: Mapping[str, Any], platform: Platform) -> None:
    """Refuses a launch whose grade or roster service lies off the platform's sites: the service would get the
    tool's access token, and the tool would call an address of the token's choosing."""
    grades, members = data.get(AGS_CLAIM), data.get(NRPS_CLAIM)
    named = [grades.get(k) for k in ("lineitems", "lineitem")] if isinstance(grades, dict) else []
    named += [members.get("context_memberships_url")] if isinstance(members, dict) else []
    for url in (u for u in named if u is not None):
        if not isinstance(url, str) or origin_of(url) not in platform.service_origins:
            raise Refusal(403, f"the launch names an LMS service off the LMS's sites ({str(url)[:200]!r}): "
                               "list its origin in course.yaml's lti: origins if it is the LMS's", "Launch refused")


def role_of(data: Mapping[str, Any]) -> Role:
    """The course role the launch claims (the platform signed it), by its most specific role: a TA, whom Canvas
    sends as `membership#Instructor` and `membership/Instructor#TeachingAssistant` both, is staff, never an
    instructor; then instructors, then learners; no other."""
    if TeachingAssistantRole(data).check():
        return Role.STAFF
    if TeacherRole(data).check():
        return Role.INSTRUCTOR
    if is_learner(data.get(CLAIM + "roles")):
        return Role.STUDENT
    raise Refusal(403, "the LMS gave this account no role in the course that the service knows (learner, "
                       "teaching assistant, instructor)", "Launch refused")


@dataclass(frozen=True)
class KeptStore:
    """One LMS's claims, as the store keeps them (members.Claims)."""

    store: LtiStore
    issuer: str

    def student_of(self, sub: str) -> Optional[str]:
        return self.store.claimed(self.issuer, sub)

    def sub_of(self, student: str) -> Optional[str]:
        return self.store.claimant(self.issuer, student)


def person_of(data: Mapping[str, Any], role: Role, roster: Any, platform: Platform, claims: Claims,
              emails_verified: bool = False, add_unknown: bool = False) -> tuple[str, bool]:
    """Whom the launch signs in, and whether it is the first launch that matched them (their `sub` to be kept): a
    roster id for a student (members.roster_match; or, with `add_unknown`, the id of a student known only to the
    LMS, members.lms_person), the LMS's email (else its user id) for staff."""
    sub = str(data.get("sub", ""))[:200]
    email = str(data.get("email", ""))[:200]
    if role is not Role.STUDENT:
        return email or f"lti:{sub}", False
    lis = data.get(CLAIM + "lis")
    user = lms_user(platform, sub, lis.get("person_sourcedid") if isinstance(lis, dict) else None, email,
                    data.get(CUSTOM))
    found = roster_match(roster, user, claims, emails_verified) if roster is not None else None
    if found is not None and found.student is not None:
        return found.student.id, found.new
    if add_unknown and sub and not (found and found.why) and (roster is None or roster.by_id(lms_person(sub)) is None):
        return lms_person(sub), False
    if roster is None:
        raise Refusal(403, "the service runs without a roster, so no LMS student can be matched: ask your "
                           "instructor to serve with --roster", "Not on the roster")
    given = ", ".join(f"{kind.value} {value!r}" for kind, value in user.ids)
    raise Refusal(403, f"you are not on this course's roster (the LMS says user {sub!r}"
                       f"{f', {given}' if given else ''}{f', {email}' if email else ''})"
                       f"{f': {found.why}' if found and found.why else ''}: ask your instructor to add you",
                  "Not on the roster")


def landing(data: Mapping[str, Any], tool_url: str, assignments: Mapping[str, Any]) -> str:
    """The page the launch opens: the assignment the link names (its target /a/NAME), else the list."""
    target = str(data.get(CLAIM + "target_link_uri", ""))
    path = urlsplit(target).path if on_tool(target, tool_url) else ""
    name = path.removeprefix("/a/") if path.startswith("/a/") else ""
    return f"/a/{name}" if name in assignments else "/"
