"""Timed mock exams in `qkv serve` (/exams): a real server on a course of the run's whose course.yaml offers two mock
exams (one marked at the window's close, one `practice: true`), a roster whose `extra_time` column gives Cho +50%,
students signed in with the tokens `qkv tokens` issued, forms sent as a browser without JavaScript sends them; on
SQLite and on PostgreSQL. The server's clock is a file the test sets (tests/exam_client.py): no test sleeps.

A sitting starts within the window, once, and ends at the end stored at its start (more for extra time); an answer
is kept as it is given and refused after the end in one line; another device resumes the same paper; each student
answers their own numbers; until the window closes no route shows a score, a key, a solution or another student's
paper (whose id is the same 404 as a made-up one); staff see live progress, then the scores; a practice exam shows
its feedback as soon as the sitting is over; every POST needs the session's form token; a saved answer survives
kill -9. The browser's test is tests/serve/test_mock_exam_browser.py.
"""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import pytest

from autograder.bank.load import Bank
from autograder.classroom.roster import Roster, Student
from autograder.course.find import ExamSettings
from autograder.errors import QkvError
from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
from autograder.grade.gradebook.exams import ExamStore, Sitting
from autograder.exam.select import ExamSpec, draw_exam
from autograder.kinds import Problem
from autograder.practice.answers import judge, questions
from autograder.serve.exams import ExamRooms
from exam_client import EXAM, MINUTES, SEED, SETTINGS, Clock, at, exam_course, served_with_clock
from practice_client import right_answer, wrong_answer
from serve_client import Browser, Page, Service
from servers import fresh_database

pytestmark = pytest.mark.slow  # a course built, servers started

PRACTICE_EXAM = "mock-practice"
ADA, BEN, CHO, DAN, EVE, FAY, GUS, HAL, IDA = (f"s202600{n}" for n in range(1, 10))


@pytest.fixture(scope="module")
def course(served_numpy, tmp_path_factory) -> tuple[Path, Path]:
    return exam_course(served_numpy, tmp_path_factory.mktemp("mock-exam"),
                       extra={PRACTICE_EXAM: {**SETTINGS, "title": "Practice mock", "practice": True}})


@pytest.fixture(scope="module")
def clock(course) -> Clock:
    clock = Clock(course[0].parent / "clock")
    clock.set(at(-30))
    return clock


def start_service(course, store: str, clock: Clock) -> Service:
    root, roster = course
    return served_with_clock(Service, root, roster, store, clock).start()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, course, clock) -> Service:
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(course[0] / f"store-{request.param}")
        service = start_service(course, store, clock)
        try:
            service.issue("--staff", "ta")
            yield service
        finally:
            service.close()


def stored(store: str, exam: str, student: str) -> tuple[Sitting | None, dict[int, dict[str, str]]]:
    """The student's sitting and its saved answers, as the service stored them (not through the service)."""
    book = ExamStore(store if store.startswith("postgres") else Path(store) / ACCOUNTS_FILE)
    try:
        sitting = book.of(exam, student)
        return sitting, book.answers(sitting.id) if sitting else {}
    finally:
        book.close()


def csrf_of(browser: Browser) -> str:
    """The session's form token, from the form every signed-in page has (signing out)."""
    return Page(browser.get("/exams").text).form("/signout")["csrf"]


def start(browser: Browser, exam: str = EXAM) -> str:
    """Start (or go back to) the exam: the paper's path."""
    answer = browser.post(f"/exams/{exam}/start", data={"csrf": csrf_of(browser)})
    assert answer.status_code == 303, answer.text[:500]
    return answer.headers["location"]


def save(browser: Browser, path: str, item: int, fields: dict[str, str]):
    return browser.post(path, data={"csrf": csrf_of(browser), "item": str(item), **fields})


def problems(bank: Bank) -> list[Problem]:
    """The paper's problems, as `qkv exam` draws them for the exam's settings."""
    spec = ExamSpec(tuple(SETTINGS["topics"]), tuple(SETTINGS["kinds"]), SETTINGS["count"], SEED)
    return [item.problem for item in draw_exam(bank, spec).items]


def as_typed(problem, student: str, fields: dict[str, str]) -> dict[str, str]:
    """The form's fields as the store keeps them: by part label."""
    return {q.label: fields.get(f"part-{n}", "") for n, q in enumerate(questions(problem, SEED, student))}


def test_a_sitting_starts_once_in_the_window_and_ends_by_the_servers_clock(service, clock, bank: Bank):
    clock.set(at(-5))
    ada, cho = service.signed_in(ADA), service.signed_in(CHO)
    assert Page(ada.get("/exams").text).by_id.get(f"start-{EXAM}") is None  # not open yet
    early = ada.post(f"/exams/{EXAM}/start", data={"csrf": csrf_of(ada)})
    assert early.status_code == 409 and "opens at 2030-03-04 09:00:00 UTC" in Page(early.text).text
    assert stored(service.store, EXAM, ADA)[0] is None

    clock.set(at(5))
    path = start(ada)
    sitting, _ = stored(service.store, EXAM, ADA)
    assert sitting.started == at(5) and sitting.ends == at(5 + MINUTES)
    assert path == f"/exams/s/{sitting.id}" and start(ada) == path  # started once: the same paper again
    start(cho)
    assert stored(service.store, EXAM, CHO)[0].ends == at(5 + MINUTES * 1.5)  # the roster's +50%
    paper = Page(ada.get(path).text)
    assert paper.attrs["time-left"]["data-left"] == str(MINUTES * 60)

    drawn = problems(bank)
    fields = right_answer(drawn[0], SEED, ADA)
    assert save(ada, path, 1, fields).status_code == 303
    assert stored(service.store, EXAM, ADA)[1] == {1: as_typed(drawn[0], ADA, fields)}  # kept before the reply
    clock.set(at(5 + MINUTES - 1))
    assert Page(ada.get(path).text).attrs["time-left"]["data-left"] == "60"
    changed = wrong_answer(drawn[0], SEED, ADA)[0]
    assert save(ada, path, 1, changed).status_code == 303  # saved again, replacing the first
    assert stored(service.store, EXAM, ADA)[1] == {1: as_typed(drawn[0], ADA, changed)}

    clock.set(at(5 + MINUTES))  # the end, to the second
    late = save(ada, path, 2, right_answer(drawn[1], SEED, ADA))
    assert late.status_code == 409
    reason = Page(late.text).by_id.get("message") or Page(late.text).text
    assert "this exam ended at 2030-03-04 09:45:00 UTC (time was up): the answer was not saved" in reason
    assert stored(service.store, EXAM, ADA)[1] == {1: as_typed(drawn[0], ADA, changed)}
    cho_path = f"/exams/s/{stored(service.store, EXAM, CHO)[0].id}"
    assert save(cho, cho_path, 2, right_answer(drawn[1], SEED, CHO)).status_code == 303  # her extra time runs on

    ended = Page(ada.get(path).text)
    assert "ended" in ended.by_id and "time-left" not in ended.by_id and not ended.forms[1:]
    assert "score" not in ended.by_id and not ended.by_class.get("key") and not ended.by_class.get("solution")

    clock.set(at(4 * 60 + 1))  # the window has closed: nobody may start now
    dan = service.signed_in(DAN)
    closed = dan.post(f"/exams/{EXAM}/start", data={"csrf": csrf_of(dan)})
    assert closed.status_code == 409 and "closed at" in Page(closed.text).text


def test_each_student_answers_their_own_numbers_and_sees_marks_only_after_the_window(service, clock, bank: Bank):
    clock.set(at(10))
    ben, eve = service.signed_in(BEN), service.signed_in(EVE)
    theirs = {student: start(browser) for student, browser in ((BEN, ben), (EVE, eve))}
    drawn = problems(bank)
    right = {s: [right_answer(p, SEED, s) for p in drawn] for s in (BEN, EVE)}
    for n in (1, 2, 3):
        assert save(ben, theirs[BEN], n, right[BEN][n - 1]).status_code == 303
        assert save(eve, theirs[EVE], n, right[BEN][n - 1]).status_code == 303  # Ben's answers, not her numbers
    assert ben.post(theirs[BEN], data={"csrf": csrf_of(ben), "action": "hand-in"}).status_code == 303
    assert stored(service.store, EXAM, BEN)[0].handed_in == at(10)
    assert save(ben, theirs[BEN], 1, right[BEN][0]).status_code == 409  # handed in: nothing more

    clock.set(at(60))  # both sittings over, the window open: no marks, no key, no solution anywhere
    for browser, path in ((ben, theirs[BEN]), (eve, theirs[EVE])):
        page = Page(browser.get(path).text)
        assert "score" not in page.by_id and not page.by_class.get("key") and not page.by_class.get("solution")
        assert not page.by_class.get("verdicts")
    staff = service.signed_in("ta")
    progress = Page(staff.get(f"/exams/{EXAM}/class").text).table()
    assert progress[BEN]["State"] == "handed in" and progress[BEN]["Score"] == ""
    assert progress[BEN]["Items saved"] == "3 of 3"

    assert staff.get(f"/exams/{EXAM}/scores.csv").status_code == 409  # no scores before the window closes
    clock.set(at(4 * 60))  # the window closes: marks, keys and worked solutions
    ben_page, eve_page = Page(ben.get(theirs[BEN]).text), Page(eve.get(theirs[EVE]).text)
    total = sum(p.points for p in drawn)
    assert ben_page.by_id["score"] == f"Your score: {total:g} of {total:g} points."
    eve_score = sum(judge(p, SEED, as_typed(p, EVE, right[BEN][i]), EVE, blank_is_wrong=True).share * p.points
                    for i, p in enumerate(drawn))
    assert eve_score < total
    assert eve_page.by_id["score"] == f"Your score: {round(eve_score, 2):g} of {total:g} points."
    assert len(ben_page.by_class["key"]) == len(ben_page.by_class["solution"]) == 3
    progress = Page(staff.get(f"/exams/{EXAM}/class").text).table()
    assert progress[BEN]["Score"] == f"{total:g} of {total:g}"
    assert progress[EVE]["Score"] == f"{round(eve_score, 2):g} of {total:g}"

    export = staff.get(f"/exams/{EXAM}/scores.csv")
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(export.text))}
    assert rows[BEN]["total"] == f"{total:g}" and rows[EVE]["total"] == f"{eve_score:g}"
    assert ben.get(f"/exams/{EXAM}/scores.csv").status_code == 403
    items = Page(staff.get(f"/exams/{EXAM}/class").text)
    facility = {row[0]: row[4] for row in items.rows if len(row) == 8 and row[0] != "Problem"}
    assert list(facility) == [p.id for p in drawn]  # the item analysis of `qkv stats`, over every sitting
    for n, problem in enumerate(drawn, 1):
        earned = [float(row[f"{n}. {problem.id}"]) for row in rows.values()]
        assert facility[problem.id] == f"{sum(earned) / len(earned) / problem.points:.2f}"


def test_another_students_paper_is_not_found_as_a_made_up_one(service, clock, bank: Bank):
    clock.set(at(20))
    fay, gus = service.signed_in(FAY), service.signed_in(GUS)
    path = start(fay)
    drawn = problems(bank)
    save(fay, path, 1, right_answer(drawn[0], SEED, FAY))
    theirs, made_up = gus.get(path), gus.get("/exams/s/AAAAAAAAAAAAAAAA")
    assert theirs.status_code == made_up.status_code == 404
    assert Page(theirs.text).text == Page(made_up.text).text
    assert gus.post(path, data={"csrf": csrf_of(gus), "item": "1",
                                **right_answer(drawn[0], SEED, FAY)}).status_code == 404
    assert gus.post(path, data={"csrf": csrf_of(gus), "action": "hand-in"}).status_code == 404
    assert stored(service.store, EXAM, FAY)[0].handed_in is None
    assert service.signed_in("ta").get(path).status_code == 403  # staff sit no paper; they see the class
    assert gus.get(f"/exams/{EXAM}/class").status_code == 403
    anonymous = Browser(service.url).get(path)
    assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/signin")

    progress = Page(service.signed_in("ta").get(f"/exams/{EXAM}/class").text).table()
    assert progress[FAY]["State"] == "sitting" and progress[FAY]["Time left"] == f"{MINUTES} min 0 s"
    assert progress[FAY]["Items saved"] == "1 of 3" and progress[GUS]["State"] == "not started"


def test_another_device_resumes_the_paper_with_its_saved_answers(service, clock, bank: Bank):
    clock.set(at(30))
    one, other = service.signed_in(HAL), service.signed_in(HAL)
    path = start(one)
    drawn = problems(bank)
    fields = right_answer(drawn[2], SEED, HAL)
    save(one, path, 3, fields)
    clock.set(at(31))
    assert start(other) == path
    page = Page(other.get(path).text)
    assert page.attrs["time-left"]["data-left"] == str((MINUTES - 1) * 60)
    values = [f for action, f in page.forms if action == path and f.get("item") == "3"][0]
    assert {k: v for k, v in values.items() if k.startswith("part-")} == fields


def test_an_unreadable_answer_is_asked_again_and_not_kept_and_every_post_needs_the_token(service, clock,
                                                                                          bank: Bank):
    clock.set(at(40))
    ida = service.signed_in(IDA)
    path = start(ida)
    answer = save(ida, path, 1, {"part-0": "not a letter at all"})
    assert answer.status_code == 400 and "item 1:" in Page(answer.text).refusal()
    assert stored(service.store, EXAM, IDA)[1] == {}
    fields = right_answer(problems(bank)[0], SEED, IDA)
    for data in ({"item": "1", **fields}, {"item": "1", "csrf": "forged", **fields}):
        assert ida.post(path, data=data).status_code == 403
    assert ida.post(path, data={"csrf": csrf_of(ida), "item": "1", **fields},
                    headers={"origin": "https://evil.example"}).status_code == 403
    assert ida.post(path, data={"action": "hand-in"}).status_code == 403
    assert stored(service.store, EXAM, IDA) == (stored(service.store, EXAM, IDA)[0], {})
    assert stored(service.store, EXAM, IDA)[0].handed_in is None


def test_a_practice_exam_shows_its_feedback_as_soon_as_the_sitting_is_over(service, clock, bank: Bank):
    clock.set(at(50))
    ada = service.signed_in(ADA)
    path = start(ada, PRACTICE_EXAM)
    drawn = problems(bank)
    fields, misconception = wrong_answer(drawn[1], SEED, ADA)
    save(ada, path, 2, fields)
    assert "score" not in Page(ada.get(path).text).by_id  # still running
    assert ada.post(path, data={"csrf": csrf_of(ada), "action": "hand-in"}).status_code == 303
    page = Page(ada.get(path).text)
    assert page.by_id["score"].startswith("Your score: ") and misconception in page.by_class["misconception"]
    assert len(page.by_class["solution"]) == 3


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> str:
    return request.getfixturevalue("postgres_db") if request.param == "postgresql" else str(tmp_path / "store")


def test_a_saved_answer_survives_kill_9_of_the_server(course, clock, store, bank: Bank):
    clock.set(at(15))
    service = start_service(course, store, clock)
    try:
        service.issue()
        ada = service.signed_in(ADA)
        path = start(ada)
        fields = right_answer(problems(bank)[1], SEED, ADA)
        assert save(ada, path, 2, fields).status_code == 303
        service.server.kill9()
        service.server.start()
        again = service.signed_in(ADA)
        assert start(again) == path
        values = [f for action, f in Page(again.get(path).text).forms if action == path and f.get("item") == "2"][0]
        assert {k: v for k, v in values.items() if k.startswith("part-")} == fields
        assert stored(service.store, EXAM, ADA)[0].ends == at(15 + MINUTES)
    finally:
        service.close()


@pytest.mark.parametrize("value", ["lots", "-10", "1e9", "nan"])
def test_an_extra_time_that_is_no_percent_is_one_line_naming_the_roster_and_the_student(value, tmp_path,
                                                                                        bank: Bank):
    roster = Roster((Student(ADA, extra=(("extra_time", "50"),)), Student(BEN, extra=(("extra_time", value),))),
                    source="roster.csv")
    with pytest.raises(QkvError) as raised:
        ExamRooms.open({EXAM: ExamSettings.model_validate(SETTINGS)}, bank, roster, tmp_path / "accounts.sqlite")
    assert str(raised.value).startswith(f"roster.csv: {BEN}: extra_time: ") and "\n" not in str(raised.value)
    assert not (tmp_path / "accounts.sqlite").exists()  # refused before anything is made


def test_a_draw_the_bank_cannot_give_is_one_line_naming_the_exam(tmp_path, bank: Bank):
    for changes, fault in (({"count": 90}, "exams.mock-1: 90 problems asked for"),
                           ({"kinds": ["implement"]}, "exams.mock-1.kinds: implement run code")):
        with pytest.raises(QkvError) as raised:
            ExamRooms.open({EXAM: ExamSettings.model_validate({**SETTINGS, **changes})}, bank, None,
                           tmp_path / "accounts.sqlite")
        assert str(raised.value).startswith(f"course.yaml: {fault}")
