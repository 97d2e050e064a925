"""`qkv serve` as an LTI 1.3 tool (autograder/serve/lti/), launched from a local platform (tests/lti_platform.py):
a real `qkv serve` on a loopback port (on SQLite, then on PostgreSQL), whose course.yaml registers the platform, and
a browser without JavaScript that goes from the platform's login initiation to the tool's launch as a browser in an
LMS does.

The platform is registered as a Canvas, and the roster written as docs/class.md tells (canvas_user_id, sis_id).
A learner lands on the assignment signed in, matched to the roster by their Canvas user id; staff see the
class; one test per forged or stale launch the tool must refuse; scores sent back once, the LMS down or not; the
LMS's class list against the roster; deep linking; and the parts that need no server (the launch
values' store on SQLite and PostgreSQL, the course.yaml section, the framing headers, the key pair).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

import httpx
import pytest
import yaml

from autograder.classroom.roster import IdKind, load_roster, parse_roster
from autograder.course.find import read_course
from autograder.course.lti_settings import LtiSettings, Platform as PlatformSettings
from autograder.errors import QkvError
from autograder.grade.gradebook import GRADEBOOK_FILE
from autograder.grade.gradebook.accounts import ACCOUNTS_FILE, SCHEMA_NAME, AccountBook, Role
from autograder.grade.gradebook.database import is_postgres, open_postgres, open_sqlite, schema_name
from autograder.grade.gradebook.lti import LtiStore
from autograder.serve.command import protected
from autograder.serve.guard import FAILURE_WINDOW, security_headers
from autograder.serve.lti.adapter import LAUNCH_SECONDS
from autograder.serve.lti.keys import jwks, make_keys, read_keys
from autograder.serve.lti.launch import LtiTool, in_course, login_allowed, person_of, role_of
from autograder.serve.instructor import lms_class_list
from autograder.serve.lti.members import CUSTOM, KeptClaims, LmsUser, Member, lms_person, roster_diff
from autograder.serve.lti.roster_sync import RosterPuller, sync_period
from autograder.serve.pages import Refusal
from conftest import QKV
from lti_platform import AGS, CLAIM, INSTRUCTOR, NRPS_CLAIM, LEARNER, TA, Platform, User
from served_course import class_sample
from serve_client import Browser, Page, wait_for
from servers import ServerProcess, fresh_database

NAME = "attention-numpy"
# s2026001 Ada (canvas_user_id 1001), s2026002 Ben (ben@uni.example); each sis_id is the roster's id
ROSTER = Path(__file__).parents[1] / "fixtures" / "lti" / "canvas_roster.csv"


def learner(canvas_id: str, email: str = "", name: str = "") -> User:
    """A Canvas learner: an opaque `sub`, their numeric id in the custom claim the tool's configuration asks for."""
    return User(f"opaque-{canvas_id}", (LEARNER,), email, name, {"canvas_user_id": canvas_id})


ADA = learner("1001", "someone-else@uni.example", "Ada Lovelace")


def qkv(root: Path, *args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([str(QKV), "--course", str(root), *map(str, args)], cwd=root, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"qkv {' '.join(map(str, args))}: {done.stderr[-3000:]}"
    return done


# ------------------------------------------------------------------ the tool and the platform, served

@dataclass
class Tool:
    root: Path
    store: str  # a folder of SQLite files, or a PostgreSQL URL
    server: ServerProcess

    @property
    def url(self) -> str:
        return self.server.url

    def rows(self, sql: str, gradebook: bool = True) -> list:
        """Read the service's database behind its back: the assignment's gradebook, else the accounts' tables."""
        if is_postgres(self.store):
            db = open_postgres(self.store, schema_name(NAME) if gradebook else SCHEMA_NAME)
        else:
            db = open_sqlite(Path(self.store) / (f"{NAME}/{GRADEBOOK_FILE}" if gradebook else ACCOUNTS_FILE),
                             read_only=True)
        try:
            return list(db.execute(sql))
        finally:
            db.close()


def lti_course(served_numpy, tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the run's attention-numpy course with a key pair, and its course.yaml (without `lti:`)."""
    root = tmp_path_factory.mktemp("lti") / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    qkv(root, "lti", "keys")
    return root, yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))


@contextlib.contextmanager
def serving(root: Path, config: dict, store: str, platform: Platform, *options: object) -> Iterator[Tool]:
    """`qkv serve` of the course with an `lti:` section naming `platform`, until the block ends."""
    def command(port: int) -> list:
        # the tool's address holds its port, known only now: course.yaml is written for it before each start
        lti = platform.course_settings(f"http://127.0.0.1:{port}", "lti-keys")
        (root / "course.yaml").write_text(yaml.safe_dump({**config, "lti": lti}), encoding="utf-8")
        return [QKV, "--course", root, "serve", NAME, "--roster", ROSTER, "--db", store, "--port", port, "--jobs", 1,
                *options]

    with ServerProcess(command, cwd=root) as server:
        yield Tool(root, store, server)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(request, served_numpy, tmp_path_factory):
    """The run's attention-numpy course, given a key pair and an `lti:` section naming a platform of its own, served
    on a folder of SQLite files and again on a PostgreSQL database (every test of it runs on both)."""
    root, config = lti_course(served_numpy, tmp_path_factory)
    platform = Platform().start()
    with contextlib.ExitStack() as stack:
        stack.callback(platform.stop)
        store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url"))) \
            if request.param == "postgresql" else str(root / "store")
        # no pull of its own: the history these tests read is what `qkv lti sync` kept
        yield stack.enter_context(serving(root, config, store, platform, "--lti-sync-hours", 0)), platform


@pytest.fixture
def tool(served) -> Tool:
    return served[0]


@pytest.fixture
def platform(served) -> Platform:
    return served[1]


def launch(tool: Tool, platform: Platform, user: User, target: Optional[str] = None,
           tamper: Callable[[dict], dict] = lambda form: form) -> tuple[Browser, httpx.Response, dict]:
    """A click on the assignment's link in the LMS: the tool's login initiation, the platform's authorization
    page, and its form posted to the tool's launch (after `tamper`); (the browser, the launch's answer, the form)."""
    browser = Browser(tool.url)
    hint = platform.add_user(user)
    login = browser.get("/lti/login", params=platform.login_params(hint, target or f"{tool.url}/a/{NAME}"))
    assert login.status_code == 302, f"login initiation: {login.status_code} {login.text[:500]}"
    assert login.headers["location"].startswith(f"{platform.url}/auth?")
    authorized = httpx.get(login.headers["location"], timeout=60)
    assert authorized.status_code == 200, authorized.text
    form = Page(authorized.text).form(f"{tool.url}/lti/launch")
    sent = tamper(dict(form))
    return browser, browser.post("/lti/launch", data=sent), sent


def refused(browser: Browser, answer: httpx.Response, reason: str) -> None:
    """The launch was refused for `reason`, and left no session: the browser is sent to the sign-in page."""
    assert answer.status_code == 403, f"{answer.status_code}: {answer.text[:500]}"
    assert reason in Page(answer.text).refusal(), Page(answer.text).refusal()
    assert "qkv_session" not in answer.cookies
    assert browser.get(f"/a/{NAME}").headers.get("location", "").startswith("/signin")


def token_parts(token: str) -> tuple[dict, dict, str]:
    head, body, signature = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    return decode(head), decode(body), signature


def encoded(part: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()


# ------------------------------------------------------------------ launches that sign in

@pytest.mark.slow
def test_a_learner_launch_lands_on_the_assignment_signed_in(tool, platform):
    browser, answer, _ = launch(tool, platform, ADA)
    assert answer.status_code == 303, answer.text[:500]
    assert answer.headers["location"] == f"/a/{NAME}"
    page = browser.get(f"/a/{NAME}")
    assert page.status_code == 200
    assert "signed in as s2026001 (student)" in Page(page.text).text  # by Canvas id: the email matches no one
    policy = page.headers["content-security-policy"]
    assert f"frame-ancestors {platform.url};" in policy  # the LMS frames the page, and no other site may
    assert "x-frame-options" not in page.headers


@pytest.mark.slow
def test_a_learner_with_a_students_email_but_another_lms_id_is_not_that_student(tool, platform):
    browser, answer, _ = launch(tool, platform, User("canvas-uuid-77", (LEARNER,), "Ben@uni.example", "",
                                                     {"canvas_user_id": "7777"}))
    refused(browser, answer, "you are not on this course's roster (the LMS says user 'canvas-uuid-77'")


@pytest.mark.slow
def test_an_instructor_launch_opens_the_class_and_a_ta_is_staff(tool, platform):
    browser, answer, _ = launch(tool, platform, User("prof-1", (INSTRUCTOR,), "prof@uni.example"))
    assert answer.status_code == 303
    assert browser.get(f"/a/{NAME}").headers["location"] == f"/a/{NAME}/class"
    assert "(instructor)" in Page(browser.get(f"/a/{NAME}/class").text).text
    browser, answer, _ = launch(tool, platform, User("ta-1", (TA,), "ta@uni.example"))
    assert answer.status_code == 303
    page = Page(browser.get(f"/a/{NAME}/class").text).text
    assert "signed in as ta@uni.example (staff)" in page


@pytest.mark.slow
def test_a_user_not_on_the_roster_is_refused_with_a_clear_page(tool, platform):
    browser, answer, _ = launch(tool, platform, User("stranger-9", (LEARNER,), "stranger@elsewhere.example"))
    refused(browser, answer, "you are not on this course's roster (the LMS says user 'stranger-9'")


@pytest.mark.slow
def test_a_launch_for_another_site_is_refused_at_login(tool, platform):
    browser = Browser(tool.url)
    answer = browser.get("/lti/login", params=platform.login_params(platform.add_user(ADA),
                                                                    "https://evil.example/a/x"))
    assert answer.status_code == 400
    assert "not this service's" in Page(answer.text).refusal()


# ------------------------------------------------------------------ launches that are refused

@pytest.mark.slow
def test_a_replayed_launch_is_refused(tool, platform):
    browser, answer, sent = launch(tool, platform, ADA)
    assert answer.status_code == 303
    again = Browser(tool.url)  # the id_token and state copied to another browser, and to the same one
    refused(again, again.post("/lti/launch", data=sent), "Invalid Nonce")
    assert browser.post("/lti/launch", data=sent).status_code == 403


def _claims(**claims) -> Callable[[Platform], None]:
    return lambda platform: platform.next_claims.update(claims)


def _other_key(platform: Platform) -> None:
    platform.sign_with_other_key = True


@pytest.mark.slow
@pytest.mark.parametrize("forge, reason", [
    (_claims(aud="another-tool"), "Client id not registered for this issuer"),
    (_claims(exp=int(time.time()) - 600, iat=int(time.time()) - 900), "Signature has expired"),
    (_claims(exp=None), 'Token is missing the "exp" claim'),
    (_claims(**{"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "deployment-9"}),
     "Unable to find deployment"),
    (_other_key, "Signature verification failed"),
    (_claims(aud=["qkv-tool-client", "another-tool"]), "several audiences and no authorized party (`azp`)"),
    (_claims(aud=["qkv-tool-client", "another-tool"], azp="another-tool"), "Client id not registered"),
    (_claims(aud=["another-tool"], azp="qkv-tool-client"), "authorized party (`azp`) is not one of its audiences"),
], ids=["wrong-aud", "expired", "no-expiry", "unknown-deployment", "signed-by-another-key", "audiences-no-azp",
        "audiences-for-another", "azp-not-an-audience"])
def test_a_forged_or_stale_id_token_is_refused(tool, platform, forge, reason):
    forge(platform)
    browser, answer, _ = launch(tool, platform, ADA)
    refused(browser, answer, reason)


def _unsigned(form: dict) -> dict:
    head, body, _ = token_parts(form["id_token"])
    return {**form, "id_token": f"{encoded({**head, 'alg': 'none'})}.{encoded(body)}."}


def _instructor_claimed(form: dict) -> dict:
    head, body, signature = token_parts(form["id_token"])
    body["https://purl.imsglobal.org/spec/lti/claim/roles"] = [INSTRUCTOR]
    return {**form, "id_token": f"{encoded(head)}.{encoded(body)}.{signature}"}


@pytest.mark.slow
@pytest.mark.parametrize("tamper, reason", [
    (_unsigned, "Unable to find public key"),
    (_instructor_claimed, "Signature verification failed"),
], ids=["alg-none", "instructor-role-forged"])
def test_a_tampered_id_token_is_refused(tool, platform, tamper, reason):
    browser, answer, _ = launch(tool, platform, ADA, tamper=tamper)
    refused(browser, answer, reason)


@pytest.mark.slow
@pytest.mark.parametrize("claim", [
    {AGS + "claim/endpoint": {"scope": [], "lineitems": "https://evil.example/lineitems"}},
    {AGS + "claim/endpoint": {"scope": [], "lineitem": "http://127.0.0.1:1/lineitems/1"}},  # another port
    {NRPS_CLAIM: {"context_memberships_url": "https://evil.example/m", "service_versions": ["2.0"]}},
], ids=["lineitems", "lineitem", "memberships"])
def test_a_launch_naming_a_service_off_the_lms_is_refused(tool, platform, claim):
    platform.next_claims.update(claim)
    browser, answer, _ = launch(tool, platform, ADA)
    refused(browser, answer, "the launch names an LMS service off the LMS's sites")


@pytest.mark.slow
def test_an_over_long_id_token_is_refused_as_such(tool, platform):
    platform.next_claims["name"] = "x" * 9000  # signed by the platform: only its length is wrong
    browser, answer, _ = launch(tool, platform, ADA)
    assert answer.status_code == 400, answer.text[:500]
    assert "the request's 'id_token' is longer than 8,000 characters" in Page(answer.text).refusal()


@pytest.mark.slow
def test_a_token_for_several_audiences_issued_to_this_tool_is_taken(tool, platform):
    platform.next_claims.update(aud=["another-tool", platform.client_id], azp=platform.client_id)
    browser, answer, _ = launch(tool, platform, ADA)
    assert answer.status_code == 303, answer.text[:500]


@pytest.mark.slow
def test_an_instructor_of_another_lms_course_is_refused(tool, platform):
    platform.next_claims[CLAIM + "context"] = {"id": "course-2", "title": "Another course"}
    browser, answer, _ = launch(tool, platform, User("prof-9", (INSTRUCTOR,), "prof9@uni.example"))
    # an instructor is shown the course's id to add to course.yaml, and is not signed in
    refused(browser, answer, "this LMS course is not served yet. It says: context id 'course-2'")
    platform.next_claims[CLAIM + "context"] = {"id": "course-2", "title": "Another course"}
    browser, answer, _ = launch(tool, platform, ADA)
    refused(browser, answer, "an LMS course this service does not serve (context 'course-2')")


@pytest.mark.slow
def test_a_login_initiation_leaves_values_for_minutes_and_launches_reuse_the_platforms_keys(tool, platform):
    launch(tool, platform, ADA)
    fetched = platform.key_set_fetches
    before = time.time()
    browser, answer, _ = launch(tool, platform, ADA)
    after = time.time()
    assert answer.status_code == 303 and platform.key_set_fetches == fetched
    expiries = [float(row[0]) for row in tool.rows("SELECT expires FROM lti_values", gradebook=False)]
    assert expiries and max(expiries) <= after + LAUNCH_SECONDS and max(expiries) >= before + LAUNCH_SECONDS - 1


@pytest.mark.slow
def test_a_login_from_a_platform_the_course_does_not_list_is_refused(tool, platform):
    params = {**platform.login_params(platform.add_user(ADA), f"{tool.url}/a/{NAME}"), "iss": "https://evil.example"}
    answer = Browser(tool.url).get("/lti/login", params=params)
    assert answer.status_code == 403
    assert "the issuer 'https://evil.example' is not a platform of this course" in Page(answer.text).refusal()


def _body(change: Callable[[dict], object]) -> Callable[[dict], dict]:
    """The id_token with its claims changed (the signature kept: it no longer matches)."""
    def garbled(form: dict) -> dict:
        head, body, signature = token_parts(form["id_token"])
        return {**form, "id_token": f"{encoded(head)}.{encoded(change(body))}.{signature}"}
    return garbled


@pytest.mark.slow
@pytest.mark.parametrize("tamper, reason", [
    (lambda form: {**form, "id_token": "not-a-jwt"}, "JWT must contain 3 parts"),
    (_body(lambda body: [1, 2, 3]), "its id_token is not one an LMS would send"),
    (_body(lambda body: {**body, "iss": ["a", "list"]}), "its id_token is not one an LMS would send"),
    (_body(lambda body: "a string"), "its id_token is not one an LMS would send"),
], ids=["not-a-jwt", "a-list", "iss-a-list", "a-string"])
def test_a_garbled_id_token_is_refused_in_one_sentence(tool, platform, tamper, reason):
    browser, answer, _ = launch(tool, platform, ADA, tamper=tamper)
    refused(browser, answer, reason)


@pytest.mark.slow
def test_the_tool_serves_its_public_key_set(tool):
    served = httpx.get(f"{tool.url}/lti/jwks.json", timeout=60).json()
    assert served == jwks(read_keys(tool.root / "lti-keys")[1])
    assert set(served["keys"][0]) >= {"kty", "n", "e", "kid"} and "d" not in served["keys"][0]


# ------------------------------------------------------------------ scores to the LMS

def outbox(tool: Tool) -> dict[str, tuple]:
    """The gradebook's LMS outbox: by attempt, (tries, sent_at, final)."""
    return {row[0]: tuple(row[1:]) for row in tool.rows(
        "SELECT s.attempt, s.tries, s.sent_at, g.final FROM lti_scores AS s JOIN gradings AS g ON g.id = s.grading")}


@pytest.mark.slow
def test_a_score_posted_while_the_platform_is_down_reaches_it_once_when_it_is_back(tool, platform):
    cho = learner("1003", "cho@uni.example")
    browser, answer, _ = launch(tool, platform, cho)
    assert answer.status_code == 303
    platform.stop()
    try:
        handed = browser.hand_in(NAME, "ada.py", class_sample("ada.py").read_bytes())
        assert handed.status_code == 303, handed.text[:500]
        attempt = handed.headers["location"].rsplit("/", 1)[1]
        wait_for(lambda: (outbox(tool).get(attempt) or (0,))[0] >= 1, "a failed post of the score",
                 lambda: outbox(tool))
        assert outbox(tool)[attempt][1] is None  # not sent, and kept
    finally:
        platform.start()
    wait_for(lambda: outbox(tool)[attempt][1] is not None, "the score posted", lambda: outbox(tool))
    mine = [(item, score) for item, score in platform.scores if score["userId"] == cho.sub]
    assert len(mine) == 1, mine
    item, score = mine[0]
    assert score["scoreGiven"] == outbox(tool)[attempt][2] and score["gradingProgress"] == "FullyGraded"
    assert score["comment"] == f"{tool.url}/a/{NAME}/attempts/{attempt}/feedback"
    assert [line["id"] for line in platform.lineitems if line.get("tag") == NAME] == [item]


def _scored(tool: Tool, platform: Platform, user: User) -> tuple[str, dict]:
    """`user` launches and hands in; (the line item, the score) the platform took for their attempt."""
    browser, answer, _ = launch(tool, platform, user)
    assert answer.status_code == 303
    handed = browser.hand_in(NAME, "ada.py", class_sample("ada.py").read_bytes())
    assert handed.status_code == 303, handed.text[:500]
    attempt = handed.headers["location"].rsplit("/", 1)[1]
    wait_for(lambda: (outbox(tool).get(attempt) or (0, None))[1] is not None, "the score posted",
             lambda: outbox(tool))
    mine = [(item, score) for item, score in platform.scores if score["userId"] == user.sub]
    assert len(mine) == 1, mine
    return mine[0]


@pytest.mark.slow
def test_a_score_for_a_line_item_the_lms_deleted_goes_to_one_made_anew(tool, platform):
    first, _ = _scored(tool, platform, learner("1004", "dan@uni.example"))
    platform.lineitems.clear()  # an instructor deleted the column in the LMS's gradebook
    again, _ = _scored(tool, platform, learner("1005", "eve@uni.example"))
    assert again != first and [line["id"] for line in platform.lineitems] == [again]


# ------------------------------------------------------------------ the LMS's class list

def member(user_id: str, email: str, name: str, roles: tuple[str, ...] = (LEARNER,), status: str = "Active",
           sis: str = "") -> dict:
    """A member as Canvas's class list gives one: `user_id` the opaque LTI id, the SIS User ID as LIS person id."""
    return {"user_id": user_id, "email": email, "name": name, "roles": list(roles), "status": status,
            **({"lis_person_sourcedid": sis} if sis else {})}


def roster_member(s) -> dict:
    return member(f"opaque-{s.id_of(IdKind.CANVAS_USER_ID)}", s.email, s.name, sis=s.id_of(IdKind.SIS_ID))


@pytest.mark.slow
def test_a_roster_sync_shows_a_student_added_and_one_dropped_and_leaves_the_roster_alone(tool, platform, tmp_path):
    launch(tool, platform, User("prof-3", (INSTRUCTOR,), "prof@uni.example"))  # names the course's roster service
    roster = load_roster(ROSTER)
    platform.members = [roster_member(s) for s in roster.students if s.id != "s2026009"] + [
        member("2001", "zed@uni.example", "Zed Zulu"),
        member("2002", "gone@uni.example", "Gone Away", status="Inactive"),  # no longer in the course
        member("prof-3", "prof@uni.example", "The Prof", (INSTRUCTOR,))]  # staff are no roster rows
    platform.members[1]["email"] = "ben.okafor@uni.example"
    before = ROSTER.read_bytes()
    done = qkv(tool.root, "lti", "sync", NAME, "--roster", ROSTER, "--db", tool.store, "--write",
               tmp_path / "synced.csv")
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith(("added", "dropped", "changed"))] == [
        "added: Zed Zulu <zed@uni.example> (LMS user 2001)", "dropped: s2026009 Ivy Park",
        "changed email: s2026002 ben@uni.example -> ben.okafor@uni.example"]
    assert ROSTER.read_bytes() == before
    synced = load_roster(tmp_path / "synced.csv")
    # the id a launch signs Zed in under with lti.add_unknown, so attempts made before the roster had him stay his
    kept = [s.id for s in roster.students if s.id != "s2026009"]
    assert [s.id for s in synced.students] == kept + [lms_person("2001")]
    assert synced.by_id("s2026002").email == "ben.okafor@uni.example"
    assert synced.by_id("s2026003").extension == roster.by_id("s2026003").extension  # the roster's own column kept
    kept = json.loads(tool.rows("SELECT diff FROM lti_syncs ORDER BY id DESC LIMIT 1", gradebook=False)[0][0])
    assert kept["dropped"] == ["s2026009"] and [m["user_id"] for m in kept["added"]] == ["2001"]


@pytest.mark.slow
def test_a_class_list_page_that_names_another_site_gets_no_access_token(tool, platform):
    """Issue 45, item 7: the class list's `Link: rel="next"` is held to the platform's sites, as launch and score
    addresses are; the tool's access token goes nowhere else."""
    launch(tool, platform, User("prof-7", (INSTRUCTOR,), "prof@uni.example"))  # names the course's roster service
    heard: list[str] = []

    class Thief(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            heard.append(self.headers.get("authorization", ""))
            body = json.dumps({"members": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    thief = ThreadingHTTPServer(("127.0.0.1", 0), Thief)  # another port: another origin
    threading.Thread(target=thief.serve_forever, daemon=True).start()
    platform.members = roster_members()
    platform.members_next = f"http://127.0.0.1:{thief.server_address[1]}/memberships?page=2"
    try:
        done = subprocess.run([str(QKV), "--course", str(tool.root), "lti", "sync", NAME, "--roster", ROSTER,
                               "--db", tool.store], cwd=tool.root, capture_output=True, text=True, timeout=600)
    finally:
        platform.members_next = ""
        thief.shutdown()
        thief.server_close()
    assert heard == []
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "the LMS named a service address off its sites" in done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_revoked_student_is_refused_at_launch_until_reinstated(tool, platform, tmp_path):
    """Issue 45, item 8: the LMS's vouching does not undo `qkv tokens --revoke`; `--reinstate` does."""
    fox = learner("1006", "fox@uni.example")
    assert launch(tool, platform, fox)[1].status_code == 303
    qkv(tool.root, "tokens", NAME, "--db", tool.store, "--revoke", "s2026006")
    browser, answer, _ = launch(tool, platform, fox)
    refused(browser, answer, "your access to this course was revoked")
    qkv(tool.root, "tokens", NAME, "--db", tool.store, "--roster", ROSTER, "--reinstate", "s2026006",
        "--out", tmp_path / "tokens.csv")
    browser, answer, _ = launch(tool, platform, fox)
    assert answer.status_code == 303 and "signed in as s2026006 (student)" in Page(browser.get(f"/a/{NAME}").text).text


SYNC_HOURS = 0.001  # 3.6 s between the service's own pulls of the class list


@pytest.fixture(scope="module")
def scheduled(served_numpy, tmp_path_factory):
    """The course served on SQLite with its class list pulled every SYNC_HOURS, beside a platform of its own."""
    root, config = lti_course(served_numpy, tmp_path_factory)
    platform = Platform().start()
    with contextlib.ExitStack() as stack:
        stack.callback(platform.stop)
        yield stack.enter_context(serving(root, config, str(root / "store"), platform,
                                          "--lti-sync-hours", SYNC_HOURS)), platform


def syncs(tool: Tool) -> list[dict]:
    """The differences of each sync in the history, oldest first."""
    return [json.loads(row[0]) for row in tool.rows("SELECT diff FROM lti_syncs ORDER BY id", gradebook=False)]


def roster_members() -> list[dict]:
    """The class list of an LMS that has the roster's students, and no one else."""
    return [roster_member(s) for s in load_roster(ROSTER).students]


def launched_by_instructor(scheduled: tuple[Tool, Platform], sub: str) -> tuple[Tool, Platform, Browser]:
    """The roster's students in the LMS course, and an instructor's launch from it (which names its roster
    service); (the tool, the platform, the instructor's browser)."""
    tool, platform = scheduled
    platform.members = roster_members()
    browser, answer, _ = launch(tool, platform, User(sub, (INSTRUCTOR,), "prof@uni.example"))
    assert answer.status_code == 303
    return tool, platform, browser


def joins(platform: Platform, user_id: str, email: str, name: str) -> dict:
    """A learner added to the LMS course; the differences a sync keeps of it."""
    platform.members = roster_members() + [member(user_id, email, name)]
    return {"added": [{"user_id": user_id, "name": name, "email": email}], "dropped": [],
            "changed": []}


@pytest.mark.slow
def test_the_service_pulls_the_class_list_on_its_own_and_keeps_what_qkv_lti_sync_keeps(scheduled):
    tool, platform, browser = launched_by_instructor(scheduled, "prof-5")
    before = ROSTER.read_bytes()
    added = joins(platform, "3001", "new@uni.example", "New Student")
    wait_for(lambda: added in syncs(tool), "a pull of the class list with the student added", tool.server.output_tail)
    assert ROSTER.read_bytes() == before
    shown = Page(browser.get(f"/a/{NAME}/class").text).text
    assert re.search(r"LMS class list, sync \d+ at [0-9-]+ [0-9:]+ UTC: 1 added, 0 dropped, 0 changed email\.", shown)
    # what the command keeps of the same class list is what the service kept
    done = qkv(tool.root, "lti", "sync", NAME, "--roster", ROSTER, "--db", tool.store)
    number = int(re.search(r"^sync (\d+) kept in the history", done.stdout, re.M).group(1))
    assert json.loads(tool.rows(f"SELECT diff FROM lti_syncs WHERE id = {number}", gradebook=False)[0][0]) == added


@pytest.mark.slow
def test_the_service_serves_on_while_the_lms_is_away_and_pulls_the_class_list_once_it_is_back(scheduled):
    tool, platform, browser = launched_by_instructor(scheduled, "prof-6")

    def failures() -> list[str]:
        return [line for line in tool.server.log.read_text(encoding="utf-8", errors="replace").splitlines()
                if line.startswith(f"qkv serve: LTI class list of {NAME} not pulled")
                and "the LMS's class list could not be read" in line]

    seen = len(failures())
    platform.stop()
    try:
        wait_for(lambda: len(failures()) > seen, "a failed pull in the service's log", tool.server.output_tail)
        assert browser.get(f"/a/{NAME}/class").status_code == 200  # the service serves on
        added = joins(platform, "3002", "back@uni.example", "Back Again")
    finally:
        platform.start()
    wait_for(lambda: added in syncs(tool), "a pull of the class list once the LMS was back", tool.server.output_tail)
    assert tool.server.running() and "Traceback" not in tool.server.log.read_text(encoding="utf-8", errors="replace")


# ------------------------------------------------------------------ deep linking

@pytest.mark.slow
def test_an_instructor_adding_the_tool_picks_the_assignment_the_link_opens(tool, platform):
    platform.next_claims.update(platform.deep_linking_claims())
    browser, answer, _ = launch(tool, platform, User("prof-4", (INSTRUCTOR,), "prof@uni.example"))
    assert answer.status_code == 200, answer.text[:500]
    choice = Page(answer.text).form("/lti/deep-link")
    assert choice["assignment"] == NAME
    signed = browser.post("/lti/deep-link", data=choice)
    assert signed.status_code == 200, signed.text[:500]
    back = Page(signed.text).form(f"{platform.url}/deep-link-return")
    assert f"form-action 'self' {platform.url};" in signed.headers["content-security-policy"]
    assert httpx.post(f"{platform.url}/deep-link-return", data=back, timeout=60).status_code == 200
    items = platform.deep_links[-1]["items"]
    assert [(i["type"], i["url"]) for i in items] == [("ltiResourceLink", f"{tool.url}/a/{NAME}")]
    assert browser.post("/lti/deep-link", data=choice).status_code == 403  # one answer per pick
    _, opened, _ = launch(tool, platform, ADA, target=items[0]["url"])  # the new link, clicked by a learner
    assert opened.headers["location"] == f"/a/{NAME}"


@pytest.mark.slow
def test_a_learner_cannot_add_links(tool, platform):
    platform.next_claims.update(platform.deep_linking_claims())
    browser, answer, _ = launch(tool, platform, ADA)
    refused(browser, answer, "only the course's instructors add assignment links")


# ------------------------------------------------------------------ without a server

def test_the_key_pair_is_made_once_with_an_owner_only_private_key(tmp_path):
    private = make_keys(tmp_path / "keys")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert "PRIVATE KEY" in read_keys(tmp_path / "keys")[0]
    with pytest.raises(QkvError, match="a key pair is already here"):
        make_keys(tmp_path / "keys")


PLATFORM = {"issuer": "https://lms.example", "client_id": "1", "deployment_ids": ["d"], "context_ids": ["c"],
            "auth_login_url": "https://lms.example/auth", "auth_token_url": "https://lms.example/token",
            "key_set_url": "https://lms.example/jwks"}


@pytest.mark.parametrize("lti, message", [
    ({"tool_url": "https://qkv.example", "platforms": []}, "platforms: List should have at least 1 item"),
    ({"tool_url": "javascript:alert(1)", "platforms": [PLATFORM]}, "tool_url: 'javascript:alert(1)' is not an http(s)"),
    ({"tool_url": "https://qkv.example", "platforms": [{**PLATFORM, "secret": "x"}]},
     "platforms.0.secret: Extra inputs are not permitted"),
    ({"tool_url": "https://qkv.example", "platforms": [PLATFORM, PLATFORM]},
     "platforms: issuer 'https://lms.example' is listed twice"),
    ({"tool_url": "https://qkv.example", "platforms": [{**PLATFORM, "origins": ["https://school.example/path"]}]},
     "platforms.0.origins: 'https://school.example/path' is not an origin"),
    ({"tool_url": "https://qkv.example", "platforms": [{**PLATFORM, "lms": "blackboard"}]},
     "platforms.0.lms: Input should be 'canvas', 'moodle' or 'other'"),
    ({"tool_url": "https://qkv.example", "platforms": [PLATFORM], "sync_hours": -1},
     "sync_hours: Input should be greater than or equal to 0"),
    ({"tool_url": "https://qkv.example", "platforms": [PLATFORM], "sync_hours": float("nan")},
     "sync_hours: Input should be a finite number"),
])
def test_a_bad_lti_section_of_course_yaml_is_one_line_naming_the_file_and_field(tmp_path, lti, message):
    (tmp_path / "course.yaml").write_text(yaml.safe_dump({"title": "A course", "lti": lti}), encoding="utf-8")
    with pytest.raises(QkvError) as caught:
        read_course(tmp_path)
    assert str(tmp_path / "course.yaml") in str(caught.value) and f"lti.{message}" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_private_key_is_out_of_the_sandboxes_reach_wherever_course_yaml_puts_it(tmp_path):
    elsewhere = tmp_path / "secrets" / ".." / "secrets" / "lti"  # outside the course folder, and not resolved
    course = tmp_path / "course"
    course.mkdir()
    lti = {"tool_url": "https://qkv.example", "keys": str(elsewhere), "platforms": [PLATFORM]}
    (course / "course.yaml").write_text(yaml.safe_dump({"title": "A course", "lti": lti}), encoding="utf-8")
    found = read_course(course)
    assert (tmp_path / "secrets" / "lti").resolve() in protected({}, tmp_path / "store", found)


def test_the_canvas_developer_key_names_the_routes_the_service_serves(tmp_path):
    done = subprocess.run([str(QKV), "lti", "config", "--platform", "canvas", "--url", "https://qkv.example.edu/"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)
    assert (key["oidc_initiation_url"], key["target_link_uri"], key["public_jwk_url"]) == (
        "https://qkv.example.edu/lti/login", "https://qkv.example.edu/lti/launch",
        "https://qkv.example.edu/lti/jwks.json")
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in key["scopes"]
    # Canvas's `sub` is opaque: its numeric user id, SIS integration id and course id come as custom claims
    assert key["custom_fields"] == {"canvas_user_id": "$Canvas.user.id", "canvas_course_id": "$Canvas.course.id",
                                    "canvas_user_sis_integration_id": "$Canvas.user.sisIntegrationId"}
    placements = key["extensions"][0]["settings"]["placements"]
    assert {p["message_type"] for p in placements} == {"LtiDeepLinkingRequest"}


def test_the_moodle_settings_and_a_bad_address(tmp_path):
    run = lambda *args: subprocess.run([str(QKV), "lti", "config", *args], capture_output=True,  # noqa: E731
                                       text=True, timeout=120, cwd=tmp_path)
    settings = dict(line.strip().split(": ", 1) for line in run("--platform", "moodle", "--url",
                                                                "http://lms.test:8000").stdout.splitlines()
                    if line.startswith("  "))  # a field of the form, indented under its section
    assert settings["Initiate login URL"] == "http://lms.test:8000/lti/login"
    assert settings["Public keyset"] == "http://lms.test:8000/lti/jwks.json"
    # every field a Moodle admin sets, by its label in Moodle's form
    assert (settings["Tool configuration usage"], settings["Default launch container"],
            settings["Accept grades from the tool"]) == ("Show in activity chooser and as a preconfigured tool",
                                                         "Embed, without blocks", "Always")
    assert settings["Share launcher's email with tool"] == "Always" and settings["Force SSL"] == "no"
    bad = run("--platform", "moodle", "--url", "javascript:alert(1)")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == "error: --url: 'javascript:alert(1)' is not an http(s) address " \
                                                  "without query or fragment"
    # an empty --url, in a course with no lti section, is no address given: one line, not the AttributeError it was
    empty = run("--platform", "moodle", "--url", "")
    assert empty.returncode != 0 and "Traceback" not in empty.stderr
    assert empty.stderr.strip().splitlines()[-1].startswith("error: --url: the service's public address is needed")


CANVAS = PlatformSettings(**{**PLATFORM, "lms": "canvas"})
NO_CLAIMS = KeptClaims()


def test_a_learner_the_roster_lacks_is_refused_unless_the_course_adds_them():
    roster = load_roster(ROSTER)
    stranger = {"sub": "canvas/99", "email": "new@uni.example"}
    with pytest.raises(Refusal, match="you are not on this course's roster"):
        person_of(stranger, Role.STUDENT, roster, CANVAS, NO_CLAIMS)
    assert person_of(stranger, Role.STUDENT, roster, CANVAS, NO_CLAIMS, add_unknown=True) == \
        (lms_person("canvas/99"), False)
    taken = parse_roster(f"id,name\n{lms_person('canvas/99')},Someone Else\n", "roster.csv")  # another's id
    with pytest.raises(Refusal):
        person_of(stranger, Role.STUDENT, taken, CANVAS, NO_CLAIMS, add_unknown=True)
    assert person_of(stranger, Role.STAFF, None, CANVAS, NO_CLAIMS) == ("new@uni.example", False)


def test_an_email_signs_in_only_where_the_course_says_the_lms_verifies_emails():
    """Issue 45, item 8: an LMS where users set their own email would hand over the row of whoever's address
    they typed."""
    no_ids = parse_roster("id,name,email\nb1,Ben,ben@uni.example\n", "roster.csv")
    typed = {"sub": "x", "email": "BEN@uni.example"}
    with pytest.raises(Refusal, match="you are not on this course's roster"):
        person_of(typed, Role.STUDENT, no_ids, CANVAS, NO_CLAIMS)
    assert person_of(typed, Role.STUDENT, no_ids, CANVAS, NO_CLAIMS, emails_verified=True) == ("b1", True)
    # a row with a Canvas id is that Canvas user's alone, verified emails or not
    ids = parse_roster("id,name,email,canvas_user_id\nb1,Ben,ben@uni.example,1002\n", "roster.csv")
    with pytest.raises(Refusal, match="you are not on this course's roster"):
        person_of({**typed, CUSTOM: {"canvas_user_id": "2999"}}, Role.STUDENT, ids, CANVAS, NO_CLAIMS,
                  emails_verified=True)


def test_an_email_does_not_sign_in_as_a_student_the_lms_knows_by_another_id():
    roster = load_roster(ROSTER)  # Ada's row has her Canvas id (1001): another LMS user with her email is not her
    other = {"sub": "2999", "email": "ada@uni.example", CUSTOM: {"canvas_user_id": "2999"}}
    with pytest.raises(Refusal, match="you are not on this course's roster"):
        person_of(other, Role.STUDENT, roster, CANVAS, NO_CLAIMS, emails_verified=True)
    assert person_of(other, Role.STUDENT, roster, CANVAS, NO_CLAIMS, add_unknown=True) == (lms_person("2999"), False)


@pytest.mark.parametrize("roles, role", [
    ([LEARNER], Role.STUDENT), (["Learner"], Role.STUDENT), ([INSTRUCTOR], Role.INSTRUCTOR), ([TA], Role.STAFF),
    ([INSTRUCTOR, TA], Role.STAFF),  # as Canvas sends a TA: the most specific role decides
    (["http://purl.imsglobal.org/vocab/lis/v2/system/person#User"], None),
    (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"], None),
    (["User", "Member"], None), ("Learner", None),
], ids=["learner", "short-learner", "instructor", "ta", "canvas-ta", "system-user", "institution-student", "short-others",
        "not-a-list"])
def test_only_a_role_in_the_course_signs_in(roles, role):
    claims = {"https://purl.imsglobal.org/spec/lti/claim/roles": roles}
    if role is None:
        with pytest.raises(Refusal, match="no role in the course that the service knows"):
            role_of(claims)
    else:
        assert role_of(claims) is role


def test_a_launch_from_an_lms_course_the_section_does_not_name_is_refused():
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[PLATFORM])
    context = "https://purl.imsglobal.org/spec/lti/claim/context"
    in_course({"iss": "https://lms.example", context: {"id": "c"}}, settings, Role.STUDENT)
    for claims in ({"iss": "https://lms.example", context: {"id": "another-course"}},
                   {"iss": "https://lms.example"}, {"iss": "https://lms.example", context: "c"},
                   {"iss": "https://other.example", context: {"id": "c"}}):
        for role in Role:
            with pytest.raises(Refusal, match="an LMS course this service does not serve|not served yet"):
                in_course(claims, settings, role)


def test_an_instructors_first_launch_shows_the_lms_courses_id_to_add_and_serves_nothing():
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[{**PLATFORM, "context_ids": []}])
    claims = {"iss": "https://lms.example", CLAIM + "deployment_id": "d",
              CLAIM + "context": {"id": "ctx-abc", "title": "Transformers 2026"},
              CUSTOM: {"canvas_course_id": "4321"}}
    with pytest.raises(Refusal) as shown:
        in_course(claims, settings, Role.INSTRUCTOR)
    assert shown.value.heading == "Course not served yet"
    for said in ("context id 'ctx-abc'", "title 'Transformers 2026'", "Canvas course id '4321'",
                 "deployment id 'd'", "add 'ctx-abc' to context_ids of the platform 'https://lms.example'"):
        assert said in shown.value.message
    for role in (Role.STUDENT, Role.STAFF):  # only an instructor is shown the course's ids
        with pytest.raises(Refusal, match="an LMS course this service does not serve"):
            in_course(claims, settings, role)


def test_login_initiations_from_one_address_are_limited(tmp_path):
    accounts = AccountBook(tmp_path / ACCOUNTS_FILE)
    try:
        now = time.time()
        assert all(login_allowed(accounts, "192.0.2.1", now, allowed=3) for _ in range(3))
        assert not login_allowed(accounts, "192.0.2.1", now, allowed=3)
        assert login_allowed(accounts, "192.0.2.2", now, allowed=3)  # another address is not held up
        assert login_allowed(accounts, "192.0.2.1", now + FAILURE_WINDOW + 1, allowed=3)  # nor for long
        assert login_allowed(accounts, "192.0.2.3", now)  # under the real limit
    finally:
        accounts.close()


def test_the_class_page_line_counts_the_latest_sync(tmp_path):
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[PLATFORM])
    tool = LtiTool(settings, "", "", LtiStore(tmp_path / ACCOUNTS_FILE))
    try:
        assert lms_class_list(tool, NAME) is None and lms_class_list(None, NAME) is None
        roster = parse_roster("id,name,email\nb1,Ben,ben@uni.example\nc1,Cy,cy@uni.example\n", "roster.csv")
        tool.store.keep_sync(NAME, roster_diff(roster, []).as_record(), 0.0)
        lms = [Member(LmsUser(PLATFORM["issuer"], "9", "zed@uni.example", ()), "Zed"),
               Member(LmsUser(PLATFORM["issuer"], "", "BEN@uni.example", ()), "Ben")]
        tool.store.keep_sync(NAME, roster_diff(roster, lms, emails_verified=True).as_record(), 86400.0)
        assert lms_class_list(tool, NAME) == \
            "LMS class list, sync 2 at 1970-01-02 00:00:00 UTC: 1 added, 1 dropped, 0 changed email."
        assert lms_class_list(tool, "another-assignment") is None
    finally:
        tool.close()


def test_the_schedule_is_course_yamls_unless_the_option_says_otherwise():
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[PLATFORM])
    assert sync_period(settings, None) == 24 * 3600 and sync_period(None, None) == 0
    assert sync_period(settings.model_copy(update={"sync_hours": 0.5}), None) == 1800
    assert sync_period(settings, 0) == 0 and sync_period(settings, 0.001) == pytest.approx(3.6)


@pytest.mark.parametrize("lti, hours, message", [
    (True, "nan", "Input should be a finite number"),
    (True, "-2", "Input should be greater than or equal to 0"),
    (False, "1", "the course has no `lti:` section in course.yaml (docs/lti.md)"),
], ids=["nan", "negative", "no-lti-section"])
def test_a_bad_sync_period_is_one_line_before_the_service_starts(tmp_path, lti, hours, message):
    config = {"title": "A course", **({"lti": {"tool_url": "https://qkv.example", "platforms": [PLATFORM]}}
                                      if lti else {})}
    (tmp_path / "course.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run([str(QKV), "--course", str(tmp_path), "serve", NAME, "--lti-sync-hours", hours],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"error: --lti-sync-hours: {message}"


def test_a_pull_that_fails_is_one_line_and_the_puller_goes_on(tmp_path):
    away = "http://127.0.0.1:1"  # nothing listens on port 1: every request to the LMS is refused at once
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[{
        **PLATFORM, "issuer": away, "auth_login_url": f"{away}/auth", "auth_token_url": f"{away}/token",
        "key_set_url": f"{away}/jwks"}])
    make_keys(tmp_path / "keys")
    tool = LtiTool.open(settings, tmp_path / "keys", tmp_path / ACCOUNTS_FILE)
    tool.store.keep_context(NAME, away, "c", f"{away}/memberships", time.time())
    said: list[str] = []
    puller = RosterPuller(tool, ["never-launched", NAME], load_roster(ROSTER), 0.05, said.append).start()
    try:
        wait_for(lambda: len(said) >= 2, "a line for each assignment", lambda: said)
        tool.store.keep_context(NAME, away, "c", f"{away}/other-memberships", time.time())  # a line of its own
        wait_for(lambda: len(said) >= 3, "the line of the next failure", lambda: said)
    finally:
        puller.stop()
        tool.close()
    assert all(line.startswith(f"LTI class list of {name} not pulled (tried again in ") and "\n" not in line
               for line, name in zip(said, ["never-launched", NAME, NAME]))
    assert said[0].endswith("): never-launched: no launch from the LMS has named its course's roster service yet: "
                            "open the assignment from the LMS once, then sync")
    assert f"): {away}/memberships: the LMS's class list could not be read: " in said[1]
    assert f"): {away}/other-memberships: the LMS's class list could not be read: " in said[2]
    # the unlaunched assignment was pulled again in the round that said the third line, and not said again
    assert len(said) == 3, said


def test_lms_user_ids_that_look_alike_get_ids_of_their_own():
    ids = {lms_person(sub) for sub in ("a/b", "a_b", "x" * 70, "x" * 70 + "y", "")}
    assert len(ids) == 5
    roster = parse_roster("id,name\n" + "".join(f"{i},Someone\n" for i in sorted(ids)), "roster.csv")
    assert len(roster.students) == 5  # each a valid roster id


def test_a_platform_framing_from_another_origin_than_its_sign_in_names_it():
    canvas = {**PLATFORM, "issuer": "https://canvas.example", "auth_login_url": "https://sso.canvas.example/auth",
              "origins": ["https://school.example", "https://school.example:8443/"]}
    settings = LtiSettings(tool_url="https://qkv.example", platforms=[canvas, PLATFORM])
    assert LtiTool(settings, "", "", None).origins == (
        "https://lms.example", "https://school.example", "https://school.example:8443")
    # its grade and roster services may be where it frames the tool from, or where it signs in
    assert settings.platforms[0].service_origins == {"https://school.example", "https://school.example:8443",
                                                     "https://sso.canvas.example", "https://lms.example"}


def test_only_the_platforms_may_frame_the_pages_of_an_lti_tool():
    alone = dict(security_headers())
    assert alone[b"x-frame-options"] == b"DENY" and b"frame-ancestors 'none'" in alone[b"content-security-policy"]
    framed = dict(security_headers(("https://canvas.example", "https://moodle.example")))
    assert b"x-frame-options" not in framed
    assert b"frame-ancestors https://canvas.example https://moodle.example;" in framed[b"content-security-policy"]
    assert b"form-action 'self' https://canvas.example https://moodle.example;" in framed[b"content-security-policy"]


@pytest.fixture(params=["sqlite", "postgresql"])
def lti_store(request, tmp_path):
    where = tmp_path / "accounts.sqlite" if request.param == "sqlite" else request.getfixturevalue("postgres_db")
    store = LtiStore(where)
    yield store
    store.close()


def test_a_nonce_is_taken_once_and_values_expire(lti_store):
    now = time.time()
    lti_store.put("lti1p3-nonce-abc", True, now + 60, now)
    lti_store.put("lti1p3-state-1", {"a": 1}, now + 60, now)
    assert lti_store.get("lti1p3-state-1", now) == {"a": 1} == lti_store.get("lti1p3-state-1", now)
    assert lti_store.take("lti1p3-nonce-abc", now) is True
    assert lti_store.take("lti1p3-nonce-abc", now) is None
    assert lti_store.get("lti1p3-state-1", now + 61) is None
    assert lti_store.get("x" * 10_000, now) is None  # a hostile state parameter is no key
