"""`qkv serve` as students and staff use it: a real server process on a loopback port, assignments built by
`qkv build`, tokens from `qkv tokens`, and HTTP from a client that keeps cookies and sends forms as a browser without
JavaScript does. The flows (sign in, hand in, the score `qkv grade` gives the same file, the feedback, the API of
`qkv_check.py --submit`, the class table, regrading, the export); the manifest's limits; one test per defence
against a hostile student; and nothing accepted lost to kill -9, on SQLite and on PostgreSQL.

One server per module and database (a folder of SQLite files, then a PostgreSQL database: every test of it runs on
both) serves the tests that only hand in as a student of their own; a test that needs other limits or a crash starts
its own. The client side (the browser, the API, raw requests, the gradebook read
behind the service's back, the server process) is tests/serve_client.py.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import re
import secrets
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

import httpx
import pytest

from autograder.classroom.deadlines import Deadline
from autograder.serve.course import served_assignment
from autograder.serve.pages import when
from autograder.assemble.manifest import find_manifest, resolve_assignment
from conftest import QKV, ROOT, gradebook_rows, load_bank_strict
from served_course import class_sample
from serve_client import Browser, Page, Service, attempts_of, raw_request, serving, stored, wait_for
from servers import fresh_database

pytestmark = pytest.mark.slow  # servers started, files graded in sandboxes

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
HOSTILE = "https://evil.example"


def sample(file: str) -> bytes:
    return class_sample(file).read_bytes()


# ------------------------------------------------------------------ attention-numpy in a course of the run's

@dataclass(frozen=True)
class Reference:
    scores: dict[str, float]  # by sample file: the total `qkv grade` gives it
    max_score: float
    feedback: Path  # `qkv grade`'s feedback pages, feedback/<file's stem>/feedback.html


@pytest.fixture(scope="module")
def numpy_root(served_numpy, tmp_path_factory) -> Path:
    """A copy of the run's course with attention-numpy due in 30 days, built (the module writes its samples, grades
    and store in it)."""
    root = tmp_path_factory.mktemp("serve-numpy") / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    return root


def numpy_policy(root: Path) -> Deadline:
    """The dates of the course's build, as the service reads them."""
    return served_assignment(NAME, root / "dist" / NAME).policy


@pytest.fixture(scope="module")
def reference(numpy_root) -> Reference:
    """What `qkv grade` gives the sample files in the same course: the scores the service must give the same bytes."""
    folder, out = numpy_root / "samples", numpy_root / "reference"
    folder.mkdir()
    for file in ("ada.py", "ben.py", "cho.py"):
        shutil.copy(class_sample(file), folder / file)
    done = subprocess.run([str(QKV), "--course", str(numpy_root), "grade", NAME, str(folder), "--out", str(out)],
                          cwd=numpy_root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = gradebook_rows(out)
    scores = {f"{student}.py": float(row["total"]) for student, row in rows.items()}
    assert scores["ada.py"] == float(rows["ada"]["max"]) > scores["ben.py"]  # the samples the tests stand on
    return Reference(scores, float(rows["ada"]["max"]), out / "feedback")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def numpy_service(request, numpy_root) -> Service:
    """The module's server: the class of examples/canvas, a staff member (ta) and an instructor (prof), on a folder of
    SQLite files and again on a PostgreSQL database (every test of it runs on both). Each test hands in as students of
    its own, so that none sees another's attempts. Failed sign-ins from 127.0.0.1 count towards its limit (10 in 15
    minutes) for every test: the tests that guess tokens do it from other loopback addresses."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(numpy_root / "store")
        service = Service(numpy_root, (NAME,), ROSTER, store).start()
        try:
            service.issue("--staff", "ta", "--instructor", "prof")
            yield service
        finally:
            service.close()


@dataclass
class HandIn:
    browser: Browser
    answer: httpx.Response  # the reply to the upload
    path: str  # the attempt page it sent the browser to
    page: Optional[Page]  # that page once graded


@pytest.fixture(scope="module")
def handed_in(numpy_service) -> dict[str, HandIn]:
    """Ada (s2026001) hands in ada.py and Ben (s2026002) ben.py from the browser, each graded."""
    done = {}
    for student, file in (("s2026001", "ada.py"), ("s2026002", "ben.py")):
        browser = numpy_service.signed_in(student)
        answer = browser.hand_in(NAME, file, sample(file))
        path = answer.headers.get("location", "")
        done[file] = HandIn(browser, answer, path, browser.graded(path) if answer.status_code == 303 else None)
    return done


# ------------------------------------------------------------------ the flows

@pytest.mark.parametrize("file", ["ada.py", "ben.py"])
def test_a_handed_in_file_gets_the_score_qkv_grade_gives_it(handed_in, reference, file):
    done = handed_in[file]
    assert done.answer.status_code == 303, done.answer.text[:500]
    assert re.fullmatch(rf"/a/{NAME}/attempts/[A-Za-z0-9_-]{{16,}}", done.path)
    assert done.page.by_id["score"] == f"{reference.scores[file]:g} / {reference.max_score:g}"
    assert "this is the attempt that counts" in done.page.text


def test_an_attempt_that_does_not_load_shows_why_in_one_line(numpy_service):
    """A grading that failed (a syntax error here) shows its score and the one line qkv grade gives for it; the page
    reads the whole result for that line alone."""
    browser = numpy_service.signed_in("s2026006")
    answer = browser.hand_in(NAME, "broken.py", b"import numpy as np\n\ndef softmax_rows(S:\n    return S\n")
    assert answer.status_code == 303, answer.text[:500]
    page = browser.graded(answer.headers["location"])
    assert page.by_id["score"].startswith("0 / ")
    assert "SyntaxError" in page.refusal() and "line 3" in page.refusal(), page.refusal()


def test_the_link_signs_a_student_in_to_their_own_due_date_and_attempts(numpy_service):
    """Cho's link (extension +48 h on the roster): the form it opens carries the token, signing in sets an HttpOnly
    SameSite cookie and goes on to the assignment, which shows Cho's own due date and the attempts left."""
    link = urlsplit(numpy_service.links["s2026003"])
    assert numpy_service.links["s2026003"].startswith(f"{numpy_service.url}/signin?")
    browser = Browser(numpy_service.url)
    form = Page(browser.get(f"{link.path}?{link.query}").text).form("/signin")
    assert form["token"] == numpy_service.tokens["s2026003"] and form["next"] == f"/a/{NAME}"
    answer = browser.post("/signin", data=form)
    assert (answer.status_code, answer.headers["location"]) == (303, f"/a/{NAME}")
    cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("qkv_session="))
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
    page = Page(browser.get(f"/a/{NAME}").text)
    due = numpy_policy(numpy_service.root).due
    assert f"{when(due + dt.timedelta(hours=48))} (with your extension)" in page.text
    assert when(due) not in page.text
    assert page.by_id["attempts-left"].startswith("0 used, 20 left (6 in any hour at most)")


def test_the_served_assignment_is_due_in_the_future_and_takes_uploads(numpy_service):
    """The course served is the run's own, due in 30 days: its page shows a due date and a last date to come, and the
    hand-in form, whatever day the tests run on."""
    text = Page(numpy_service.signed_in("s2026009").get(f"/a/{NAME}").text)
    shown = dict(re.findall(r"(Due|Last date to hand in) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", text.text))
    due, last = (dt.datetime.fromisoformat(shown[label]).replace(tzinfo=dt.timezone.utc)
                 for label in ("Due", "Last date to hand in"))
    now = dt.datetime.now(dt.timezone.utc)
    assert now + dt.timedelta(days=20) < due < last, text.text[:1000]
    assert text.form(f"/a/{NAME}/attempts")["csrf"]


def test_the_assignment_page_counts_and_lists_the_attempt(handed_in, reference):
    page = Page(handed_in["ada.py"].browser.get(f"/a/{NAME}").text)
    assert page.by_id["attempts-left"].startswith("1 used, 19 left")
    listed = [row for row in page.rows if row and row[1:2] == ["ada.py"]]
    assert len(listed) == 1 and listed[0][2] == f"{reference.scores['ada.py']:g} / {reference.max_score:g}"


def test_the_feedback_page_is_the_one_qkv_grade_writes(handed_in, reference):
    done = handed_in["ada.py"]
    answer = done.browser.get(done.page.attrs["feedback"]["href"])
    assert answer.status_code == 200
    served = Page(answer.text)
    written = Page((reference.feedback / "ada" / "feedback.html").read_text(encoding="utf-8"))
    assert served.by_id["by-problem"] and served.by_id == written.by_id  # every problem's section, word for word
    assert f"{reference.max_score:g} / {reference.max_score:g}" in served.text


def test_the_api_takes_a_file_and_reports_its_grading(numpy_service, reference):
    answer = numpy_service.api_hand_in("s2026004", "cho.py", sample("cho.py"))
    assert answer.status_code == 202, answer.text
    attempt = answer.json()["attempt"]
    assert answer.json()["page"] == f"/a/{NAME}/attempts/{attempt}"
    status = numpy_service.api_graded("s2026004", attempt)
    score = reference.scores["cho.py"]
    assert (status["score"], status["max_score"], status["final"], status["counted"]) == \
        (score, reference.max_score, score, True)
    assert httpx.get(f"{numpy_service.url}/api/a/{NAME}/attempts/{attempt}").status_code == 401  # no token


def test_staff_see_the_class_with_each_counted_score(numpy_service, handed_in, reference):
    rows = Page(numpy_service.signed_in("ta").get(f"/a/{NAME}/class").text).table()
    for student, file in (("s2026001", "ada.py"), ("s2026002", "ben.py")):
        assert rows[student]["Counted score"] == f"{reference.scores[file]:g} / {reference.max_score:g}"
        assert (rows[student]["Attempts"], rows[student]["Waiting"]) == ("1", "0")
    assert rows["s2026009"]["Counted score"] == "" and rows["s2026009"]["Attempts"] == "0"


def test_the_canvas_export_has_each_students_final_score(numpy_service, handed_in, reference):
    answer = numpy_service.signed_in("prof").get(f"/a/{NAME}/export/canvas")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(answer.text)))
    column = lines[0][-1]
    rows = {r["SIS User ID"]: r[column] for r in csv.DictReader(io.StringIO(answer.text)) if r["SIS User ID"]}
    assert rows["s2026001"] == f"{reference.scores['ada.py']:g}"
    assert rows["s2026002"] == f"{reference.scores['ben.py']:g}"


def test_the_class_page_links_every_registered_export_and_each_link_gives_its_file(numpy_service, handed_in):
    """The links come from the registry (grade_formats.GRADE_FORMATS): the page once linked /export/plain, a 404."""
    from autograder.classroom.grade_formats import GRADE_FORMATS

    prof = numpy_service.signed_in("prof")
    page = prof.get(f"/a/{NAME}/class").text
    links = re.findall(rf'href="(/a/{NAME}/export/[^"]+)"', page)
    assert links == [f"/a/{NAME}/export/{name}" for name in GRADE_FORMATS]
    for link in links:
        answer = prof.get(link)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv"), link


def test_an_instructor_regrades_one_students_attempts(numpy_service, handed_in, reference):
    ben = handed_in["ben.py"].path.rsplit("/", 1)[1]
    ada = handed_in["ada.py"].path.rsplit("/", 1)[1]
    prof = numpy_service.signed_in("prof")
    answer = prof.post(f"/a/{NAME}/regrade", data={"csrf": prof.csrf(), "student": "s2026002"})
    assert answer.status_code == 303
    wait_for(lambda: len(stored(numpy_service.store, NAME)[1].get(ben, [])) == 2
             and stored(numpy_service.store, NAME)[0][ben][1] == "graded", "second grading of ben's attempt")
    _, gradings = stored(numpy_service.store, NAME)
    assert gradings[ben] == [reference.scores["ben.py"]] * 2
    assert len(gradings[ada]) == 1  # only the student named


def test_the_latest_attempt_counts_by_default(numpy_service, reference):
    first = numpy_service.api_hand_in("s2026005", "ada.py", sample("ada.py")).json()["attempt"]
    second = numpy_service.api_hand_in("s2026005", "ben.py", sample("ben.py")).json()["attempt"]
    numpy_service.api_graded("s2026005", first)
    assert numpy_service.api_graded("s2026005", second)["counted"] is True
    assert numpy_service.api_status(numpy_service.tokens["s2026005"], first).json()["counted"] is False
    rows = Page(numpy_service.signed_in("ta").get(f"/a/{NAME}/class").text).table()
    # the second attempt's hand calculations had numbers of its own (grade/written_policy.py): its score is its own
    second_score = stored(numpy_service.store, NAME)[1][second][-1]
    assert rows["s2026005"]["Counted score"] == f"{second_score:g} / {reference.max_score:g}"


# ------------------------------------------------------------------ a course of the tests' own: the manifest's limits

LIMITED = """title: "Handing in, with limits"
track: numpy
seed: 1
problems: [normalize-rows, softmax-rows]
serve: {attempts: 3, attempts_per_hour: 2, upload_kb: 4, counts: best}
"""
CLOSED = """title: "Handing in, closed"
track: numpy
seed: 1
due: %s
late: {last: %s}
problems: [normalize-rows]
"""


@pytest.fixture(scope="module")
def own_course(tmp_path_factory) -> Path:
    """`qkv init`'s course with two assignments: `limited` (3 attempts, 2 an hour, 4 KiB, the best counts) and
    `closed` (its late policy's last date passed three weeks ago), both built."""
    root = tmp_path_factory.mktemp("serve-course") / "course"
    made = subprocess.run([str(QKV), "init", str(root), "--title", "Serve 101"], capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    (root / "assignments" / "limited.yaml").write_text(LIMITED)
    (root / "assignments" / "closed.yaml").write_text(
        CLOSED % ((now - dt.timedelta(days=30)).isoformat(), (now - dt.timedelta(days=21)).isoformat()))
    (root / "roster.csv").write_text("id,name,email,lms_id,section,extension\n"
                                     + "".join(f"s00{i},Student {i},s{i}@example.edu,{i},A,\n" for i in range(1, 8)))
    for name in ("limited", "closed"):
        built = subprocess.run([str(QKV), "build", name], cwd=root, capture_output=True, text=True, timeout=900)
        assert built.returncode == 0, built.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def limits_service(own_course) -> Service:
    service = Service(own_course, ("limited", "closed"), own_course / "roster.csv",
                      str(own_course / "grades" / "store")).start()
    try:
        service.issue("--staff", "ta", "--instructor", "prof")
        yield service
    finally:
        service.close()


def key_and_weaker(course: Path) -> tuple[bytes, bytes]:
    """The answer key of `limited`, and the key with a wrong normalize_rows defined after the right one."""
    key = (course / "dist" / "limited" / "key" / "limited.py").read_bytes()
    return key, key + b"\n\ndef normalize_rows(X):\n    return X\n"


def test_a_third_attempt_within_the_hour_is_refused_429(limits_service):
    key, weaker = key_and_weaker(limits_service.root)
    browser = limits_service.signed_in("s001")
    assert [browser.hand_in("limited", "limited.py", body).status_code for body in (key, weaker)] == [303, 303]
    refused = browser.hand_in("limited", "limited.py", key)
    assert refused.status_code == 429
    assert Page(refused.text).refusal() == "you have made 2 attempts in the last hour, the most it allows; try " \
                                           "again later"
    by_api = limits_service.api_hand_in("s001", "limited.py", key, name="limited")
    assert (by_api.status_code, by_api.json()["error"]) == (429, Page(refused.text).refusal())
    assert len(attempts_of(limits_service.store, "s001", "limited")) == 2
    assert Page(browser.get("/a/limited").text).by_id["attempts-left"].startswith("2 used, 1 left")


def test_an_upload_over_upload_kb_is_refused_413(limits_service):
    key, _ = key_and_weaker(limits_service.root)
    limit = 4 * 1024
    largest, over = (key + b"#" * (limit - len(key) - 1) + b"\n"), key + b"#" * (limit - len(key)) + b"\n"
    assert (len(largest), len(over)) == (limit, limit + 1)
    browser = limits_service.signed_in("s002")
    refused = browser.hand_in("limited", "limited.py", over)
    assert refused.status_code == 413
    assert Page(refused.text).refusal() == f"the file is {limit + 1:,} bytes; the most this assignment takes is " \
                                           f"{limit:,}"
    assert limits_service.api_hand_in("s002", "limited.py", over, name="limited").status_code == 413
    assert attempts_of(limits_service.store, "s002", "limited") == []
    assert browser.hand_in("limited", "limited.py", largest).status_code == 303  # the limit itself is allowed


def test_the_best_attempt_counts_when_the_manifest_says_best(limits_service):
    key, weaker = key_and_weaker(limits_service.root)
    better = limits_service.api_hand_in("s003", "limited.py", key, name="limited").json()["attempt"]
    worse = limits_service.api_hand_in("s003", "limited.py", weaker, name="limited").json()["attempt"]
    token = limits_service.tokens["s003"]
    statuses: dict[str, dict] = {}

    def both_graded() -> bool:
        statuses.update({a: limits_service.api_status(token, a, "limited").json() for a in (better, worse)})
        return all(s.get("state") == "graded" for s in statuses.values())

    wait_for(both_graded, "both gradings", lambda: statuses)
    assert statuses[worse]["score"] < statuses[better]["score"] == statuses[better]["max_score"]
    assert (statuses[better]["counted"], statuses[worse]["counted"]) == (True, False)
    rows = Page(limits_service.signed_in("ta").get("/a/limited/class").text).table()
    assert rows["s003"]["Counted score"] == f"{statuses[better]['score']:g} / {statuses[better]['max_score']:g}"


def test_the_instructor_sees_copying_signals_on_the_counted_attempts_and_no_one_else_does(limits_service,
                                                                                           own_course):
    """Two students hand in the same code: the copying page, `qkv copying`'s, names the pair from their counted
    attempts; it is the instructor's only: staff and students are refused."""
    _, weaker = key_and_weaker(own_course)
    for student in ("s006", "s007"):
        answer = limits_service.api_hand_in(student, "limited.py", weaker, name="limited")
        assert answer.status_code == 202, answer.text
        limits_service.api_graded(student, answer.json()["attempt"])
    page = limits_service.signed_in("prof").get("/a/limited/copying")
    assert page.status_code == 200, page.text[:500]
    pairs = [row for row in Page(page.text).text.splitlines() if "s006" in row and "s007" in row]
    assert pairs, Page(page.text).text[:2000]
    assert limits_service.signed_in("ta").get("/a/limited/copying").status_code == 403
    assert limits_service.signed_in("s006").get("/a/limited/copying").status_code == 403


def test_after_the_last_date_an_upload_is_refused_403(limits_service):
    key, _ = key_and_weaker(limits_service.root)
    browser = limits_service.signed_in("s004")
    page = Page(browser.get("/a/closed").text)
    assert "The last date for handing in was" in page.refusal()
    assert "/a/closed/attempts" not in [action for action, _ in page.forms]  # no form to hand in with
    refused = browser.hand_in("closed", "closed.py", key)
    assert refused.status_code == 403
    assert Page(refused.text).refusal().startswith("the last date for handing in closed was ")
    by_api = limits_service.api_hand_in("s004", "closed.py", key, name="closed")
    assert by_api.status_code == 403 and "nothing handed in now can count" in by_api.json()["error"]
    assert attempts_of(limits_service.store, "s004", "closed") == []


def test_a_held_look_at_a_waiting_attempt_answers_with_the_score_once_it_is_stored(numpy_service, reference):
    """The waiting page's script looks at its data-wait, which the server holds until the grading is stored (or
    some 20 s): an attempt that sleeps 3 s as it loads is still waiting when the look is sent, and the look's answer
    is the graded page, with the score the attempt's page then shows."""
    browser = numpy_service.signed_in("s2026003")
    slow = sample("ada.py") + b"\nimport time as _time\n_time.sleep(3)\n"
    path = browser.hand_in(NAME, "ada.py", slow).headers["location"]
    waiting = browser.get(path).text
    assert "score" not in Page(waiting).by_id, "graded before it could be waited for"
    held = re.search(r'id="result"[^>]* data-wait="([^"]+)"', waiting)
    assert held is not None and held.group(1) == f"{path}/result"
    answers = [browser.get(held.group(1), timeout=120)]
    # a machine so busy that grading outlasts the hold answers "still waiting": the script then looks again
    wait_for(lambda: "score" in Page(answers[-1].text).by_id or answers.append(browser.get(held.group(1))),
             "a held look that shows the score", lambda: answers[-1].text[:1000])
    assert all(a.status_code == 200 for a in answers)
    assert "data-wait" not in answers[-1].text
    assert Page(answers[-1].text).by_id["score"] == browser.graded(path).by_id["score"] == \
        f"{reference.scores['ada.py']:g} / {reference.max_score:g}"


# ------------------------------------------------------------------ hostile students, one defence each

def test_another_students_attempt_is_not_found_exactly_like_a_made_up_one(numpy_service):
    owner = numpy_service.api_hand_in("s2026006", "ada.py", sample("ada.py")).json()["attempt"]
    numpy_service.api_graded("s2026006", owner)
    most = resolve_assignment(find_manifest(NAME), load_bank_strict()).max_points
    made_up = secrets.token_urlsafe(16)
    prying = numpy_service.signed_in("s2026007")
    token = numpy_service.tokens["s2026007"]
    for path in (f"/a/{NAME}/attempts/{{}}", f"/a/{NAME}/attempts/{{}}/feedback", f"/a/{NAME}/attempts/{{}}/result"):
        theirs, nobodys = prying.get(path.format(owner)), prying.get(path.format(made_up))
        assert (theirs.status_code, theirs.text) == (404, nobodys.text), path
        # ada.py's score is every point: not on the page (read as text, a token may hold the digits)
        assert "ada.py" not in theirs.text and f"{most:g}" not in Page(theirs.text).text
    theirs, nobodys = numpy_service.api_status(token, owner), numpy_service.api_status(token, made_up)
    assert (theirs.status_code, theirs.json()) == (404, nobodys.json()) == (404, {"error": "no such attempt"})
    assert owner not in prying.get(f"/a/{NAME}").text
    assert numpy_service.signed_in("ta").get(f"/a/{NAME}/attempts/{owner}").status_code == 200  # the id is real


def test_a_student_cannot_open_the_staff_pages(numpy_service, handed_in):
    student = numpy_service.signed_in("s2026007")
    for path in ("class", "class/s2026001", "stats", "export/canvas", "copying"):
        answer = student.get(f"/a/{NAME}/{path}")
        # the whole name and id: a random CSRF token in the page may spell "Ada" (a CI run failed on that)
        assert answer.status_code == 403 and not any(
            leak in answer.text for leak in ("Ada Lovelace", "s2026001")), path
    assert student.post(f"/a/{NAME}/regrade", data={"csrf": student.csrf()}).status_code == 403
    staff = numpy_service.signed_in("ta")  # staff see the class and change nothing
    assert staff.get(f"/a/{NAME}/stats").status_code == 200
    assert staff.post(f"/a/{NAME}/regrade", data={"csrf": staff.csrf()}).status_code == 403


def test_a_forged_or_random_session_cookie_is_no_session(numpy_service):
    real = numpy_service.signed_in("s2026007").http.cookies["qkv_session"]
    forged = real[:-1] + ("A" if real[-1] != "A" else "B")
    for cookie in (secrets.token_urlsafe(32), forged, "", "x" * 5000):
        answer = httpx.get(f"{numpy_service.url}/a/{NAME}", cookies={"qkv_session": cookie})
        assert (answer.status_code, answer.headers.get("location")) == (303, f"/signin?next=/a/{NAME}"), cookie
    api = httpx.get(f"{numpy_service.url}/api/a/{NAME}/attempts/x", cookies={"qkv_session": real})
    assert api.status_code == 401  # the API takes a token, never the cookie
    assert httpx.get(f"{numpy_service.url}/a/{NAME}", cookies={"qkv_session": real}).status_code == 200


def test_a_post_without_the_sessions_csrf_token_is_refused_and_stores_nothing(numpy_service):
    student = numpy_service.signed_in("s2026008")
    others = numpy_service.signed_in("s2026007").csrf()
    for token in ("", others, student.csrf()[:-2]):
        answer = student.hand_in(NAME, "ada.py", sample("ada.py"), csrf=token)
        assert answer.status_code == 403, token
    assert attempts_of(numpy_service.store, "s2026008", NAME) == []
    assert student.post("/signout", data={"csrf": others}).status_code == 403
    assert student.get(f"/a/{NAME}").status_code == 200  # still signed in
    blank = Browser(numpy_service.url)  # the sign-in form's own token: no cookie, no sign-in
    refused = blank.post("/signin", data={"token": numpy_service.tokens["s2026008"], "csrf": "x", "next": "/"})
    assert refused.status_code == 403 and "qkv_session" not in refused.cookies


def test_a_form_sent_from_another_site_is_refused(numpy_service):
    student = numpy_service.signed_in("s2026008")
    answer = student.hand_in(NAME, "ada.py", sample("ada.py"), headers={"origin": HOSTILE})
    assert answer.status_code == 403 and "another site" in Page(answer.text).refusal()
    assert attempts_of(numpy_service.store, "s2026008", NAME) == []


def test_an_oversized_body_is_413_and_the_server_keeps_serving(numpy_service):
    port = numpy_service.server.port
    cookie = numpy_service.signed_in("s2026008").http.cookies["qkv_session"]
    declared = raw_request(port, f"POST /a/{NAME}/attempts HTTP/1.1\r\nHost: x\r\nCookie: qkv_session={cookie}\r\n"
                                 "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000000\r\n\r\n"
                                 .encode())
    assert declared.startswith(b"HTTP/1.1 413 "), declared[:300]
    piece = b"x" * 16384
    chunked = raw_request(port, f"POST /a/{NAME}/attempts HTTP/1.1\r\nHost: x\r\nCookie: qkv_session={cookie}\r\n"
                                "Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n"
                                .encode(), (b"4000\r\n" + piece + b"\r\n",) * 64 + (b"0\r\n\r\n",))
    assert chunked.startswith(b"HTTP/1.1 413 "), chunked[:300]
    form = raw_request(port, b"POST /signin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                       (b"4000\r\n" + piece + b"\r\n",) * 8 + (b"0\r\n\r\n",))
    assert form.startswith(b"HTTP/1.1 413 "), form[:300]
    assert attempts_of(numpy_service.store, "s2026008", NAME) == []
    assert serving(numpy_service)


def test_oversized_headers_are_refused_and_the_server_keeps_serving(numpy_service):
    port = numpy_service.server.port
    one_long = raw_request(port, b"GET /signin HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n")
    many = raw_request(port, b"GET /signin HTTP/1.1\r\nHost: x\r\n"
                       + b"".join(b"X-%d: %s\r\n" % (i, b"b" * 100) for i in range(300)) + b"\r\n")
    trickled = raw_request(port, b"GET /signin HTTP/1.1\r\nHost: x\r\nX-Long: ", (b"a" * 4000,) * 10 + (b"\r\n\r\n",))
    for reply in (one_long, many, trickled):
        assert re.match(rb"HTTP/1.1 (431|400) ", reply), reply[:300]
    assert serving(numpy_service)


def test_a_revoked_or_reissued_token_signs_in_no_more_and_ends_its_sessions(numpy_service):
    old = numpy_service.tokens["s2026009"]
    session = numpy_service.signed_in("s2026009")
    assert numpy_service.api_status(old, "no-such-attempt").status_code == 404  # signed in: the attempt is missing
    said = numpy_service.qkv("tokens", NAME, "--db", numpy_service.store, "--revoke", "s2026009").stdout
    assert said.strip() == "s2026009: 1 token(s) revoked"
    assert session.get(f"/a/{NAME}").status_code == 303
    assert Browser(numpy_service.url).sign_in(old).status_code == 401
    assert numpy_service.api_status(old, "no-such-attempt").status_code == 401
    new = numpy_service.issue("--reinstate", "s2026009")["s2026009"]  # a revoked student only by name
    assert new != old and Browser(numpy_service.url).sign_in(old).status_code == 401
    second = numpy_service.signed_in("s2026009")
    numpy_service.issue("--student", "s2026009")  # a reissue revokes the token before it, and its sessions
    assert second.get(f"/a/{NAME}").status_code == 303


def test_an_upload_named_as_a_path_is_refused_and_nothing_is_written(numpy_service):
    def files() -> set[Path]:
        return {p.relative_to(numpy_service.root) for p in numpy_service.root.rglob("*")}

    before = files()
    student = numpy_service.signed_in("s2026008")
    csrf = student.csrf()
    for name in ("../x.py", "/etc/passwd.py", "a\x00.py", "..\\x.py", ".x.py", "x.py/"):
        body = (b"--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf.encode() + b"\r\n--b\r\n"
                b"Content-Disposition: form-data; name=\"file\"; filename=\"" + name.encode() + b"\"\r\n"
                b"Content-Type: text/x-python\r\n\r\nx = 1\r\n--b--\r\n")
        answer = student.post(f"/a/{NAME}/attempts", content=body,
                              headers={"content-type": "multipart/form-data; boundary=b"})
        assert answer.status_code == 400 and Page(answer.text).refusal(), name
        by_api = numpy_service.api_hand_in("s2026008", name, b"x = 1\n")
        assert by_api.status_code == 400 and by_api.json()["error"], name
    assert files() == before
    assert not (numpy_service.root.parent / "x.py").exists() and not Path("/etc/passwd.py").exists()
    assert attempts_of(numpy_service.store, "s2026008", NAME) == []


def test_ten_failed_sign_ins_from_one_address_refuse_the_next_429(numpy_service):
    """From 127.0.0.2 (loopback, as a second client): ten made-up tokens, then a right one not used lately is
    refused, in the browser and the API; from the usual address it signs in, and once proven there it passes from
    the guesser's address too (a student behind the same NAT as a guesser is not locked out mid-session)."""
    address = "127.0.0.2"
    token = numpy_service.issue("--student", "s2026004")["s2026004"]  # fresh: proven nowhere yet
    guesser = Browser(numpy_service.url, address)
    for _ in range(10):
        assert guesser.sign_in(f"{secrets.token_hex(6)}.{secrets.token_hex(20)}").status_code == 401
    refused = guesser.sign_in(token)
    assert refused.status_code == 429 and Page(refused.text).refusal().startswith("too many failed sign-ins")
    behind = httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=120)
    api = behind.get(f"{numpy_service.url}/api/a/{NAME}/attempts/x", headers={"authorization": f"Bearer {token}"})
    assert api.status_code == 429
    assert Browser(numpy_service.url).sign_in(token).status_code == 303
    assert guesser.sign_in(token).status_code == 303
    assert guesser.sign_in(f"{secrets.token_hex(6)}.{secrets.token_hex(20)}").status_code == 429  # guessing: still not


def test_ten_failed_sign_ins_of_one_account_refuse_it_429(numpy_service):
    """Wrong secrets for one account, each from an address of its own: the right token is refused after ten."""
    token = numpy_service.issue("--staff", "locked-out")["locked-out"]
    account = token.split(".")[0]
    for i in range(10):
        wrong = Browser(numpy_service.url, f"127.0.0.{20 + i}").sign_in(f"{account}.{secrets.token_hex(20)}")
        assert wrong.status_code == 401
    assert Browser(numpy_service.url, "127.0.0.40").sign_in(token).status_code == 429
    assert Browser(numpy_service.url, "127.0.0.40").sign_in(numpy_service.tokens["ta"]).status_code == 303


def test_every_response_carries_the_security_headers(numpy_service, handed_in):
    done = handed_in["ada.py"]
    anyone = Browser(numpy_service.url)
    answers = [anyone.get("/signin"), anyone.get(f"/a/{NAME}"), anyone.get("/nowhere"),
               anyone.post("/signin", data={"csrf": "x"}),
               done.browser.get("/"), done.browser.get(f"/a/{NAME}"), done.browser.get(done.path),
               done.browser.get(done.path + "/feedback"), done.browser.get(f"/a/{NAME}/release.zip"),
               done.browser.get(f"/a/{NAME}/class"), done.browser.get(f"/a/{NAME}/attempts/nothing"),
               numpy_service.api_status(numpy_service.tokens["s2026001"], done.path.rsplit("/", 1)[1])]
    # the body guard's own refusal, before any route: read raw, as the server closes without reading the body
    refused = raw_request(numpy_service.server.port,
                          b"POST /signin HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
    status, *lines = refused.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    heads = [(status, {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)})]
    heads += [(f"{a.url} {a.status_code}", a.headers) for a in answers]
    assert {a.status_code for a in answers} >= {200, 303, 403, 404} and " 413 " in status
    for shown, headers in heads:
        csp = headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, shown
        assert headers.get("x-content-type-options") == "nosniff", shown


@pytest.mark.parametrize("elsewhere", [f"{HOSTILE}/x", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"])
def test_signing_in_never_goes_on_to_another_site(numpy_service, elsewhere):
    browser = Browser(numpy_service.url)
    form = Page(browser.get("/signin", params={"next": elsewhere}).text).form("/signin")
    assert form["next"] == "/"
    answer = browser.post("/signin", data={**form, "token": numpy_service.tokens["s2026007"], "next": elsewhere})
    assert (answer.status_code, answer.headers["location"]) == (303, "/")


def test_a_file_that_cannot_be_graded_is_refused_and_not_counted(numpy_service):
    student = numpy_service.signed_in("s2026008")
    unreadable = {"latin1.py": "x = 'caf\xe9'\n".encode("latin-1"), "binary.py": bytes(range(256)) * 4,
                  "broken.ipynb": b'{"cells": [', "empty-notebook.ipynb": b'{"cells": "none"}'}
    for filename, body in unreadable.items():
        answer = student.hand_in(NAME, filename, body)
        assert answer.status_code == 400, filename
        assert Page(answer.text).refusal().endswith("it was not counted as an attempt"), filename
        by_api = numpy_service.api_hand_in("s2026008", filename, body)
        assert by_api.status_code == 400 and by_api.json()["error"].endswith("not counted as an attempt"), filename
    assert attempts_of(numpy_service.store, "s2026008", NAME) == []
    assert Page(student.get(f"/a/{NAME}").text).by_id["attempts-left"].startswith("0 used, 20 left")


# ------------------------------------------------------------------ either database: the flow, and kill -9

@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> str:
    return request.getfixturevalue("postgres_db") if request.param == "postgresql" else str(tmp_path / "store")


def test_a_student_hands_in_and_staff_see_the_score(numpy_root, store, reference):
    service = Service(numpy_root, (NAME,), ROSTER, store).start()
    try:
        service.issue("--staff", "ta")
        link = urlsplit(service.links["s2026001"])
        browser = Browser(service.url)
        signed = browser.post("/signin", data=Page(browser.get(f"{link.path}?{link.query}").text).form("/signin"))
        assert (signed.status_code, signed.headers["location"]) == (303, f"/a/{NAME}")
        answer = browser.hand_in(NAME, "ada.py", sample("ada.py"))
        assert answer.status_code == 303
        full = f"{reference.max_score:g} / {reference.max_score:g}"
        assert browser.graded(answer.headers["location"]).by_id["score"] == full
        assert Page(service.signed_in("ta").get(f"/a/{NAME}/class").text).table()["s2026001"]["Counted score"] == full
        attempts, gradings = stored(store, NAME)
        assert list(attempts.values()) == [("s2026001", "graded")]
        assert list(gradings.values()) == [[reference.max_score]]
    finally:
        service.close()


def test_a_server_killed_while_grading_grades_every_accepted_attempt_once_after_a_restart(numpy_root, store,
                                                                                          reference):
    service = Service(numpy_root, (NAME,), ROSTER, store, jobs=1).start()
    try:
        service.issue()
        # one attempt per student: a student's later attempt has hand calculations with new numbers
        # (grade/written_policy.py), which the samples do not answer, so `qkv grade`'s score is that of a first
        plan = [(f"s202600{n}", ("ben.py", "ada.py")[n % 2]) for n in range(1, 9)]
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda job: service.api_hand_in(job[0], job[1], sample(job[1])), plan))
        assert [a.status_code for a in answers] == [202] * len(plan), [a.text for a in answers]
        accepted = {a.json()["attempt"]: file for a, (_, file) in zip(answers, plan)}
        wait_for(lambda: any(state == "graded" for _, state in stored(store, NAME)[0].values()), "first grading")
        service.server.kill9()
        at_kill = stored(store, NAME)
        service.server.start()  # on the same port and store, as a service manager restarts it
        wait_for(lambda: all(state == "graded" for _, state in stored(store, NAME)[0].values()), "grading of them all",
                 lambda: stored(store, NAME))
        attempts, gradings = stored(store, NAME)
        assert set(attempts) == set(accepted)
        assert {a: len(g) for a, g in gradings.items()} == dict.fromkeys(accepted, 1), f"at the kill: {at_kill}"
        assert {a: g[0] for a, g in gradings.items()} == {a: reference.scores[f] for a, f in accepted.items()}
    finally:
        service.close()


def test_a_page_with_nothing_to_show_yet_says_so_in_one_line(limits_service):
    """The item analysis of an assignment nobody handed in: the sentence `qkv stats` would print, not a 500."""
    answer = limits_service.signed_in("ta").get("/a/closed/stats")
    assert answer.status_code == 409 and "no graded submission to analyse" in Page(answer.text).text
    assert "Traceback" not in answer.text
