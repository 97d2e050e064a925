"""Practice in `qkv serve` (/practice): a real server on a course of the run's whose course.yaml has a `practice:`
section (masking and attention/softmax, numeric and multiple-choice problems), students signed in with the tokens
`qkv tokens` issued, forms sent as a browser without JavaScript sends them; on SQLite and on PostgreSQL.

A wrong answer names its misconception and shows the worked solution, the next problem targets it, every try is a
variant of its own kept with its seed, a right answer raises mastery; every POST needs the session's form token;
another student's variant is not found, as a made-up one; staff see the class; a try the server answered survives
kill -9. The right and wrong answers are worked out from the variant's seed, read from the store behind the
service's back (tests/practice_client.py). The browser's test is tests/serve/test_practice_serve_browser.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from autograder.bank.load import Bank
from autograder.practice.catalogue import catalogue
from conftest import ROOT
from practice_client import practice_course, right_answer, stored_variant, wrong_answer
from serve_client import Browser, Page, Service
from servers import fresh_database

pytestmark = pytest.mark.slow  # a course built, servers started

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
ADA, BEN, CHO, DAN, EVE = "s2026001", "s2026002", "s2026003", "s2026004", "s2026005"


@pytest.fixture(scope="module")
def practice_root(served_numpy, tmp_path_factory) -> Path:
    return practice_course(served_numpy, tmp_path_factory.mktemp("practice-serve"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, practice_root) -> Service:
    """The module's server, on a folder of SQLite files and again on a PostgreSQL database; each test practises as
    students of its own."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(practice_root / f"store-{request.param}")
        service = Service(practice_root, (NAME,), ROSTER, store).start()
        try:
            service.issue("--staff", "ta")
            yield service
        finally:
            service.close()


def csrf_of(browser: Browser) -> str:
    return Page(browser.get("/practice").text).form("/practice/next")["csrf"]


def new_variant(browser: Browser, topic: str = "") -> str:
    """Ask for the next problem (in `topic`, else what the student needs most): the variant's path."""
    answer = browser.post("/practice/next", data={"csrf": csrf_of(browser), "topic": topic})
    assert answer.status_code == 303, answer.text[:500]
    return answer.headers["location"]


def send(browser: Browser, path: str, fields: dict[str, str], action: str = "answer") -> Page:
    """Answer the variant at `path` with the form's fields; the page the answer leads to."""
    form = Page(browser.get(path).text).form(path)
    answer = browser.post(path, data={**form, **fields, "action": action})
    assert (answer.status_code, answer.headers.get("location")) == (303, path), answer.text[:500]
    return Page(browser.get(path).text)


def variant_id(path: str) -> str:
    return path.rsplit("/", 1)[1]


def test_a_wrong_answer_names_the_misconception_and_the_next_problem_targets_it(service, bank: Bank):
    ada = service.signed_in(ADA)
    first = new_variant(ada, "masking")
    shown = stored_variant(service.store, variant_id(first), ADA)
    assert shown.answered is None and shown.reason == "chosen for your weakest topic"
    problem = bank.problems[shown.problem]
    fields, misconception = wrong_answer(problem, shown.seed)
    judged = send(ada, first, fields)
    assert misconception in judged.by_class["misconception"]
    assert "solution" in judged.by_id and judged.by_id["key"]  # the worked solution of this variant, its answers
    kept = stored_variant(service.store, variant_id(first), ADA)
    assert kept.answered is not None and kept.score < 1 and misconception in kept.misconceptions
    assert kept.seed == shown.seed and kept.answers == {  # the answers typed, kept with the try
        q: fields[f"part-{n}"] for n, q in enumerate(kept.answers)}

    home = Page(ada.get("/practice").text)
    assert misconception in home.by_id["held"]
    second = new_variant(ada)
    target = stored_variant(service.store, variant_id(second), ADA)
    detectors = {p.id for p in catalogue(bank.problems.values()) if misconception in p.detects} | {problem.id}
    assert target.problem in detectors
    assert Page(ada.get(second).text).by_id["why"].startswith(f"chosen for a misconception you hold: {misconception}")
    assert target.id != shown.id

    right = send(ada, second, right_answer(bank.problems[target.problem], target.seed))
    assert right.by_id["verdict"] == "100% of the points." and right.by_id["mastery"].endswith("20%")
    assert "solution" not in right.by_id
    progress = Page(ada.get("/practice/progress").text)
    assert progress.by_id["tries"] == "2 tries so far."
    assert progress.table()["masking"]["Mastery"] != "0%"


def test_every_try_is_a_variant_of_its_own_on_a_seed_of_its_own(service, bank: Bank):
    ben = service.signed_in(BEN)
    seen = []
    for _ in range(4):
        path = new_variant(ben, "masking")
        send(ben, path, {}, action="skip")
        seen.append(stored_variant(service.store, variant_id(path), BEN))
    assert len({v.id for v in seen}) == 4 and len({v.seed for v in seen}) == 4
    assert all(v.answered is not None and v.score == 0.0 and v.answers is None for v in seen)
    assert Page(ben.get(f"/practice/v/{seen[0].id}").text).by_id["verdict"] == "Skipped: no points."


def test_an_answer_in_no_readable_form_is_asked_again_and_not_kept(service, bank: Bank):
    cho = service.signed_in(CHO)
    path = new_variant(cho, "masking")
    form = Page(cho.get(path).text).form(path)
    answer = cho.post(path, data={**form, **{k: "not an answer" for k in form if k.startswith("part-")},
                                  "action": "answer"})
    assert answer.status_code == 400 and Page(answer.text).refusal()
    assert stored_variant(service.store, variant_id(path), CHO).answered is None
    assert Page(cho.get("/practice").text).attrs["resume"]  # the variant to go on with


def test_every_post_needs_the_forms_token(service, bank: Bank):
    dan = service.signed_in(DAN)
    path = new_variant(dan, "masking")
    shown = stored_variant(service.store, variant_id(path), DAN)
    fields = right_answer(bank.problems[shown.problem], shown.seed)
    for data in ({**fields, "action": "answer"}, {**fields, "action": "answer", "csrf": "forged"}):
        assert dan.post(path, data=data).status_code == 403
        assert dan.post("/practice/next", data={k: v for k, v in data.items() if k == "csrf"}).status_code == 403
    cross = dan.post(path, data={**fields, "csrf": csrf_of(dan)}, headers={"origin": "https://evil.example"})
    assert cross.status_code == 403
    assert stored_variant(service.store, variant_id(path), DAN).answered is None
    assert Page(dan.get("/practice/progress").text).by_id["tries"] == "0 tries so far."


def test_another_students_variant_is_not_found_as_a_made_up_one(service, bank: Bank):
    eve, ada = service.signed_in(EVE), service.signed_in(ADA)
    path = new_variant(eve, "masking")
    shown = stored_variant(service.store, variant_id(path), EVE)
    made_up = "/practice/v/AAAAAAAAAAAAAAAA"
    theirs, none = ada.get(path), ada.get(made_up)
    assert theirs.status_code == none.status_code == 404
    assert Page(theirs.text).by_id.get("question") is None and Page(theirs.text).text == Page(none.text).text
    fields = right_answer(bank.problems[shown.problem], shown.seed)
    assert ada.post(path, data={**fields, "csrf": csrf_of(ada), "action": "answer"}).status_code == 404
    assert stored_variant(service.store, variant_id(path), EVE).answered is None
    assert service.signed_in("ta").get(path).status_code == 403  # staff practise nothing, and see the class instead
    anonymous = Browser(service.url).get(path)
    assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/signin")


def test_staff_see_the_class_mastery_and_the_misconceptions_most_held(service, bank: Bank):
    students = ("s2026006", "s2026007")
    for student in students:
        browser = service.signed_in(student)
        path = new_variant(browser, "masking")
        shown = stored_variant(service.store, variant_id(path), student)
        fields, misconception = wrong_answer(bank.problems[shown.problem], shown.seed)
        send(browser, path, fields)
    staff = service.signed_in("ta")
    page = Page(staff.get("/practice/class").text)
    held = {row[0]: int(row[1]) for row in page.rows if len(row) == 2 and row[1].isdigit()}
    assert held.get(misconception, 0) >= len(students)
    assert {row[0] for row in page.rows} >= set(students)  # each student's activity
    assert service.signed_in(students[0]).get("/practice/class").status_code == 403


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> str:
    return request.getfixturevalue("postgres_db") if request.param == "postgresql" else str(tmp_path / "store")


def test_a_try_answered_survives_kill_9_of_the_server(practice_root, store, bank: Bank):
    service = Service(practice_root, (NAME,), ROSTER, store).start()
    try:
        service.issue()
        ada = service.signed_in(ADA)
        path = new_variant(ada, "masking")
        shown = stored_variant(service.store, variant_id(path), ADA)
        fields, misconception = wrong_answer(bank.problems[shown.problem], shown.seed)
        form = Page(ada.get(path).text).form(path)
        assert ada.post(path, data={**form, **fields, "action": "answer"}).status_code == 303
        service.server.kill9()
        service.server.start()
        again = service.signed_in(ADA)
        assert misconception in Page(again.get(path).text).by_class["misconception"]
        assert misconception in Page(again.get("/practice/progress").text).by_id["held"]
    finally:
        service.close()
