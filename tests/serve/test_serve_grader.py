"""The service's background grader (autograder/serve/grader.py) on a real gradebook and a real sandbox pool:
attempts claimed as the route has room, each recorded once."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.records import AttemptState, NewAttempt
from autograder.grade.route import open_route
from autograder.routes.class_grading import bundle_fingerprint
from autograder.serve.course import served_assignment
from autograder.serve.grader import Grader
from conftest import key_module
from served_course import every_function_loops, every_function_sleeps

pytestmark = pytest.mark.slow

# The slow attempt's first causal_mask call sleeps this long; a quick one takes 0.1-0.3 s here, a second or two
# beside a busy loop per core
SLOW_SECONDS = 6.0


def slow_key(assignment, student: str) -> str:
    """The key, written answers and all, with a causal_mask that sleeps at its first call and is right."""
    return key_module(assignment, student) + (
        f"\n\n_slept = []\n\n\ndef causal_mask(n):\n    import time\n    if not _slept:\n"
        f"        _slept.append(1)\n        time.sleep({SLOW_SECONDS})\n    return np.tril(np.ones((n, n), dtype=bool))\n")


def hand_in(book: Gradebook, student: str, source: str) -> str:
    body = source.encode()
    attempt = f"attempt-{student}"
    refused = book.accept(NewAttempt(attempt, student, time.time(), "attention_numpy.py",
                                     hashlib.sha256(body).hexdigest(), body), most=10, most_per_hour=10)
    assert refused is None
    return attempt


def until(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.05)


@contextmanager
def grading(built_numpy, folder: Path, on_recorded=lambda attempt_id: None, **limits: float):
    """A gradebook of attention-numpy, its full marks, and a grader on a pool of two workers (stopped at the end),
    under the bundle's limits but for `limits`, telling `on_recorded` each attempt it records."""
    assignment = served_assignment("attention-numpy", built_numpy.out)
    with Gradebook(folder / "gradebook.sqlite", assignment=assignment.name) as book:
        book.check_assignment(assignment.name, bundle_fingerprint(assignment.bundle_dir))
        run_under = dataclasses.replace(assignment.bundle.limits, **limits)
        grader = Grader(assignment, book, None, lambda: open_route(assignment.bundle, assignment.bundle_dir, 2,
                                                                   run_under, "allow-rlimits", None),
                        on_recorded=on_recorded)
        try:
            yield book, assignment.bundle.max_points, grader
        finally:
            grader.stop()


def state(book: Gradebook, attempt: str) -> AttemptState:
    return book.attempt(attempt).state


def test_an_attempt_handed_in_while_a_slow_one_is_graded_is_graded_meanwhile(built_numpy, tmp_path: Path) -> None:
    # the grader used to take a batch of what was waiting and the next only once the whole batch was graded:
    # one attempt alone that was slow kept every one handed in after it waiting, with a worker free
    with grading(built_numpy, tmp_path) as (book, full_marks, grader):
        slow = hand_in(book, "slow", slow_key(built_numpy.assignment, "slow"))
        grader.start()
        until(lambda: state(book, slow) is AttemptState.GRADING)
        quick = hand_in(book, "quick", key_module(built_numpy.assignment, "quick"))
        grader.wake()
        until(lambda: state(book, quick) is AttemptState.GRADED or state(book, slow) is AttemptState.GRADED)
        assert state(book, quick) is AttemptState.GRADED and state(book, slow) is AttemptState.GRADING
        until(lambda: state(book, slow) is AttemptState.GRADED)
        scores = {book.attempt(a).score for a in (slow, quick)}
    assert scores == {full_marks}, grader.failure


def test_the_grader_tells_each_attempt_once_its_grading_is_stored(built_numpy, tmp_path: Path) -> None:
    # what wakes a held look at a waiting page (serve/results.py): told after the grading is stored, never before,
    # once per attempt, the unloadable one (recorded as it is read) too
    told: dict[str, AttemptState] = {}
    with grading(built_numpy, tmp_path, on_recorded=lambda a: told.setdefault(a, state(book, a))) as (
            book, full_marks, grader):
        attempts = [hand_in(book, f"s{i}", key_module(built_numpy.assignment, f"s{i}")) for i in range(3)]
        attempts.append(hand_in(book, "broken", "def broken(:\n"))
        grader.start()
        until(lambda: len(told) == len(attempts))
    assert told == {a: AttemptState.GRADED for a in attempts}


def test_a_slow_attempt_keeps_no_attempt_waiting_behind_it(built_numpy, tmp_path: Path) -> None:
    # a class handing in at once: the grader used to claim as many as the pool had workers, and the next batch
    # only once the slow one was graded, so one quick attempt at most went by it
    with grading(built_numpy, tmp_path) as (book, full_marks, grader):
        slow = hand_in(book, "slow", slow_key(built_numpy.assignment, "slow"))
        quick = [hand_in(book, f"quick{i}", key_module(built_numpy.assignment, f"quick{i}")) for i in range(6)]
        grader.start()
        until(lambda: all(state(book, a) is AttemptState.GRADED for a in [slow, *quick]))
        graded = {a: book.attempt(a) for a in [slow, *quick]}
    assert {a.score for a in graded.values()} == {full_marks}, grader.failure
    assert sum(graded[a].grading < graded[slow].grading for a in quick) >= 2



def test_with_every_worker_on_a_looping_attempt_an_honest_one_handed_in_later_is_graded_first(
        built_numpy, tmp_path: Path) -> None:
    # both workers hold an attempt whose every function loops; the honest one handed in after them waited until
    # one of them had run each of its problems to its own limit (minutes). Now a loop that ran long yields its
    # slot, and its whole attempt ends when its budget (attempt_seconds) runs out, the fast path's time included
    functions = [p.problem.function for p in built_numpy.assignment.implement]
    with grading(built_numpy, tmp_path, attempt_seconds=30.0) as (book, full_marks, grader):
        loops = [hand_in(book, f"loop{i}", every_function_loops(functions)) for i in range(2)]
        grader.start()
        until(lambda: all(state(book, a) is AttemptState.GRADING for a in loops))
        honest = hand_in(book, "honest", key_module(built_numpy.assignment, "honest"))
        grader.wake()
        until(lambda: state(book, honest) is AttemptState.GRADED
              or any(state(book, a) is AttemptState.GRADED for a in loops))
        assert state(book, honest) is AttemptState.GRADED and all(state(book, a) is AttemptState.GRADING for a in loops)
        until(lambda: all(state(book, a) is AttemptState.GRADED for a in loops))
        graded = {a: book.attempt(a) for a in [honest, *loops]}
        results = {a: json.dumps(book.stored_result(graded[a].grading)) for a in loops}
    assert graded[honest].score == full_marks, grader.failure
    assert all(graded[a].score == 0 and graded[a].grading > graded[honest].grading for a in loops)
    assert all("the attempt's time budget of 30 s (attempt_seconds) ran out" in results[a] for a in loops)


def test_with_every_worker_on_an_attempt_that_ran_long_one_yields_to_an_honest_attempt_handed_in_later(
        built_numpy, tmp_path: Path) -> None:
    # two slots and two spare workers, all four held by attempts that ran long (they sleep in every function, long
    # after the same wall time whatever the machine's load): the honest attempt handed in after them used to wait
    # until one of them ran out of its budget; now the one that ran long first yields its worker to it, and all
    # four still end by their budget, the time of all their runs
    functions = [p.problem.function for p in built_numpy.assignment.implement]
    with grading(built_numpy, tmp_path, problem_seconds=30.0, attempt_seconds=20.0) as (book, full_marks, grader):
        loops = [hand_in(book, f"sleeper{i}", every_function_sleeps(functions)) for i in range(4)]
        grader.start()
        until(lambda: all(state(book, a) is AttemptState.GRADING for a in loops))
        honest = hand_in(book, "honest", key_module(built_numpy.assignment, "honest"))
        grader.wake()
        until(lambda: state(book, honest) is AttemptState.GRADED
              or any(state(book, a) is AttemptState.GRADED for a in loops))
        assert state(book, honest) is AttemptState.GRADED and all(state(book, a) is AttemptState.GRADING for a in loops)
        until(lambda: all(state(book, a) is AttemptState.GRADED for a in loops))
        graded = {a: book.attempt(a) for a in [honest, *loops]}
        results = {a: json.dumps(book.stored_result(graded[a].grading)) for a in loops}
    assert graded[honest].score == full_marks, grader.failure
    assert all(graded[a].score == 0 for a in loops)
    assert all("the attempt's time budget of 20 s (attempt_seconds) ran out" in results[a] for a in loops)
