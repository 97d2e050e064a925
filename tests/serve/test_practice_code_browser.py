"""A code problem practised in `qkv serve` in a real browser: headless Debian Chromium, driven by Playwright, against
a `qkv serve` process on a course whose course.yaml practises attention/softmax's code problem (softmax_rows).

Ada asks for a problem, sees its signature and example, writes a function that runs the softmax down the first axis
into the box and runs it: the page waits for the sandbox and fills in by itself (templates/refresh.js, through the
held look), naming the misconception, with no reload of hers; on the next problem in the topic her right function
earns every point.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from serve_client import Service
from test_practice_code import AXIS_0, NAME, OVER_AXIS_0, RIGHT, ROSTER, code_root  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # a course, a server, a browser and the sandbox

ADA = "s2026001"


@pytest.fixture(scope="module")
def service(code_root):  # noqa: F811 (the fixture imported above)
    service = Service(code_root, (NAME,), ROSTER, str(code_root / "store-browser")).start()
    try:
        service.issue()
        yield service
    finally:
        service.close()


def run(page, code: str) -> None:
    page.fill("#code", code)
    with page.expect_navigation():
        page.click("#run")


def test_a_try_fills_in_by_itself_with_the_mistake_named(service, chromium_browser):
    context = chromium_browser.new_context()
    try:
        page = context.new_page()
        page.goto(service.links[ADA])
        with page.expect_navigation():
            page.click("button:has-text('Sign in')")
        page.goto(f"{service.url}/practice")
        with page.expect_navigation():
            page.click("#need-most")
        expect(page.locator("#question")).to_contain_text("softmax_rows(S, mask=None)")
        run(page, OVER_AXIS_0)
        loaded = page.url
        expect(page.locator("#result .misconception").first).to_contain_text(AXIS_0, timeout=300_000)
        assert page.url == loaded  # filled in by the page's script, not reloaded by hand
        with page.expect_navigation():
            page.click("#next-in-topic")
        run(page, RIGHT)
        expect(page.locator("#verdict")).to_have_text("100% of the points.", timeout=300_000)
    finally:
        context.close()
