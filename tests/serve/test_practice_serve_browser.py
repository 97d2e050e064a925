"""Practice in `qkv serve` in a real browser: headless Debian Chromium, driven by Playwright, against a `qkv serve`
process the test starts on a course whose course.yaml offers practice (tests/practice_client.py).

A student signs in with their link, practises a topic, answers wrong and sees the misconception named and the worked
solution, is given next a problem that targets it, answers that right and sees mastery rise, on the problem's page
and on the progress page; a reload and a second browser context (another device) resume the same state. The
answers are worked out from each variant's seed, read from the store behind the service's back.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from autograder.bank.load import Bank
from autograder.practice.catalogue import catalogue
from conftest import ROOT
from practice_client import practice_course, right_answer, stored_variant, wrong_answer
from serve_client import Service

pytestmark = pytest.mark.slow  # a course, a server and a browser

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
ADA = "s2026001"


@pytest.fixture(scope="module")
def service(served_numpy, tmp_path_factory):
    root = practice_course(served_numpy, tmp_path_factory.mktemp("practice-browser"))
    service = Service(root, (NAME,), ROSTER, str(root / "store")).start()
    try:
        service.issue()
        yield service
    finally:
        service.close()


def path_of(page) -> str:
    return urlsplit(page.url).path


def signed_in(browser, service: Service):
    """A browser context of its own (another device) with Ada signed in from her link."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(service.links[ADA])
    with page.expect_navigation():
        page.click("button:has-text('Sign in')")
    return context, page


def answer(page, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        page.fill(f"input[name='{name}']", value)
    with page.expect_navigation():
        page.click("button:has-text('Check my answer')")


def test_a_student_practises_a_topic_and_a_reload_and_another_device_resume_it(service, chromium_browser,
                                                                              bank: Bank):
    context, page = signed_in(chromium_browser, service)
    page.goto(f"{service.url}/practice")
    with page.expect_navigation():
        page.click("button[aria-label='Practise masking']")
    first = stored_variant(service.store, path_of(page).rsplit("/", 1)[1], ADA)
    fields, misconception = wrong_answer(bank.problems[first.problem], first.seed)
    answer(page, fields)
    assert misconception in page.inner_text(".misconception")
    assert page.inner_text("#solution").strip()  # the worked solution of this variant

    with page.expect_navigation():
        page.click("#next")
    second = stored_variant(service.store, path_of(page).rsplit("/", 1)[1], ADA)
    detectors = {p.id for p in catalogue(bank.problems.values()) if misconception in p.detects} | {first.problem}
    assert second.problem in detectors and second.id != first.id
    assert page.inner_text("#why").startswith(f"chosen for a misconception you hold: {misconception}")
    answer(page, right_answer(bank.problems[second.problem], second.seed))
    assert page.inner_text("#mastery") == "Your mastery of this problem: 20%"

    page.goto(f"{service.url}/practice/progress")
    assert page.inner_text("#tries") == "2 tries so far."
    masking = page.inner_text("#topic-mastery tr:has-text('masking') td:nth-child(2)")
    assert masking != "0%"
    assert misconception in page.inner_text("#held") and "1/2 right answers since" in page.inner_text("#held")
    # (not the reviews due: a card answered wrong is due again a minute later, by the clock, not by the test)
    progress = [page.inner_text(part) for part in ("#tries", "#topic-mastery", "#held")]

    page.goto(f"{service.url}/practice")
    with page.expect_navigation():
        page.click("#need-most")
    waiting, question = path_of(page), page.inner_text("#question")
    page.reload()
    assert (path_of(page), page.inner_text("#question")) == (waiting, question)

    other, elsewhere = signed_in(chromium_browser, service)
    try:
        elsewhere.goto(f"{service.url}/practice")
        with elsewhere.expect_navigation():
            elsewhere.click("#resume a")
        assert (path_of(elsewhere), elsewhere.inner_text("#question")) == (waiting, question)
        elsewhere.goto(f"{service.url}/practice/progress")
        assert [elsewhere.inner_text(part) for part in ("#tries", "#topic-mastery", "#held")] == progress
    finally:
        other.close()
        context.close()
