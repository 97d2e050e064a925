"""Code problems in `qkv serve`'s practice (/practice): a real server on a course of the run's whose course.yaml
practises the code problems of attention/softmax (softmax_rows, graded by the served attention-numpy's bundle),
students signed in with the tokens `qkv tokens` issued, forms sent as a browser without JavaScript sends them (the
page of a waiting try is fetched again until it is graded, as its refresh script or the student would).

A right function raises mastery; a classic mistake is named and held; the try goes through the sandbox with the
assignment's limits, so a function that loops ends as a failed try and holds no one else's up; a function that
looks for the bundle's expected outputs finds none; nothing of practice reaches the gradebook (no attempt, no
grading, the same grades export); another student's try is not found, as a made-up one.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import yaml

import pytest

from conftest import ROOT, wait_for
from practice_client import stored_variant
from serve_client import Browser, Page, Service, stored
from servers import fresh_database

pytestmark = pytest.mark.slow  # a course built, servers started, code run in the sandbox

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
ADA, BEN, CHO, DAN, EVE, FOX = (f"s202600{n}" for n in range(1, 7))
PRACTICE = {"topics": ["attention/softmax"], "kinds": ["implement"]}  # softmax-rows, of attention-numpy
AXIS_0 = "your softmax runs over axis 0"  # the start of the bank's misconception message

RIGHT = '''import numpy as np

def softmax_rows(S, mask=None):
    S = np.asarray(S, dtype=float)
    if mask is not None:
        S = np.where(np.asarray(mask, dtype=bool), S, -np.inf)
    top = S.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(S - top)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)
'''
OVER_AXIS_0 = RIGHT.replace("axis=-1", "axis=0")  # the classic mistake: the softmax down the first axis
LOOPS = '''def softmax_rows(S, mask=None):
    while True:
        pass
'''
LOOKS_FOR_THE_KEY = '''import os

def softmax_rows(S, mask=None):
    found = []
    for path in {paths!r}:
        try:
            with open(path, "rb") as handle:
                found.append(len(handle.read()))
        except OSError as err:
            found.append(type(err).__name__)
    raise RuntimeError("read: " + repr(found))
'''


@pytest.fixture(scope="module")
def code_root(served_numpy, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("practice-code") / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    config = yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))
    config["practice"] = PRACTICE
    (root / "course.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, code_root) -> Service:
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(code_root / f"store-{request.param}")
        service = Service(code_root, (NAME,), ROSTER, store).start()
        try:
            service.issue("--staff", "ta", "--instructor", "prof")
            yield service
        finally:
            service.close()


def new_variant(browser: Browser) -> str:
    csrf = Page(browser.get("/practice").text).form("/practice/next")["csrf"]
    answer = browser.post("/practice/next", data={"csrf": csrf, "topic": "attention"})
    assert answer.status_code == 303, answer.text[:500]
    return answer.headers["location"]


def hand_in(browser: Browser, path: str, code: str) -> None:
    form = Page(browser.get(path).text).form(path)
    answer = browser.post(path, data={**form, "code": code, "action": "answer"})
    assert (answer.status_code, answer.headers.get("location")) == (303, path), answer.text[:500]


def graded(browser: Browser, path: str) -> Page:
    """The try's page once its grading is stored, looked at as the page's script looks: at the held look its
    data-wait names (answered when the grading is stored, or after some 20 s still waiting)."""
    pages: list[Page] = []

    def done() -> bool:
        answer = browser.get(f"{path}/result")
        assert answer.status_code == 200, answer.text[:500]
        pages.append(Page(answer.text))
        return "waits for the sandbox" not in pages[-1].by_id["verdict"]

    wait_for(done, "practice try graded", lambda: pages[-1].text[:500])
    return pages[-1]


def variant_id(path: str) -> str:
    return path.rsplit("/", 1)[1]


def test_a_right_function_raises_mastery_and_counts_toward_no_grade(service):
    exported = service.signed_in("prof").get(f"/a/{NAME}/export/canvas")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    ada = service.signed_in(ADA)
    path = new_variant(ada)
    page = Page(ada.get(path).text)
    assert "softmax_rows(S, mask=None)" in page.by_id["question"] and "softmax_rows(" in page.by_id["example"]
    assert page.by_class["public-test"]  # the public tests' names
    hand_in(ada, path, RIGHT)
    seen = ada.get(path).text  # kept before the reply: the page says it waits, or already has its verdict
    waiting = Page(seen)
    if "waits for the sandbox" in waiting.by_id["verdict"]:  # a waiting page names its held look for the script
        assert f'data-wait="{path}/result"' in seen
    assert waiting.by_id["your-code"] == " ".join(RIGHT.split())  # (the page's text, its spaces run together)

    page = graded(ada, path)
    assert page.by_id["verdict"] == "100% of the points." and page.by_id["mastery"].endswith("20%")
    kept = stored_variant(service.store, variant_id(path), ADA)
    assert kept.problem == "softmax-rows" and kept.score == 1.0 and kept.misconceptions == ()
    assert Page(ada.get("/practice/progress").text).by_id["tries"].startswith("1 ")

    attempts, gradings = stored(service.store, NAME)
    assert not any(who == ADA for who, _ in attempts.values()) and not gradings  # no attempt, no grading
    assert service.signed_in("prof").get(f"/a/{NAME}/export/canvas").text == exported.text  # the grades unchanged
    assert Page(service.signed_in("ta").get(f"/a/{NAME}/class").text).table()[ADA]["Attempts"] == "0"
    again = ada.post(path, data={**Page(ada.get(path).text).form("/practice/next"), "code": OVER_AXIS_0,
                                 "action": "answer"})
    assert again.status_code == 303  # a second hand-in of a graded try changes nothing
    assert stored_variant(service.store, variant_id(path), ADA).score == 1.0


def test_a_classic_mistake_is_named_and_held(service):
    ben = service.signed_in(BEN)
    path = new_variant(ben)
    hand_in(ben, path, OVER_AXIS_0)
    page = graded(ben, path)
    assert any(m.startswith(AXIS_0) for m in page.by_class["misconception"])
    assert page.by_id["verdict"] != "100% of the points."
    kept = stored_variant(service.store, variant_id(path), BEN)
    assert kept.score < 1 and any(m.startswith(AXIS_0) for m in kept.misconceptions)
    assert AXIS_0 in Page(ben.get("/practice").text).by_id["held"]


def test_another_students_try_is_not_found_as_a_made_up_one(service):
    cho, dan = service.signed_in(CHO), service.signed_in(DAN)
    path = new_variant(cho)
    hand_in(cho, path, RIGHT)
    made_up = "/practice/v/AAAAAAAAAAAAAAAA"
    theirs, none = dan.get(path), dan.get(made_up)
    assert theirs.status_code == none.status_code == dan.get(f"{path}/result").status_code == 404
    assert Page(theirs.text).text == Page(none.text).text and "keepdims" not in theirs.text
    csrf = Page(dan.get("/practice").text).form("/practice/next")["csrf"]
    assert dan.post(path, data={"csrf": csrf, "code": LOOPS, "action": "answer"}).status_code == 404
    assert graded(cho, path).by_id["verdict"] == "100% of the points."  # hers, as she handed it in


def test_a_looping_function_fails_in_the_sandbox_and_holds_no_one_up(service, code_root):
    eve, fox = service.signed_in(EVE), service.signed_in(FOX)
    loops, right = new_variant(eve), new_variant(fox)
    hand_in(eve, loops, LOOPS)
    hand_in(fox, right, RIGHT)
    assert graded(fox, right).by_id["verdict"] == "100% of the points."
    page = graded(eve, loops)
    assert page.by_id["verdict"] == "0% of the points."
    assert stored_variant(service.store, variant_id(loops), EVE).score == 0.0

    bundle = code_root / "dist" / NAME / "autograder"
    paths = [str(bundle / "arrays.npz"), str(bundle / "assignment.json")]
    assert all(Path(p).is_file() for p in paths)
    peek = new_variant(eve)
    hand_in(eve, peek, LOOKS_FOR_THE_KEY.format(paths=paths))
    page = graded(eve, peek)
    said = " ".join(page.by_id["verdicts"].split())
    assert "read: [" in said and "Error" in said and not any(f"read: [{n}" in said for n in "123456789")
