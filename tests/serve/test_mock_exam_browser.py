"""A timed mock exam in `qkv serve` in a real browser: headless Debian Chromium, driven by Playwright, against a
`qkv serve` process the test starts with a clock it sets (tests/exam_client.py), on a course whose course.yaml offers
the exam and whose roster gives Cho +50% time.

Cho starts the exam and sees her time (60 minutes for the exam's 40), answers two items and closes the page in the
middle of the exam; she comes back on another browser context (another device), finds her paper with both answers,
types a third, and runs out of time before she saves it: the server refuses it in one line, and the paper, ended
by the server's clock, holds every answer she saved and no score, key or solution; when the window closes her
score, the keys and the worked solutions appear. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import contextlib

import pytest

from autograder.bank.load import Bank
from autograder.exam.select import ExamSpec, draw_exam
from exam_client import MINUTES, SEED, SETTINGS, Clock, at, exam_course, served_with_clock
from practice_client import right_answer
from serve_client import Service
from servers import fresh_database

pytestmark = pytest.mark.slow  # a course, a server and a browser

CHO = "s2026003"


@pytest.fixture(scope="module")
def course(served_numpy, tmp_path_factory):
    return exam_course(served_numpy, tmp_path_factory.mktemp("mock-exam-browser"))


@pytest.fixture(params=["sqlite", "postgresql"])
def service(request, course):
    root, roster = course
    clock = Clock(root.parent / f"clock-{request.param}")
    clock.set(at(5))
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(root / f"store-browser-{request.param}")
        service = served_with_clock(Service, root, roster, store, clock).start()
        try:
            service.issue()
            yield service, clock
        finally:
            service.close()


def signed_in(browser, service: Service):
    """A browser context of its own (a device) with Cho signed in from her link."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(service.links[CHO])
    with page.expect_navigation():
        page.click("button:has-text('Sign in')")
    return context, page


def fill(page, item: int, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        page.fill(f"#item-{item} input[name='{name}']", value)


def save(page, item: int) -> None:
    with page.expect_navigation():
        page.click(f"#save-{item}")


def test_a_student_with_extra_time_leaves_comes_back_and_runs_out_of_time(service, chromium_browser, bank: Bank):
    service, clock = service
    spec = ExamSpec(tuple(SETTINGS["topics"]), tuple(SETTINGS["kinds"]), SETTINGS["count"], SEED)
    drawn = [item.problem for item in draw_exam(bank, spec).items]
    answers = [right_answer(problem, SEED, CHO) for problem in drawn]

    context, page = signed_in(chromium_browser, service)
    page.goto(f"{service.url}/exams")
    with page.expect_navigation():
        page.click("#start-mock-1")
    paper = page.url
    assert page.inner_text("#time-left").startswith(f"Time left: {MINUTES * 3 // 2} min 0 s")
    for item in (1, 2):
        fill(page, item, answers[item - 1])
        save(page, item)
    page.close()  # the laptop closed mid-exam
    context.close()

    clock.set(at(5 + MINUTES))  # past the exam's 40 minutes, within her 60
    context, page = signed_in(chromium_browser, service)
    try:
        page.goto(f"{service.url}/exams")
        with page.expect_navigation():
            page.click("#paper-mock-1")
        assert page.url == paper
        assert page.inner_text("#time-left").startswith(f"Time left: {MINUTES // 2} min 0 s")
        for item in (1, 2):
            for name, value in answers[item - 1].items():
                assert page.input_value(f"#item-{item} input[name='{name}']") == value
        fill(page, 3, answers[2])

        clock.set(at(5 + MINUTES * 3 // 2))  # her time is up, by the server's clock, while the page is open
        with page.expect_navigation():
            page.click("#save-3")
        assert "time was up): the answer was not saved" in page.inner_text("main")

        page.goto(paper)  # ended server-side, with every answer she saved
        assert "(time was up)" in page.inner_text("#ended")
        assert page.locator("input[name^='part-']").count() == 0
        shown = page.locator("#item-1 .answer, #item-2 .answer").all_inner_texts()
        assert shown == [value for item in (0, 1) for value in answers[item].values()]
        assert page.locator("#item-3 .answer").all_inner_texts() == ["(blank)"] * len(answers[2])
        assert page.locator("#score, .key, .solution").count() == 0  # no feedback before the window closes

        clock.set(at(4 * 60))  # the window closes
        page.reload()
        earned = drawn[0].points + drawn[1].points
        total = sum(problem.points for problem in drawn)
        assert page.inner_text("#score") == f"Your score: {earned:g} of {total:g} points."
        assert page.locator(".key").count() == page.locator(".solution").count() == len(drawn)
    finally:
        context.close()
