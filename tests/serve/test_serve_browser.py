"""`qkv serve` in a real browser: headless Debian Chromium, driven by Playwright, against a `qkv serve` process the test
starts on a course of its own (attention-numpy, two attempts in all and two an hour).

A student opens the personal link `qkv tokens` wrote, signs in, hands in through the file input, watches the attempt
page fill in by itself, reads the feedback, spends the attempts and is refused in one sentence, signs out; the
instructor sees the class table, the student's page and the item analysis. axe-core checks the sign-in, assignment,
attempt and class pages, and a browser with JavaScript off signs in and hands in as well. The HTTP attacks, the limits
one by one and kill -9 are tests/serve/test_serve.py's.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.serve.pages import next_look_s
from autograder.serve.web import REFRESH_SCRIPT
from conftest import ROOT, load_bank_strict, wait_for
from served_course import NAME, ROSTER, class_sample, issue_tokens, make_course, serve_command
from servers import ServerProcess

pytestmark = pytest.mark.slow  # a build, a server and a browser

AXE = ROOT / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
DUE = dt.datetime(2999, 3, 15, 23, 59, tzinfo=dt.timezone.utc)
SHOWN_DUE = "2999-03-15 23:59:00 UTC"  # how the pages write DUE
ADA, BEN, CHO, DAN = "s2026001", "s2026002", "s2026003", "s2026004"  # Cho's roster row: a 48-hour extension
def _full_marks() -> str:
    most = resolve_assignment(find_manifest(NAME), load_bank_strict()).max_points
    return f"{most:g} / {most:g}"


FULL = _full_marks()  # ada.py, the answer key as a student wrote it: every point of the assignment
LIMIT_REFUSAL = "you have made all 2 attempts this assignment allows"
# A hand-in that takes a while to load: while the only grading slot is busy with it, the next attempt is sure to be
# still waiting when its page first shows, so the page can be seen filling in by itself.
SLOW_LOAD = "import time\ntime.sleep(12)\n"
GRADED_WITHIN_MS = 240_000  # a bound on waiting for a score on a loaded machine, not an expected time


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The course built, `qkv serve` running on it (one grading slot), and the tokens `qkv tokens` issued for it."""
    folder = tmp_path_factory.mktemp("serve-browser")
    # a load limit the slow hand-in stays well under, on a loaded machine too
    course = make_course(folder / "course", {"attempts": 2, "attempts_per_hour": 2}, DUE,
                         grading={"limits": {"load_seconds": 60}})
    store = folder / "store"
    server = ServerProcess(serve_command(course, store, ROSTER, "--jobs", "1"), log=folder / "serve.log")
    with server:
        tokens = issue_tokens(course, store, ROSTER, server.url, folder / "tokens.csv", "--instructor", "prof")
        yield server, tokens


@pytest.fixture(scope="module")
def axe() -> str:
    assert AXE.is_file(), f"axe-core is missing ({AXE}): run `make setup` (it installs axe-core into .cache/npm)"
    return AXE.read_text(encoding="utf-8")


@pytest.fixture
def context(chromium_browser):
    made = chromium_browser.new_context()
    yield made
    made.close()


def watched(page) -> list[str]:
    """The page's console errors as they come (a script or style the CSP refused, a failed load), each with its URL's
    path; not the icon the browser asks for by itself, which the service has none of."""
    errors: list[str] = []

    def console(message) -> None:
        where = urlsplit(message.location.get("url", "")).path
        if message.type == "error" and where != "/favicon.ico":
            errors.append(f"{message.text} ({where})")
    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def axe_serious(page, axe: str) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now. It is evaluated by the browser's
    debugging protocol, which the page's CSP (no script but the service's own) does not govern."""
    found = page.evaluate(axe + "\n;axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map("
                          "v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html)})))")
    return [v for v in found if v["impact"] in ("serious", "critical")]


def assert_accessible(page, axe: str) -> None:
    serious = axe_serious(page, axe)
    assert not serious, f"{path_of(page)}: {json.dumps(serious, indent=1)[:3000]}"


def path_of(page) -> str:
    return urlsplit(page.url).path


def hand_in(page, file: Path) -> int:
    """Choose the file in the form's file input and send it; the HTTP status of the page that answers."""
    page.set_input_files("#file", str(file))
    with page.expect_navigation() as answered:
        page.click("button:has-text('Hand in and grade')")
    return answered.value.status


def attempt_path(page) -> str:
    found = re.fullmatch(rf"/a/{NAME}/attempts/([A-Za-z0-9_-]+)", path_of(page))
    assert found, f"not an attempt page: {page.url}"
    return found.group(0)


def wait_for_score(page, errors: list[str]) -> str:
    """The score the attempt page shows once it has filled in by itself (nothing here reloads it)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_selector("#score", timeout=GRADED_WITHIN_MS)
    except Timeout:
        pytest.fail(f"the page did not fill in within {GRADED_WITHIN_MS / 1000:g} s; the browser said: {errors}")
    return page.inner_text("#score")


def reload_until_scored(page) -> str:
    """Without JavaScript: follow the pending page's reload link until the score shows."""
    deadline = time.monotonic() + GRADED_WITHIN_MS / 1000
    while page.query_selector("#score") is None:
        assert time.monotonic() < deadline, f"no score after {GRADED_WITHIN_MS / 1000:g} s"
        assert "Being graded" in page.inner_text("#status")
        time.sleep(1)
        with page.expect_navigation():
            page.click("#reload")
    return page.inner_text("#score")


def api_state(server: ServerProcess, token: str, attempt: str) -> str:
    answer = httpx.get(f"{server.url}/api/a/{NAME}/attempts/{attempt}", headers={"Authorization": f"Bearer {token}"},
                       timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["state"]


def api_hand_in(server: ServerProcess, token: str, filename: str, body: bytes, until: str) -> str:
    """Hand in through the API (`qkv_check.py --submit`'s route) and wait until the attempt leaves the state `until`
    (queued: taken up for grading; grading: graded); the attempt's id."""
    sent = httpx.post(f"{server.url}/api/a/{NAME}/attempts", params={"filename": filename}, content=body,
                      headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert sent.status_code == 202, sent.text
    attempt = sent.json()["attempt"]
    deadline = time.monotonic() + GRADED_WITHIN_MS / 1000
    while time.monotonic() < deadline:
        state = api_state(server, token, attempt)
        if state not in ("queued", until):
            return attempt
        time.sleep(0.3)  # each API request checks the token, a slow hash
    pytest.fail(f"attempt {attempt} stayed {until} for {GRADED_WITHIN_MS / 1000:g} s")


def occupy_the_grader(server: ServerProcess, token: str) -> None:
    """Hand in the slow file; once the only slot grades it, the next attempt waits."""
    attempt = api_hand_in(server, token, "slow.py", SLOW_LOAD.encode(), until="queued")
    state = api_state(server, token, attempt)
    assert state == "grading", f"the slow hand-in was {state} before the next one could wait"


def test_a_student_hands_in_sees_the_score_and_the_feedback_and_is_refused_past_the_limit(
        service, context, axe):
    server, tokens = service
    page = context.new_page()
    errors = watched(page)
    link = tokens[ADA]["link"]
    page.goto(link)
    assert path_of(page) == "/signin"
    assert page.input_value("#token") == tokens[ADA]["token"]  # the link fills the token in
    assert_accessible(page, axe)
    with page.expect_navigation():
        page.click("button:has-text('Sign in')")
    assert path_of(page) == f"/a/{NAME}"
    assert f"signed in as {ADA}" in page.inner_text("nav")
    assert page.inner_text("dt:has-text('Due') + dd") == SHOWN_DUE
    assert page.inner_text("#attempts-left").startswith("0 used, 2 left")
    assert_accessible(page, axe)

    occupy_the_grader(server, tokens[BEN]["token"])
    handing_in = time.monotonic()
    hand_in(page, class_sample("ada.py"))
    first = attempt_path(page)
    assert page.query_selector("#score") is None, "the attempt was graded before its page showed"
    # a page shown this soon after its upload looks again soon: half the time the attempt has waited, not every 3 s
    again = float(page.get_attribute("#result", "data-refresh"))
    assert 0.25 <= again <= next_look_s(time.monotonic() - handing_in) + 0.005, again
    assert_accessible(page, axe)  # a page that reloads itself on a timer would not be
    assert page.inner_text("#status") == "Being graded: the score appears here by itself when it is ready."
    page.evaluate("window.qkvSameDocument = true")
    assert wait_for_score(page, errors) == FULL
    assert path_of(page) == first and page.evaluate("window.qkvSameDocument === true")  # filled in, not reloaded
    assert_accessible(page, axe)

    with page.expect_navigation():
        page.click("#feedback")
    assert path_of(page) == f"{first}/feedback"
    assert page.inner_text("span.score") == FULL and f"Student {ADA}" in page.inner_text("main")
    assert "every test passed" in page.inner_text("#fix-first + *")

    page.goto(f"{server.url}/a/{NAME}")
    assert page.inner_text("#attempts-left").startswith("1 used, 1 left")
    hand_in(page, class_sample("ada.py"))
    second = attempt_path(page)
    # its hand calculations had new numbers (grade/written_policy.py), which the key of the first does not answer
    assert second != first and wait_for_score(page, errors).endswith(FULL[FULL.index(" /"):])
    page.goto(f"{server.url}/a/{NAME}")
    assert page.inner_text("#attempts-left").startswith("2 used, 0 left")
    listed = {urlsplit(a.get_attribute("href")).path for a in page.query_selector_all("table a")}
    assert listed == {first, second}
    assert hand_in(page, class_sample("ada.py")) == 429
    errors.remove(f"Failed to load resource: the server responded with a status of 429 (Too Many Requests) "
                  f"(/a/{NAME}/attempts)")  # the refusal's own status, which the browser logs
    assert path_of(page) == f"/a/{NAME}/attempts"  # refused: the assignment page again, with the reason
    assert page.inner_text("p.refusal[role=alert]") == LIMIT_REFUSAL
    assert page.inner_text("#attempts-left").startswith("2 used, 0 left")

    with page.expect_navigation():
        page.click("button:has-text('Sign out')")
    assert path_of(page) == "/signin"
    page.goto(f"{server.url}/a/{NAME}")
    assert path_of(page) == "/signin"  # the session ended
    assert not errors, errors


def test_the_instructor_sees_the_class_the_student_and_the_item_analysis(service, context, axe):
    server, tokens = service
    api_hand_in(server, tokens[DAN]["token"], "attention_numpy.py", (class_sample("ada.py")).read_bytes(),
                until="grading")
    page = context.new_page()
    errors = watched(page)
    page.goto(tokens["prof"]["link"])
    with page.expect_navigation():
        page.click("button:has-text('Sign in')")
    assert path_of(page) == f"/a/{NAME}/class"  # staff land on the class, not on a student's page
    row = page.query_selector(f"table#class tbody tr:has(a:text-is('{DAN}'))")
    assert row is not None, page.inner_text("table#class")
    cells = [c.inner_text() for c in row.query_selector_all("td")]
    assert cells[:5] == [DAN, "Dan Novak", "1", "0", FULL], cells
    assert_accessible(page, axe)

    with page.expect_navigation():
        row.query_selector("a").click()
    assert path_of(page) == f"/a/{NAME}/class/{DAN}"
    assert page.inner_text("h1").startswith(f"{DAN} (Dan Novak)")
    rows = page.query_selector_all("table tbody tr")
    assert len(rows) == 1 and FULL in rows[0].inner_text()

    page.goto(f"{server.url}/a/{NAME}/class")
    with page.expect_navigation():
        page.click("a:has-text('Item analysis')")
    assert path_of(page) == f"/a/{NAME}/stats"
    assert page.inner_text("h1").endswith("item analysis")
    assert not errors, errors


def test_without_javascript_a_student_signs_in_and_hands_in(service, chromium_browser):
    server, tokens = service
    context = chromium_browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(tokens[CHO]["link"])
        with page.expect_navigation():
            page.click("button:has-text('Sign in')")
        assert path_of(page) == f"/a/{NAME}"
        assert page.inner_text("dt:has-text('Due') + dd") == "2999-03-17 23:59:00 UTC (with your extension)"
        assert hand_in(page, class_sample("ada.py")) == 200  # after the redirect (303) to the attempt's page
        attempt_path(page)
        assert reload_until_scored(page) == FULL
    finally:
        context.close()


def test_the_accessibility_check_finds_a_timed_refresh(context, axe):
    """The axe checks above can fail: a page that reloads itself on a timer (as the attempt page did with a <meta>
    refresh) is a critical violation."""
    page = context.new_page()
    page.set_content('<!doctype html><html lang="en"><head><meta http-equiv="refresh" content="600"><title>t</title>'
                     '</head><body><main><h1>t</h1></main></body></html>')
    assert [v["id"] for v in axe_serious(page, axe)] == ["meta-refresh"]


# The attempt page as the service writes it, pending (with the data-refresh it says) or graded.
PENDING = ('<!doctype html><html lang="en"><head><title>t</title></head><body><main><div id="result" role="status" '
           'data-refresh="{}"><p id="status">Being graded</p></div><script src="/refresh.js"></script></main></body>'
           '</html>')
GRADED = ('<!doctype html><html lang="en"><head><title>t</title></head><body><main><div id="result" role="status">'
          '<p id="status">Score <strong id="score">7 / 7</strong></p></div></main></body></html>')
# what the script asks of the page's timers: each wait it sets, in ms, and each fetch
RECORDER = """window.qkvWaits = []; window.qkvLooks = 0;
const setTimer = window.setTimeout; const fetchPage = window.fetch;
window.setTimeout = (work, ms, ...rest) => { window.qkvWaits.push(ms); return setTimer(work, ms, ...rest); };
window.fetch = (...args) => { window.qkvLooks += 1; return fetchPage(...args); };"""


def test_the_script_looks_again_when_each_fresh_page_says(context):
    """refresh.js waits what the page says, then what each page it fetches says (the server's next_look_s: half the
    attempt's wait, so a quick grading shows in a quarter second), and fills the score in once grading has ended.
    Timers run on Playwright's clock, so the test waits on nothing but the browser's own work."""
    pages = iter([PENDING.format("60"), PENDING.format("0.25"), PENDING.format("2"), GRADED])
    page = context.new_page()
    page.clock.install(time=1_000_000)
    page.clock.pause_at(1_001_000)  # else the page's clock goes on with the wall's, and a slow machine fires timers
    page.add_init_script(RECORDER)
    page.route("http://qkv.test/refresh.js", lambda route: route.fulfill(
        body=REFRESH_SCRIPT, content_type="text/javascript; charset=utf-8"))
    page.route("http://qkv.test/a/attempt", lambda route: route.fulfill(body=next(pages), content_type="text/html"))
    page.goto("http://qkv.test/a/attempt")

    def waits(count: int) -> list[int]:
        wait_for(lambda: page.evaluate("window.qkvWaits.length") >= count, f"the script's wait number {count}",
                 seconds=60, every=0.01)
        return page.evaluate("window.qkvWaits")

    assert waits(1) == [60_000]
    page.clock.run_for(59_000)
    assert page.evaluate("window.qkvLooks") == 0  # not before the page said
    page.clock.run_for(1_500)
    assert waits(2) == [60_000, 250]  # the fresh page's 0.25 s, not the first page's 60
    page.clock.run_for(300)
    assert waits(3) == [60_000, 250, 2_000]
    page.clock.run_for(2_100)
    page.wait_for_selector("#score", timeout=60_000)
    assert page.inner_text("#score") == "7 / 7" and page.evaluate("window.qkvLooks") == 3


def test_the_script_looks_at_the_held_look_the_page_gives_at_once(context):
    """A page with a data-wait (the look the server holds until the result is stored, student.held_attempt_page)
    is looked at there, not at its own address, after the quarter-second floor whatever its data-refresh says (the
    server spaces held looks by holding them), and each answer's data-wait is the next look's."""
    held = ('<!doctype html><html lang="en"><head><title>t</title></head><body><main><div id="result" role="status" '
            'data-refresh="3.00" data-wait="{}"><p id="status">Being graded</p></div>'
            '<script src="/refresh.js"></script></main></body></html>')
    answers = iter([held.format("/a/attempt/result?second"), GRADED])
    page = context.new_page()
    page.clock.install(time=1_000_000)
    page.clock.pause_at(1_001_000)
    page.add_init_script(RECORDER + "\nwindow.qkvAsked = []; const counted = window.fetch;"
                         "\nwindow.fetch = (...args) => { window.qkvAsked.push(String(args[0])); return counted(...args); };")
    page.route("http://qkv.test/refresh.js", lambda route: route.fulfill(
        body=REFRESH_SCRIPT, content_type="text/javascript; charset=utf-8"))
    page.route("http://qkv.test/a/attempt", lambda route: route.fulfill(body=held.format("/a/attempt/result?first"),
                                                                         content_type="text/html"))
    page.route("http://qkv.test/a/attempt/result*", lambda route: route.fulfill(body=next(answers),
                                                                                content_type="text/html"))
    page.goto("http://qkv.test/a/attempt")
    wait_for(lambda: page.evaluate("window.qkvWaits.length") >= 1, "the script's first wait", seconds=60, every=0.01)
    assert page.evaluate("window.qkvWaits") == [250]  # not the page's 3 s
    page.clock.run_for(300)
    wait_for(lambda: page.evaluate("window.qkvWaits.length") >= 2, "the script's second wait", seconds=60, every=0.01)
    assert page.evaluate("window.qkvWaits") == [250, 250]
    page.clock.run_for(300)
    page.wait_for_selector("#score", timeout=60_000)
    assert page.inner_text("#score") == "7 / 7"
    assert page.evaluate("window.qkvAsked") == ["/a/attempt/result?first", "/a/attempt/result?second"]


def test_the_script_stops_looking_when_sent_elsewhere(context):
    """A session that ends while the page waits sends the next look to the sign-in page: the script stops there,
    instead of fetching two pages every quarter second for as long as the tab stays open."""
    page = context.new_page()
    page.clock.install(time=1_000_000)
    page.clock.pause_at(1_001_000)
    page.add_init_script(RECORDER)
    page.route("http://qkv.test/refresh.js", lambda route: route.fulfill(
        body=REFRESH_SCRIPT, content_type="text/javascript; charset=utf-8"))
    # the attempt page, then what the browser ends on once it has followed the service's 303 to /signin
    signin = ('<!doctype html><html lang="en"><head><title>Sign in</title></head><body><main><form method="post" '
              'action="/signin"></form></main></body></html>')
    pages = iter([PENDING.format("0.25")])
    page.route("http://qkv.test/a/attempt", lambda route: route.fulfill(body=next(pages, signin),
                                                                        content_type="text/html"))
    page.goto("http://qkv.test/a/attempt")
    wait_for(lambda: page.evaluate("window.qkvWaits.length") >= 1, "the script's first wait", seconds=60, every=0.01)
    page.clock.run_for(300)
    wait_for(lambda: page.evaluate("window.qkvLooks") == 1, "the look", seconds=60, every=0.01)
    page.clock.run_for(10_000)
    assert page.evaluate("window.qkvLooks") == 1 and page.evaluate("window.qkvWaits") == [250]
    assert page.inner_text("#status") == "Being graded"
