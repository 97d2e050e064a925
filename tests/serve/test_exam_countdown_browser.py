"""The mock exam paper's countdown (templates/countdown.js) in a real browser: headless Debian Chromium, driven by
Playwright, against a `qkv serve` process whose clock the test sets (tests/exam_client.py), and the browser's own
timers moved by Playwright's clock instead of waited for.

Cho (+50% time: 60 minutes) starts the exam: the countdown shows her 60 minutes from the server's figure, and the
status region screen readers hear stays quiet until a minute mark; ten minutes on it counts 50 minutes and says
so once. Her time runs out by the server's clock, and when the countdown reaches zero the page says the exam has
ended and loads the paper again, which shows the ended state the server decided. The page's script is a file of
the service's own, as its Content-Security-Policy asks; the page without it still says the time left.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exam_client import MINUTES, Clock, at, exam_course, served_with_clock
from serve_client import Service

pytestmark = pytest.mark.slow  # a course, a server and a browser

CHO = "s2026003"


@pytest.fixture(scope="module")
def service(served_numpy, tmp_path_factory):
    root, roster = exam_course(served_numpy, tmp_path_factory.mktemp("exam-countdown"))
    clock = Clock(root.parent / "clock")
    clock.set(at(5))
    service = served_with_clock(Service, root, roster, str(root / "store-countdown"), clock).start()
    try:
        service.issue()
        yield service, clock
    finally:
        service.close()


def test_the_countdown_counts_from_the_servers_figure_and_at_zero_shows_the_ended_paper(service, chromium_browser):
    service, clock = service
    context = chromium_browser.new_context()
    try:
        page = context.new_page()
        page.clock.install()
        page.goto(service.links[CHO])
        with page.expect_navigation():
            page.click("button:has-text('Sign in')")
        page.goto(f"{service.url}/exams")
        with page.expect_navigation():
            page.click("#start-mock-1")
        paper = page.url
        scripts = page.locator("script").evaluate_all("found => found.map(s => [s.src, s.textContent])")
        assert scripts == [[f"{service.url}/countdown.js", ""]]  # no inline script: the CSP allows none
        assert "script-src 'self'" in page.request.get(paper).headers["content-security-policy"]

        countdown = page.locator("#countdown")
        expect(countdown).to_be_visible()
        expect(page.locator("#countdown-clock")).to_have_text(re.compile(rf"^({MINUTES * 3 // 2}|{MINUTES * 3 // 2 - 1}) min \d+ s$"))
        said = page.locator("#countdown-said")
        assert said.get_attribute("aria-live") == "polite"
        expect(said).to_have_text("")  # not every second: nothing is said before a minute mark

        page.clock.fast_forward("10:00")
        expect(page.locator("#countdown-clock")).to_have_text(re.compile(r"^(50|49) min \d+ s$"))
        expect(said).to_have_text("50 minutes left.")

        clock.set(at(5 + MINUTES * 3 // 2))  # her time is up by the server's clock
        page.clock.fast_forward("50:00")
        expect(said).to_have_text("The exam has ended: the page reloads to show your saved answers.")
        expect(page.locator("#countdown-clock")).to_have_text("0 min 0 s")
        with page.expect_navigation():
            page.clock.fast_forward("00:05")
        assert page.url == paper
        expect(page.locator("#ended")).to_contain_text("(time was up)")
        assert page.locator("#countdown, input[name^='part-']").count() == 0
    finally:
        context.close()


def test_without_javascript_the_paper_still_says_the_time_left(service, chromium_browser):
    service, clock = service
    clock.set(at(5))
    context = chromium_browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(service.links["s2026004"])
        with page.expect_navigation():
            page.click("button:has-text('Sign in')")
        page.goto(f"{service.url}/exams")
        with page.expect_navigation():
            page.click("#start-mock-1")
        assert page.inner_text("#time-left").startswith(f"Time left: {MINUTES} min 0 s")
        assert not page.locator("#countdown").is_visible()  # hidden until the script runs
    finally:
        context.close()
