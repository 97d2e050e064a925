"""`qkv serve` as an LTI 1.3 tool driven by a platform nobody here wrote (tests/lms_platform.py: the PyPI package
lti1p3platform), with launches and class lists shaped as Canvas and as Moodle send them, and a roster written as
docs/class.md tells: every student lands as themselves, ids that collide across kinds included (a Moodle user id
that is a classmate's participant id, a Canvas id that is a classmate's SIS id), a later launch needs nothing but
the LMS's `sub`, a TA is staff, scores go to the launch's line item, and the sync of an unchanged class reports no
difference. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import shutil

import httpx
import pytest
import yaml

from autograder.classroom.roster import IdKind, parse_roster
from autograder.course.lti_settings import Platform as PlatformSettings
from autograder.serve.lti.members import KeptClaims, lms_user, roster_match
from conftest import QKV
from lms_platform import CANVAS, CANVAS_TA, INSTRUCTOR, LEARNER, MOODLE, Lms, Person
from served_course import class_sample
from serve_client import Browser, Page, wait_for
from servers import ServerProcess, fresh_database
from test_lti import NAME, Tool as ServedTool, outbox, qkv

# as docs/class.md's Canvas checklist has it: ID and SIS User ID from Canvas's gradebook export. Ben's SIS id is
# Ada's Canvas id.
CANVAS_ROSTER = """id,name,email,canvas_user_id,sis_id,section
s01,Ada Lovelace,ada@uni.example,1001,5001,A
s02,Ben Okafor,ben@uni.example,1002,1001,A
s03,Cho Min-jun,cho@uni.example,1003,5003,B
"""
CANVAS_PEOPLE = {  # the roster's students as Canvas names them: an opaque sub, the numbers as custom claims
    "s01": Person("a8f3c2d1e0b94f7c", tuple(LEARNER), "Ada Lovelace", "ada@uni.example", "5001",
                  {"canvas_user_id": "1001", "canvas_user_sis_integration_id": "$Canvas.user.sisIntegrationId",
                   "canvas_course_id": "101"}),
    "s02": Person("77e1d0c9b8a7f6e5", tuple(LEARNER), "Ben Okafor", "ben@uni.example", "1001",
                  {"canvas_user_id": "1002", "canvas_user_sis_integration_id": "$Canvas.user.sisIntegrationId",
                   "canvas_course_id": "101"}),
    "s03": Person("0c1d2e3f4a5b6c7d", tuple(LEARNER), "Cho Min-jun", "cho@uni.example", "5003",
                  {"canvas_user_id": "1003", "canvas_course_id": "101"}),
}
# as docs/class.md's Moodle checklist has it: the user id (Participants, the id= of a profile's address), the
# participant id of the submission downloads, the ID number. Ada's user id is Ben's participant id, and the reverse.
MOODLE_ROSTER = """id,name,email,moodle_user_id,moodle_participant_id,sis_id,section
s01,Ada Lovelace,ada@uni.example,5,7,ID-A,A
s02,Ben Okafor,ben@uni.example,7,5,,A
s03,Cho Min-jun,cho@uni.example,9,9,ID-C,B
"""
MOODLE_PEOPLE = {  # Moodle's sub is its user id; person_sourcedid the ID number (none for Ben)
    "s01": Person("5", (LEARNER[1],), "Ada Lovelace", "ada@uni.example", "ID-A"),
    "s02": Person("7", (LEARNER[1],), "Ben Okafor", "ben@uni.example", ""),
    "s03": Person("9", (LEARNER[1],), "Cho Min-jun", "cho@uni.example", "ID-C"),
}
SHAPES = {"canvas": (CANVAS, CANVAS_ROSTER, CANVAS_PEOPLE), "moodle": (MOODLE, MOODLE_ROSTER, MOODLE_PEOPLE)}


@pytest.fixture(scope="module", params=[("canvas", "sqlite"), ("canvas", "postgresql"), ("moodle", "sqlite"),
                                        ("moodle", "postgresql")], ids="-".join)
def lms(request, served_numpy, tmp_path_factory):
    """The course served as an LTI tool of a Canvas or a Moodle (lti1p3platform), on SQLite or PostgreSQL."""
    kind, database = request.param
    shape, roster_text, people = SHAPES[kind]
    root = tmp_path_factory.mktemp(f"lms-{kind}") / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    qkv(root, "lti", "keys")
    config = yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))
    roster = root / "roster.csv"
    roster.write_text(roster_text, encoding="utf-8")
    platform = Lms(shape).start()
    with contextlib.ExitStack() as stack:
        stack.callback(platform.stop)
        store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url"))) \
            if database == "postgresql" else str(root / "store")

        def command(port: int) -> list:
            lti = platform.course_settings(f"http://127.0.0.1:{port}", "lti-keys", sync_hours=0)
            (root / "course.yaml").write_text(yaml.safe_dump({**config, "lti": lti}), encoding="utf-8")
            return [QKV, "--course", root, "serve", NAME, "--roster", roster, "--db", store, "--port", port,
                    "--jobs", 1]

        server = stack.enter_context(ServerProcess(command, cwd=root))
        yield platform, server, root, store, roster, people


def opened(lms, person: Person, lineitem: str | None = None) -> tuple[Browser, httpx.Response]:
    """`person` clicks the assignment's link in the LMS (a link whose column is `lineitem`)."""
    platform, server = lms[0], lms[1]
    browser = Browser(server.url)
    login = browser.get(platform.login_url(person, lineitem, f"{server.url}/a/{NAME}"))
    assert login.status_code == 302, f"login initiation: {login.status_code} {login.text[:500]}"
    authorized = httpx.get(login.headers["location"], timeout=60)
    assert authorized.status_code == 200, authorized.text[:500]
    form = Page(authorized.text).form(f"{server.url}/lti/launch")
    return browser, browser.post("/lti/launch", data=dict(form))


def signed_in_as(browser: Browser) -> str:
    text = Page(browser.get(f"/a/{NAME}").text).text
    return text.split("signed in as ", 1)[1].split(")", 1)[0] + ")" if "signed in as " in text else text[:300]


@pytest.mark.slow
def test_every_student_lands_as_themselves_where_their_ids_collide_with_a_classmates(lms):
    people = lms[5]
    for student in ("s02", "s01", "s03"):  # Ben first: his SIS id / participant id is Ada's other id
        browser, answer = opened(lms, people[student])
        assert answer.status_code == 303, answer.text[:500]
        assert signed_in_as(browser) == f"{student} (student)"
    # a later launch needs nothing but the LMS's sub, kept from the first one
    ada = people["s01"]
    browser, answer = opened(lms, Person(ada.sub, ada.roles))
    assert answer.status_code == 303 and signed_in_as(browser) == "s01 (student)"


@pytest.mark.slow
def test_a_ta_is_staff_and_the_instructor_is_an_instructor(lms):
    platform = lms[0]
    ta_roles = CANVAS_TA if platform.shape.lms == "canvas" else [INSTRUCTOR[1], CANVAS_TA[2]]
    browser, answer = opened(lms, Person("ta-sub-1", tuple(ta_roles), "Tam Assist", "ta@uni.example"))
    assert answer.status_code == 303
    assert browser.get(f"/a/{NAME}/class").status_code == 200
    assert browser.get(f"/a/{NAME}/copying").status_code == 403  # an instructor's page
    assert "signed in as ta@uni.example (staff)" in Page(browser.get(f"/a/{NAME}/class").text).text
    browser, answer = opened(lms, Person("prof-sub-1", tuple(INSTRUCTOR), "The Prof", "prof@uni.example"))
    assert answer.status_code == 303
    assert browser.get(f"/a/{NAME}/copying").status_code == 200


@pytest.mark.slow
def test_a_score_goes_to_the_line_item_the_launch_names_and_no_column_is_made(lms):
    platform, server = lms[0], lms[1]
    column = platform.add_lineitem("Attention HW", 10.0)  # the assignment the instructor made in the LMS
    cho = lms[5]["s03"]
    browser, answer = opened(lms, cho, column)
    assert answer.status_code == 303
    handed = browser.hand_in(NAME, "ada.py", class_sample("ada.py").read_bytes())
    assert handed.status_code == 303, handed.text[:500]
    attempt = handed.headers["location"].rsplit("/", 1)[1]
    served = ServedTool(lms[2], lms[3], server)  # what test_lti.outbox reads
    wait_for(lambda: (outbox(served).get(attempt) or (0, None))[1] is not None, "the score posted",
             lambda: server.output_tail())
    mine = [(item, score) for item, score in platform.scores if score["userId"] == cho.sub]
    assert [item for item, _ in mine] == [column]
    assert list(platform.lineitems) == [column]  # no second column beside the instructor's


@pytest.mark.slow
def test_the_sync_of_an_unchanged_class_reports_no_difference(lms):
    platform, server, root, store, roster, people = lms
    opened(lms, Person("prof-sub-2", tuple(INSTRUCTOR), "The Prof", "prof@uni.example"))  # names the class list
    staff = [Person("prof-sub-2", tuple(INSTRUCTOR), "The Prof", "prof@uni.example"),
             Person("ta-sub-1", tuple(CANVAS_TA), "Tam Assist", "ta@uni.example")]
    # in the LMS's order, several pages (lms_platform.PAGE_SIZE a page)
    platform.members = staff + list(people.values()) + [Person(f"x{n}", tuple(INSTRUCTOR)) for n in range(3)]
    done = qkv(root, "lti", "sync", NAME, "--roster", roster, "--db", store)
    assert "no differences" in done.stdout.splitlines(), done.stdout
    assert f"{len(people)} learner(s)" in done.stdout


@pytest.mark.parametrize("kind", ["canvas", "moodle"])
def test_the_one_rule_compares_each_id_with_its_own_column_only(kind):
    """The rule launches and syncs use (members.roster_match), and intake's lookup of a Moodle participant id."""
    shape, roster_text, people = SHAPES[kind]
    roster = parse_roster(roster_text, "roster.csv")
    platform = PlatformSettings(issuer=shape.issuer or "https://moodle.example", client_id="c", lms=kind,
                                deployment_ids=["1"], auth_login_url="https://lms.example/auth",
                                auth_token_url="https://lms.example/token", key_set_url="https://lms.example/jwks")
    for student, person in people.items():
        user = lms_user(platform, person.sub, person.sourced_id, person.email, person.custom)
        assert roster_match(roster, user, KeptClaims(), False).student.id == student
    if kind == "moodle":
        assert roster.match([(IdKind.MOODLE_PARTICIPANT_ID, "5")]).student.id == "s02"
        assert roster.match([(IdKind.MOODLE_USER_ID, "5")]).student.id == "s01"
    else:  # identifiers that name two rows name neither
        both = roster.match([(IdKind.SIS_ID, "1001"), (IdKind.CANVAS_USER_ID, "1001")])
        assert both.student is None and {s.id for s in both.ambiguous} == {"s01", "s02"}


def test_a_row_one_lms_user_claimed_is_never_given_to_another():
    roster = parse_roster(CANVAS_ROSTER, "roster.csv")
    platform = PlatformSettings(issuer=CANVAS.issuer, client_id="c", lms="canvas", deployment_ids=["1"],
                                auth_login_url="https://lms.example/auth",
                                auth_token_url="https://lms.example/token", key_set_url="https://lms.example/jwks")
    ada = CANVAS_PEOPLE["s01"]
    user = lms_user(platform, "another-sub", ada.sourced_id, ada.email, ada.custom)  # Ada's ids, another user
    found = roster_match(roster, user, KeptClaims({ada.sub: "s01"}, {"s01": ada.sub}), True)
    assert found.student is None and found.why == "roster row s01 is already another LMS user's"
    # her own sub needs nothing else, and a row the roster dropped is no one's
    assert roster_match(roster, lms_user(platform, ada.sub, "", "", {}), KeptClaims({ada.sub: "s01"}),
                        False).student.id == "s01"
    gone = roster_match(roster, lms_user(platform, ada.sub, "", "", {}), KeptClaims({ada.sub: "s99"}), False)
    assert gone.student is None and "no longer has s99" in gone.why


def test_a_platform_is_a_canvas_by_its_instructure_issuer_unless_course_yaml_says_otherwise():
    given = dict(client_id="c", deployment_ids=["1"], auth_login_url="https://lms.example/auth",
                 auth_token_url="https://lms.example/token", key_set_url="https://lms.example/jwks")
    assert PlatformSettings(issuer="https://canvas.instructure.com", **given).lms.value == "canvas"
    assert PlatformSettings(issuer="https://canvas.test.instructure.com", **given).lms.value == "canvas"
    assert PlatformSettings(issuer="https://moodle.uni.example", **given).lms.value == "other"
    assert PlatformSettings(issuer="https://evilinstructure.com", **given).lms.value == "other"
    assert PlatformSettings(issuer="https://canvas.instructure.com", lms="other", **given).lms.value == "other"
