"""Background graders: each assignment's accepted attempts, claimed from its gradebook and graded on the
route `qkv grade` uses (a warm sandbox pool here, or the Dask cluster), each recorded exactly once.

A grader takes as many attempts as its route runs at once, grades them, and takes more; a woken
grader (a new attempt) starts at once, an idle one looks again every second (another web process may
have accepted one). While it grades it renews its claims, so a grader of another process takes over
only the attempts of a grader that died. The late policy is `qkv grade`'s: the time is when the
server received the attempt.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, Optional

from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.records import Attempt, GradingContext
from autograder.grade.intake import submission_from_bytes
from autograder.grade.route import Route
from autograder.grade.score import grade_submission
from autograder.results import SubmissionResult
from autograder.serve.course import ServedAssignment
from autograder.serve.instructor import TIME_SOURCE, attempt_late, settle_student

STALE_SECONDS = 30.0  # a claim not renewed for this long belongs to a grader that died
RENEW_SECONDS = 5.0
RETRY_SECONDS = 10.0


class Grader:
    """Grades one assignment's attempts in a thread of its own until `stop`."""

    def __init__(self, assignment: ServedAssignment, book: Gradebook, roster: Optional[Roster],
                 open_route: Callable[[], AbstractContextManager[Route]], slots: int,
                 report: Callable[[str], None] = lambda line: None):
        self.assignment = assignment
        self.book = book
        self.roster = roster
        self._open_route = open_route
        self.slots = max(1, slots)
        self._report = report
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._held: set[str] = set()
        self._held_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.failure: Optional[str] = None

    def start(self) -> None:
        for target in (self._run, self._renew):
            thread = threading.Thread(target=target, name=f"qkv-grader-{self.assignment.name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=30)

    # ------------------------------------------------------------------ the loop

    def _claim_batch(self) -> list[Attempt]:
        batch = []
        while len(batch) < self.slots and not self._stop.is_set():
            attempt = self.book.claim(time.time(), STALE_SECONDS)
            if attempt is None:
                break
            batch.append(attempt)
        with self._held_lock:
            self._held.update(a.id for a in batch)
        return batch

    def _run(self) -> None:
        # a failure (a database that went away, a sandbox that cannot start) gives the claims back at once and is
        # tried again after a pause: attempts wait, none is lost, and the class page says why meanwhile
        while not self._stop.is_set():
            try:
                with self._open_route() as route:
                    while not self._stop.is_set():
                        batch = self._claim_batch()
                        if not batch:
                            self._wake.wait(1.0)
                            self._wake.clear()
                            continue
                        self._grade(route, batch)
                        self.failure = None
            except Exception as err:
                self.failure = f"{type(err).__name__}: {err}"
                self._report(f"grader of {self.assignment.name}: {self.failure}; its attempts wait, trying again "
                             f"in {RETRY_SECONDS:g} s")
                with self._held_lock:
                    held, self._held = sorted(self._held), set()
                try:
                    self.book.renew_claims(held, time.time() - STALE_SECONDS - 1)
                except Exception:  # the database itself is away: the claims lapse on their own
                    pass
                self._stop.wait(RETRY_SECONDS)

    def _grade(self, route: Route, batch: list[Attempt]) -> None:
        bundle = self.assignment.bundle
        runnable = []
        for attempt in batch:
            submission = submission_from_bytes(attempt.student, Path(attempt.filename),
                                               self.book.attempt_body(attempt.id))
            if submission.program is None:
                self._record(attempt, grade_submission(bundle, submission, None), route.isolation)
            else:
                runnable.append((attempt, submission))
        # a route grades by student; a batch holds at most one attempt of each student
        students: dict[str, Attempt] = {}
        first: list = []
        later: list[Attempt] = []
        for attempt, submission in runnable:
            if attempt.student in students:
                later.append(attempt)
            else:
                students[attempt.student] = attempt
                first.append(submission)
        for submission, result, isolation in route.grade(first):
            self._record(students[submission.student], result, isolation)
        self._release([a.id for a in later])

    def _record(self, attempt: Attempt, result: SubmissionResult, isolation: str) -> None:
        late = attempt_late(self.assignment, self.roster, result, attempt)
        self.book.record(result, isolation, GradingContext("qkv serve: " + attempt.filename,
                                                           attempt.received.isoformat(), TIME_SOURCE, False),
                         attempt=attempt.id, final=late.final if late else result.score,
                         counting=self.assignment.counting)
        settle_student(self.assignment, self.book, self.roster, attempt.student)
        self._release([attempt.id])

    def _release(self, attempt_ids: list[str]) -> None:
        # an attempt given back unrecorded (a second of the same student's in one batch) is claimed again
        # once its claim goes stale; giving it back at once keeps it from waiting
        with self._held_lock:
            self._held.difference_update(attempt_ids)
        unrecorded = [a for a in attempt_ids if (found := self.book.attempt(a)) and found.state.value != "graded"]
        if unrecorded:
            self.book.renew_claims(unrecorded, time.time() - STALE_SECONDS - 1)
            self._wake.set()

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            with self._held_lock:
                held = sorted(self._held)
            if held:
                try:
                    self.book.renew_claims(held, time.time())
                except Exception as err:  # a database that went away: the claims lapse and another grader takes them
                    self._report(f"grader of {self.assignment.name}: could not renew claims: {err}")
