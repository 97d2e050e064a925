"""The service's background grader (autograder/serve/grader.py) on a real gradebook and a real sandbox pool:
attempts claimed as the route has room, each recorded once."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.records import NewAttempt
from autograder.grade.route import open_route
from autograder.routes.class_grading import bundle_fingerprint
from autograder.serve.course import served_assignment
from autograder.serve.grader import Grader
from conftest import key_module

pytestmark = pytest.mark.slow

SLOW_SECONDS = 5.0  # the quick attempts take 0.3 s of it, or a few seconds beside a busy loop per core


def hand_in(book: Gradebook, student: str, source: str, received_at: float) -> str:
    body = source.encode()
    attempt = f"attempt-{student}"
    refused = book.accept(NewAttempt(attempt, student, received_at, "attention_numpy.py",
                                     hashlib.sha256(body).hexdigest(), body), most=10, most_per_hour=10)
    assert refused is None
    return attempt


def test_a_slow_attempt_keeps_no_other_waiting_behind_it(built_numpy, tmp_path: Path) -> None:
    # the grader used to claim a batch as large as the pool, and the next only once the whole batch was graded:
    # one slow attempt kept every worker but its own idle, and every student handing in after it waiting
    assignment = served_assignment("attention-numpy", built_numpy.out)
    # the key, written answers and all, with a causal_mask that sleeps at its first call and is right
    slow = key_module(built_numpy.assignment, "slow") + (
        f"\n\n_slept = []\n\n\ndef causal_mask(n):\n    import time\n    if not _slept:\n"
        f"        _slept.append(1)\n        time.sleep({SLOW_SECONDS})\n    return np.tril(np.ones((n, n), dtype=bool))\n")
    with Gradebook(tmp_path / "gradebook.sqlite", assignment=assignment.name) as book:
        book.check_assignment(assignment.name, bundle_fingerprint(assignment.bundle_dir))
        now = time.time()
        attempts = [hand_in(book, "slow", slow, now)]
        attempts += [hand_in(book, f"quick{i}", key_module(built_numpy.assignment, f"quick{i}"), now + 1 + i)
                     for i in range(6)]
        grader = Grader(assignment, book, None, lambda: open_route(assignment.bundle, assignment.bundle_dir, 2,
                                                                   assignment.bundle.limits, "allow-rlimits", None))
        grader.start()
        try:
            deadline = time.monotonic() + 120
            while any(book.attempt(a).state.value != "graded" for a in attempts) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            grader.stop()
        graded = {a: book.attempt(a) for a in attempts}
    assert all(a.state.value == "graded" for a in graded.values()), grader.failure
    assert {a.score for a in graded.values()} == {assignment.bundle.max_points}
    # the slow one is recorded last: the quick ones went on through the other worker meanwhile
    assert graded[attempts[0]].grading > max(graded[a].grading for a in attempts[1:])
