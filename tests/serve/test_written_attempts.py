"""The written-answer policy in the real service (grade/written_policy.py): a student who knows nothing hands in 20
times, changing only written answers by elimination from what each attempt's pages show, and ends no better than one
blind attempt; a hand calculation gets new numbers on every attempt, shown on the assignment page and graded on them.
On SQLite and on PostgreSQL, with attention-numpy under the manifest's default rule (`hidden`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

from autograder.bundle import GradingBundle
from autograder.exam.markup import readable_html
from autograder.grade.gradebook import GRADEBOOK_FILE
from autograder.grade.gradebook.database import is_postgres, open_postgres, open_sqlite, schema_name
from autograder.grade.written_policy import WrittenRule, attempt_seed, fresh_numbers
from autograder.kinds import choices as ch
from autograder.kinds import kind_of
from autograder.serve.course import served_assignment
from qkv_runtime.judge import letter_of
from serve_client import Browser, Page, Service
from served_course import NAME, ROSTER, make_course
from servers import fresh_database

pytestmark = pytest.mark.slow  # a course built, a server started, 20 files graded in sandboxes

ATTEMPTS = 20
FARMER, CALCULATOR = "s2026001", "s2026002"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """attention-numpy due in 30 days, 20 attempts (as many in an hour), the manifest's own written rule."""
    due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=30)
    return make_course(tmp_path_factory.mktemp("written-attempts") / "course",
                       {"attempts": ATTEMPTS, "attempts_per_hour": ATTEMPTS}, due, written_attempts=None)


@pytest.fixture(scope="module")
def bundle(course) -> GradingBundle:
    return served_assignment(NAME, course / "dist" / NAME).bundle


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, course) -> Service:
    with contextlib.ExitStack() as stack:
        store = (stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
                 if request.param == "postgresql" else str(course / f"store-{request.param}"))
        served = Service(course, (NAME,), ROSTER, store).start()
        try:
            served.issue()
            yield served
        finally:
            served.close()


# ------------------------------------------------------------------ what a student who knows nothing types


@dataclass(frozen=True)
class Candidate:
    """One answer of a student who knows nothing: a verdict, the k-th choice shown, a constant number and shape."""

    verdict: Optional[bool]
    k: int
    number: float = 1.0
    shape: str = "(1, 1)"

    def says(self, problem) -> Optional[bool]:
        return self.verdict

    def letter(self, variant, question: str, choices: dict[str, str]) -> str:
        order = ch.order_in(variant, question, list(choices))
        return letter_of(order, order[self.k % len(order)])


def candidates(bundle: GradingBundle, problem, student: str) -> list[Any]:
    """Every different answer a student can type to the item by trying verdicts and choices, blind first."""
    kind = kind_of(problem)
    variant = kind.variant(problem, bundle.seed, bundle.variants, student)
    sets = kind.choice_sets(problem)
    verdicts = [True, False] if kind.truth(problem) is not None else [None]
    typed: dict[str, Any] = {}
    for verdict in verdicts:
        for k in range(len(sets[0][1]) if sets else 1):
            answer = kind.guessed(problem, variant, Candidate(verdict, k))
            typed.setdefault(repr(answer), answer)
    return list(typed.values())


def graded_written(store: str, attempt: str) -> float:
    """The written points the attempt's grading earned, read from the gradebook itself (not through a page)."""
    db = (open_postgres(store, schema_name(NAME)) if is_postgres(store)
          else open_sqlite(Path(store) / NAME / GRADEBOOK_FILE, read_only=True))
    try:
        text = db.execute("SELECT result FROM gradings WHERE attempt = ? ORDER BY id DESC", (attempt,)).fetchone()[0]
    finally:
        db.close()
    return sum(p["score"] for p in json.loads(text)["problems"] if p["kind"] != "implement")


def hand_in(browser: Browser, answers: dict[str, Any]) -> tuple[str, Page]:
    """Hand in a file of written answers alone; the attempt's id and its feedback page once graded."""
    sent = browser.hand_in(NAME, "attention_numpy.py", f"ANSWERS = {answers!r}\n".encode())
    assert sent.status_code == 303, sent.text[:500]
    page = sent.headers["location"]
    browser.graded(page)
    return page.rsplit("/", 1)[1], Page(browser.get(f"{page}/feedback").text)


def shown_points(feedback: Page, problem_id: str) -> Optional[tuple[float, float]]:
    """(points, of) the feedback page shows for a problem, or None when it shows none."""
    found = re.search(r"([\d.]+) / ([\d.]+)$", feedback.by_id.get(f"{problem_id}-title", ""))
    return (float(found.group(1)), float(found.group(2))) if found else None


def test_twenty_attempts_by_elimination_earn_no_more_than_one_blind_attempt(service, bundle):
    """The farmer keeps an answer the page calls right and tries the next where it calls it wrong; the default rule
    shows no verdict of a fixed item before hand-in closes, so 20 attempts end where the first, blind one did."""
    assert bundle.written_attempts.rule is WrittenRule.HIDDEN  # the manifest's default
    written = [w for w in bundle.written if w.points]
    fixed = [w for w in written if not fresh_numbers(w.problem)]
    assert len(fixed) >= 5 and sum(len(candidates(bundle, w.problem, FARMER)) > 1 for w in fixed) >= 5
    tried = {w.id: candidates(bundle, w.problem, FARMER) for w in written}
    at = {w.id: 0 for w in written}
    browser = service.signed_in(FARMER)
    earned, verdicts_seen = [], 0
    for _ in range(ATTEMPTS):
        attempt, feedback = hand_in(browser, {pid: tried[pid][at[pid]] for pid in tried})
        earned.append(graded_written(service.store, attempt))
        for w in fixed:
            shown = shown_points(feedback, w.id)
            if shown is None or shown[1] == 0:
                continue  # nothing said of it: nothing to eliminate
            verdicts_seen += 1
            if shown[0] < shown[1]:
                at[w.id] = (at[w.id] + 1) % len(tried[w.id])
    total = sum(w.points for w in written)
    blind, last = earned[0] / total, earned[-1] / total
    assert last <= blind + 0.05, f"farmed {last:.1%} of the written points, a blind attempt {blind:.1%}"
    assert verdicts_seen == 0
    # the attempt that counts (the latest) is the one measured: the class page's staff view would show its total
    assert len(earned) == ATTEMPTS


def key_of(bundle: GradingBundle, problem, seed: int, student: str) -> dict[str, Any]:
    variant = kind_of(problem).variant(problem, seed, bundle.variants, student)
    return {part.name: np.asarray(variant.answers[part.name]).tolist() for part in problem.parts}


def test_a_hand_calculation_has_new_numbers_on_every_attempt_shown_and_graded(service, bundle):
    """The assignment page shows the numbers of the attempt the student is about to make, and the rule in one
    sentence; answering with them earns the problem's points, answering the next attempt with the last one's does
    not."""
    numeric = next(w for w in bundle.written if fresh_numbers(w.problem) and w.problem.kind == "numeric")
    kind = kind_of(numeric.problem)
    browser = service.signed_in(CALCULATOR)
    earned = []
    for number in range(3):
        page = Page(browser.get(f"/a/{NAME}").text)
        assert page.by_id["written-rule"] == bundle.written_attempts.sentence()
        assert page.by_id["fresh-heading"] == f"Your numbers for attempt {number + 1}"
        seed = attempt_seed(bundle.seed, CALCULATOR, number)
        prompt = kind.prompt_text(numeric.problem, kind.variant(numeric.problem, seed, bundle.variants, CALCULATOR))
        assert Page(readable_html(prompt)).text in page.by_id["fresh-numbers"]
        # attempts 0 and 1 answered with their own numbers; attempt 2 with attempt 1's
        answer = key_of(bundle, numeric.problem, attempt_seed(bundle.seed, CALCULATOR, min(number, 1)), CALCULATOR)
        attempt, feedback = hand_in(browser, {numeric.id: answer})
        earned.append(shown_points(feedback, numeric.id))
    assert earned[0] == earned[1] == (numeric.points, numeric.points)
    assert earned[2] is not None and earned[2][0] < numeric.points
