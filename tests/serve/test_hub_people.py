"""The hub's identity rule without a hub (issue 49): a hub user as a roster student (the `hub_user` column through
Roster.match, else the id of a row naming no hub user), staff and instructors by course.yaml's groups and roles.
tests/serve/test_hub.py runs the same rule through a real JupyterHub."""

from __future__ import annotations

import pytest

from autograder.classroom.roster import parse_roster
from autograder.course.hub_settings import HubSettings
from autograder.errors import QkvError
from autograder.grade.gradebook.accounts import Role
from autograder.serve.hub.api import HubUser
from autograder.serve.hub.people import NotOnRoster, Person, person_of, student_of

ROSTER = parse_roster("id,name,hub_user\ns1,Ada,ada\ns2,Ben,\ns3,Cho,chomj\n", "roster.csv")
SETTINGS = HubSettings(staff_groups=["tas"], instructor_groups=["teachers"], staff_roles=["grader"])


def user(name: str, groups: tuple[str, ...] = ()) -> HubUser:
    return HubUser(name, frozenset(groups), frozenset(), frozenset())


@pytest.mark.parametrize("name, student", [("ada", "s1"), ("s2", "s2"), ("chomj", "s3")])
def test_a_hub_user_is_the_row_naming_them_else_the_row_of_their_id(name, student):
    assert student_of(name, ROSTER) == student


@pytest.mark.parametrize("name", ["s3", "s1", "mallory", "Ada"])
def test_an_id_whose_row_names_another_hub_user_is_not_that_student(name):
    """s3's row names chomj, so the hub user s3 is not Cho (a hub account that happens to carry a student's id)."""
    found = student_of(name, ROSTER)
    assert found == NotOnRoster(f"hub user {name!r} is not on this course's roster: ask your instructor to add you")


def test_without_a_roster_no_one_is_a_student():
    assert isinstance(student_of("ada", None), NotOnRoster)


def test_staff_and_instructors_by_group_or_role_instructor_first():
    never = lambda: pytest.fail("roles asked for")  # noqa: E731
    assert person_of(user("tina", ("tas",)), ROSTER, HubSettings(staff_groups=["tas"]), never) == \
        Person("tina", Role.STAFF)
    assert person_of(user("ian", ("tas", "teachers")), ROSTER, SETTINGS, frozenset) == \
        Person("ian", Role.INSTRUCTOR)
    assert person_of(user("gus"), ROSTER, SETTINGS, lambda: frozenset({"grader"})) == Person("gus", Role.STAFF)
    assert person_of(user("ada", ("students",)), ROSTER, SETTINGS, frozenset) == Person("s1", Role.STUDENT)


def test_a_roster_gives_each_hub_user_one_row():
    with pytest.raises(QkvError, match=r"roster.csv:3: hub_user 'ada' is also on line 2"):
        parse_roster("id,hub_user\ns1,ada\ns2,ada\n", "roster.csv")


@pytest.mark.parametrize("bad", [["a b"], ["<script>"], [""]])
def test_course_yaml_names_hub_groups_as_the_hub_spells_them(bad):
    with pytest.raises(ValueError, match="is not a hub group or role name"):
        HubSettings(staff_groups=bad)
