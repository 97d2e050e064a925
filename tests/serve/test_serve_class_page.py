"""The service's pages as a new instructor and a student read them (issue 50, items 2 to 8), in Debian's Chromium:
the class page answers "who is missing, how is the class doing, what do they get wrong" by itself (the due date,
a late column, who has not handed in, the final scores' distribution, the mistakes most common now), the course's
home lists each assignment with its state, a student with an extension reads one last date, the assignment page
and the release's README tell how `python qkv_check.py --submit` hands in, an oversized upload is refused with its
real size, the instructor's view of a student is theirs, the feedback page links back, every time is in UTC, and the
item analysis of a `counts: best` class keeps the attempt that counts. Each page is checked at 1280 and 390 px
(nothing wider than the window) and by axe-core.

One `qkv serve` on a course of its own: attention-numpy due three days ago (the late policy's last date a month
later), the best attempt counting, uploads up to 256 KiB.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
import io
from pathlib import Path

import pytest

from autograder.classroom.mistakes import class_mistakes
from autograder.classroom.stats import bundle_info
from autograder.grade.gradebook import GRADEBOOK_FILE, Gradebook
from autograder.serve.pages import when
from conftest import ROOT
from serve_client import Page, Service
from served_course import NAME, ROSTER, class_sample, make_course

pytestmark = pytest.mark.slow  # a build, a server, gradings and a browser

AXE = ROOT / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
ADA, BEN, CHO, DAN, EVE = "s2026001", "s2026002", "s2026003", "s2026004", "s2026005"  # Cho: a 48-hour extension
# in this order; Ada's second file does not load (as Eve's): with `counts: best` her first attempt counts
HANDED_IN = {ADA: ("ada.py", "eve.py"), BEN: ("ben.py",), CHO: ("cho.py",), EVE: ("eve.py",)}
RAN = 3  # students whose counted attempt ran: Ada (her first), Ben and Cho
WIDTHS = (1280, 390)
UPLOAD_KB = 256


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The course served, its tokens issued, and the hand-ins of HANDED_IN graded."""
    folder = tmp_path_factory.mktemp("class-page")
    due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(days=3)
    course = make_course(folder / "course", {"counts": "best", "attempts": 5, "attempts_per_hour": 5,
                                             "upload_kb": UPLOAD_KB}, due, last_days=30)
    service = Service(course, (NAME,), ROSTER, str(folder / "store")).start()
    try:
        service.issue("--staff", "ta", "--instructor", "prof")
        for student, files in HANDED_IN.items():
            for file in files:
                sent = service.api_hand_in(student, "attention_numpy.py", (class_sample(file)).read_bytes())
                assert sent.status_code == 202, sent.text
                service.api_graded(student, sent.json()["attempt"])
        yield service
    finally:
        service.close()


@pytest.fixture(scope="module")
def axe() -> str:
    assert AXE.is_file(), f"axe-core is missing ({AXE}): run `make setup` (it installs axe-core into .cache/npm)"
    return AXE.read_text(encoding="utf-8")


def signed_in_page(chromium_browser, served: Service, person: str, width: int = 1280):
    context = chromium_browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(served.links[person])
    with page.expect_navigation():
        page.click("button:has-text('Sign in')")
    return context, page


def looks_finished(page, axe: str, width: int) -> None:
    """Nothing on the page is wider than the window (a table scrolls in its own box), and axe-core finds no
    serious or critical violation."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{page.url} overflows at {width} px"
    found = page.evaluate(axe + "\n;axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map("
                          "v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html)})))")
    serious = [v for v in found if v["impact"] in ("serious", "critical")]
    assert not serious, f"{page.url} at {width} px: {serious}"


def book_of(served: Service) -> Gradebook:
    return Gradebook(Path(served.store) / NAME / GRADEBOOK_FILE, read_only=True)


# ------------------------------------------------------------------ item 7: the class page and the course home

@pytest.mark.parametrize("width", WIDTHS)
def test_the_class_page_shows_who_is_missing_how_the_class_does_and_what_it_gets_wrong(served, chromium_browser,
                                                                                        axe, width):
    context, page = signed_in_page(chromium_browser, served, "prof", width)
    try:
        assert page.url.endswith(f"/a/{NAME}/class")
        policy = served_assignment_of(served).policy
        assert page.inner_text("#dates dt:has-text('Due') + dd") == when(policy.due)
        missing = [a.inner_text() for a in page.query_selector_all("#missing li a")]
        roster = [line.split(",")[0] for line in ROSTER.read_text().splitlines()[1:]]
        assert missing == [s for s in roster if s not in HANDED_IN]
        assert page.inner_text("#summary").startswith(f"{len(HANDED_IN)} of {len(roster)} student(s) handed in; "
                                                      f"{len(roster) - len(HANDED_IN)} not yet")
        bands = [li.inner_text().split() for li in page.query_selector_all("#distribution li")]
        assert sum(int(b[-1]) for b in bands) == len(HANDED_IN)  # each student with a score in one band
        row = page.query_selector(f"table#class tbody tr:has(a:text-is('{BEN}'))")
        header = [th.inner_text() for th in page.query_selector_all("table#class thead th")]
        cells = dict(zip(header, (td.inner_text() for td in row.query_selector_all("td"))))
        assert cells["Late penalty"].startswith("-")  # handed in three days late
        assert float(cells["Final"]) < float(cells["Counted score"].split(" / ")[0])
        cho = page.query_selector(f"table#class tbody tr:has(a:text-is('{CHO}'))")
        assert when(policy.due + dt.timedelta(hours=48)) in cho.inner_text()  # the extension's date
        with book_of(served) as book:
            info = bundle_info(served_assignment_of(served).bundle)
            expected = class_mistakes(book, info[3], info[0])
        shown = [li.inner_text() for li in page.query_selector_all("#mistakes li")]
        assert expected and len(shown) == min(5, len(expected))
        assert shown[0].startswith(f"{expected[0].students} student(s) ({expected[0].problem}): {expected[0].message}")
        # item 8: the page says why a student graded by `qkv grade` from an LMS download is not here
        assert "qkv grade" in page.inner_text("#two-gradebooks")
        looks_finished(page, axe, width)
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_course_home_lists_each_assignment_with_its_state(served, chromium_browser, axe, width):
    context, page = signed_in_page(chromium_browser, served, "prof", width)
    try:
        page.goto(f"{served.url}/")
        cells = [td.inner_text() for td in page.query_selector_all("table#assignments tbody tr td")]
        policy = served_assignment_of(served).policy
        assert cells[1:6] == [when(policy.due), when(policy.last), "open, late", f"{len(HANDED_IN)} of 9", "0"]
        looks_finished(page, axe, width)
    finally:
        context.close()


# ------------------------------------------------------------------ item 2 and 4: what a student reads

@pytest.mark.parametrize("width", WIDTHS)
def test_a_student_with_an_extension_reads_one_last_date_and_how_to_hand_in_from_a_terminal(served, chromium_browser,
                                                                                            axe, width):
    context, page = signed_in_page(chromium_browser, served, CHO, width)
    try:
        assert page.url.endswith(f"/a/{NAME}")
        policy = served_assignment_of(served).policy
        text = page.inner_text("main")
        own_last = policy.last + dt.timedelta(hours=48)
        assert page.inner_text("dt:has-text('Last date to hand in') + dd") == when(own_last)
        dates = set(re.findall(r"\d{4}-\d{2}-\d{2}", text.split("Your attempts")[0]))
        assert dates == {when(policy.due + dt.timedelta(hours=48))[:10], when(own_last)[:10]}, text
        page.click("#from-terminal summary")
        assert "python qkv_check.py --submit attention_numpy.py" in page.inner_text("#from-terminal")
        assert "qkv_token.txt" in page.inner_text("#from-terminal")
        looks_finished(page, axe, width)
    finally:
        context.close()


def test_the_release_readme_tells_how_to_hand_in_with_qkv_check(served):
    browser = served.signed_in(BEN)
    release = browser.get(f"/a/{NAME}/release.zip")
    with zipfile.ZipFile(io.BytesIO(release.content)) as archive:
        readme = archive.read(f"{NAME}/README.md").decode("utf-8")
    assert "python qkv_check.py --submit attention_numpy.py" in readme
    assert "`qkv_token.txt` in this folder" in " ".join(readme.split())


# ------------------------------------------------------------------ item 5: an oversized upload

def test_an_oversized_upload_is_refused_with_its_real_size_and_the_real_limit(served):
    body = b"#" * 300_002
    expected = f"the file is 300,002 bytes; the most this assignment takes is {UPLOAD_KB * 1024:,}"
    refused = served.signed_in(DAN).hand_in(NAME, "attention_numpy.py", body)
    assert (refused.status_code, Page(refused.text).refusal()) == (413, expected)
    by_api = served.api_hand_in(DAN, "attention_numpy.py", body)
    assert (by_api.status_code, by_api.json()["error"]) == (413, expected)


# ------------------------------------------------------------------ item 6: the staff's and the feedback's words

def test_the_instructors_view_of_a_student_is_theirs_and_in_utc(served, chromium_browser, axe):
    context, page = signed_in_page(chromium_browser, served, "prof")
    try:
        page.goto(f"{served.url}/a/{NAME}/class/{ADA}")
        assert [h.inner_text() for h in page.query_selector_all("h2")] == [f"{ADA}'s attempts"]
        times = [a.inner_text() for a in page.query_selector_all("table a")]
        assert len(times) == 2 and all(t.endswith(" UTC") for t in times)
        assert page.inner_text("main p").startswith("Due ") and "UTC" in page.inner_text("main p")
        looks_finished(page, axe, 1280)
    finally:
        context.close()


def test_the_feedback_page_links_back_to_its_attempt(served, chromium_browser):
    context, page = signed_in_page(chromium_browser, served, BEN)
    try:
        with page.expect_navigation():
            page.click("table a")
        attempt = page.url
        with page.expect_navigation():
            page.click("#feedback")
        with page.expect_navigation():
            page.click("nav a:has-text('Back to the attempt')")
        assert page.url == attempt
    finally:
        context.close()


def test_qkv_serve_prints_the_real_gradebook_path(served):
    said = served.server.log.read_text(encoding="utf-8")
    assert f"(gradebook: {Path(served.store) / NAME / GRADEBOOK_FILE})" in said
    assert "/NAME/" not in said


# ------------------------------------------------------------------ item 3: the item analysis of `counts: best`

def test_the_item_analysis_of_counts_best_keeps_each_counted_attempt_and_warns_nothing(served, chromium_browser):
    context, page = signed_in_page(chromium_browser, served, "prof")
    try:
        page.goto(f"{served.url}/a/{NAME}/stats")
        assert page.inner_text("h1").endswith("item analysis")
        # the latest attempts alone would leave Ada out as well (her latest did not run)
        assert page.inner_text("#summary").startswith(f"{RAN} students analysed (1 student whose file")
    finally:
        context.close()
    assert "Warning" not in served.server.log.read_text(encoding="utf-8")


def served_assignment_of(served: Service):
    from autograder.serve.course import served_assignment

    return served_assignment(NAME, served.root / "dist" / NAME)
