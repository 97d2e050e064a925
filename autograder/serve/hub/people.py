"""A hub user as a person of the course: the one identity rule of the hub's routes (sign-in, --submit, the exchange).

Staff and instructors are named by hub group or role in course.yaml's `jupyterhub:` (instructor first); they are
known by their hub name. Anyone else is a student, found on the roster through Roster.match by the `hub_user`
column, else by a roster id equal to the hub name when that row names no other hub user. Whoever is neither is
refused in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from autograder.classroom.roster import IdKind, Roster
from autograder.course.hub_settings import HubSettings
from autograder.grade.gradebook.accounts import Role
from autograder.serve.hub.api import HubUser


@dataclass(frozen=True)
class Person:
    id: str  # a roster id for a student; the hub name for staff
    role: Role


@dataclass(frozen=True)
class NotOnRoster:
    message: str


def role_of(user: HubUser, settings: HubSettings, roles: Callable[[], frozenset[str]]) -> Role:
    """`roles` is asked only when course.yaml names roles (it costs the hub a request)."""
    their_roles = roles() if settings.staff_roles or settings.instructor_roles else frozenset()
    if user.groups & set(settings.instructor_groups) or their_roles & set(settings.instructor_roles):
        return Role.INSTRUCTOR
    if user.groups & set(settings.staff_groups) or their_roles & set(settings.staff_roles):
        return Role.STAFF
    return Role.STUDENT


def student_of(name: str, roster: Optional[Roster]) -> Union[str, NotOnRoster]:
    """The roster id of hub user `name`, or why there is none."""
    if roster is None:
        return NotOnRoster(f"hub user {name!r} cannot hand in here: this service has no roster")
    found = roster.match([(IdKind.HUB_USER, name)])
    if found.ambiguous:  # parse_roster keeps hub_user unique; kept for a roster that comes another way
        return NotOnRoster(f"hub user {name!r} names several roster rows: ask your instructor")
    if found.student is not None:
        return found.student.id
    by_id = roster.by_id(name)
    if by_id is not None and not by_id.id_of(IdKind.HUB_USER):
        return by_id.id
    return NotOnRoster(f"hub user {name!r} is not on this course's roster: ask your instructor to add you")


def person_of(user: HubUser, roster: Optional[Roster], settings: HubSettings,
              roles: Callable[[], frozenset[str]]) -> Union[Person, NotOnRoster]:
    role = role_of(user, settings, roles)
    if role is not Role.STUDENT:
        return Person(user.name, role)
    student = student_of(user.name, roster)
    return student if isinstance(student, NotOnRoster) else Person(student, Role.STUDENT)
