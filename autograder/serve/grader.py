"""Background graders: each assignment's accepted attempts, claimed from its gradebook and graded on the
route `qkv grade` uses (a warm sandbox pool here, or the Dask cluster), each recorded exactly once.

A grader hands its route a stream of attempts, each claimed when the route has room for it (as many
ready as the pool has workers; None while nothing waits but some are graded, so the route asks
again within a moment), so the route's workers never wait for the slowest attempt of a batch, and one
handed in meanwhile goes on at once. It holds one attempt of a student at a time (the next waits behind
the last), so no student holds more than one worker; the local route is fair to fresh attempts besides
(SandboxPool.map: an attempt that ran long yields its slot, and its rerun waits behind fresh ones). A woken grader (a new attempt) starts at once, an idle one looks
again every second (another web process may have accepted one). While it grades it renews its claims,
so a grader of another process takes over only the attempts of a grader that died. Each attempt is graded and
recorded through the grading service `qkv grade` uses (grade/service.py), which keeps its late outcome: the time
is when the server received the attempt.
"""

from __future__ import annotations

import threading
from dataclasses import replace
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, Iterator, Optional

from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.records import Attempt, AttemptState, GradingContext
from autograder.grade.intake import submission_from_bytes
from autograder.grade.route import Route
from autograder.grade.service import GradingService, HandedIn, Recorded
from autograder.serve.course import ServedAssignment

TIME_SOURCE = "received by qkv serve"

STALE_SECONDS = 30.0  # a claim not renewed for this long belongs to a grader that died
RENEW_SECONDS = 5.0
RETRY_SECONDS = 10.0
STOP_SECONDS = 30.0  # for what a stopping grader has claimed to be graded; a claim left lapses after STALE_SECONDS


class Grader:
    """Grades one assignment's attempts in a thread of its own until `stop`."""

    def __init__(self, assignment: ServedAssignment, book: Gradebook, roster: Optional[Roster],
                 open_route: Callable[[], AbstractContextManager[Route]],
                 report: Callable[[str], None] = lambda line: None,
                 on_recorded: Callable[[str], None] = lambda attempt_id: None):
        self.assignment = assignment
        self.book = book
        self.roster = roster
        self.service = GradingService(assignment.bundle, book, roster, assignment.counting)
        self._open_route = open_route
        self._report = report
        self._on_recorded = on_recorded  # told each attempt id whose grading is stored (serve/results.py)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._finished = threading.Event()  # the grading thread has ended
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

    def ask_to_stop(self) -> None:
        """Claim nothing more; what is claimed is graded first (`stop` waits for it)."""
        self._stop.set()
        self._wake.set()

    def stop(self, seconds: float = STOP_SECONDS) -> None:
        self.ask_to_stop()
        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ the loop

    def _claim(self) -> Optional[Attempt]:
        attempt = self.book.claim(time.time(), STALE_SECONDS)
        if attempt is not None:
            with self._held_lock:
                self._held.add(attempt.id)
        return attempt

    def _run(self) -> None:
        try:
            self._grade_until_stopped()
        finally:
            self._finished.set()

    def _grade_until_stopped(self) -> None:
        # a failure (a database that went away, a sandbox that cannot start) gives the claims back at once and is
        # tried again after a pause: attempts wait, none is lost, and the class page says why meanwhile
        while not self._stop.is_set():
            try:
                with self._open_route() as route:
                    while not self._stop.is_set():
                        if not self._grade(route):
                            self._wake.wait(1.0)
                            self._wake.clear()
                            continue
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

    def _grade(self, route: Route) -> bool:
        """Grade attempts on `route` until none is waiting or being graded, each claimed as soon as the route has
        room for it (so its workers never wait for the slowest of a batch, and an attempt handed in while others
        are graded goes on at once); whether any attempt was claimed."""
        graded: dict[str, Attempt] = {}  # by student: the attempt the route holds (one of each student at a time)
        later: list[Attempt] = []  # claimed while the same student's attempt was on the route
        claimed = False

        def stream() -> Iterator[Optional[HandedIn]]:
            nonlocal claimed
            while not self._stop.is_set():
                attempt = next((a for a in later if a.student not in graded), None)
                if attempt is not None:
                    later.remove(attempt)
                else:
                    attempt = self._claim()
                    if attempt is None:
                        if not graded:
                            return  # nothing waits and nothing is on the route: this round is over
                        yield None  # nothing waits yet: the route asks again soon, or once one is graded
                        continue
                    claimed = True
                    if attempt.student in graded:
                        later.append(attempt)
                        continue
                handed = self._handed(attempt)
                if handed.submission.program is not None:  # one with none is recorded as it is read
                    graded[attempt.student] = attempt
                yield handed

        for recorded in self.service.grade(route, stream()):
            if recorded.handed.submission.program is not None:
                graded.pop(recorded.result.student)
            self._recorded(recorded)
        # claimed while stopping: given back at once (after a failure, `_run` gives back everything held)
        self._release([a.id for a in later])
        return claimed

    def _handed(self, attempt: Attempt) -> HandedIn:
        submission = submission_from_bytes(attempt.student, Path(attempt.filename), self.book.attempt_body(attempt.id))
        # graded on the numbers its seed draws, those the assignment page showed for it (grade/written_policy.py)
        return HandedIn(replace(submission, seed=attempt.seed), GradingContext("qkv serve: " + attempt.filename, attempt.received.isoformat(),
                                                   TIME_SOURCE, False), attempt.id)

    def _recorded(self, recorded: Recorded) -> None:
        # the grading, its late outcome and the class's copy of the counted one are kept in one transaction
        self._release([recorded.handed.attempt or ""])
        if recorded.handed.attempt:
            self._on_recorded(recorded.handed.attempt)

    def _release(self, attempt_ids: list[str]) -> None:
        # an attempt given back unrecorded is claimed again once its claim goes stale; giving it back at once keeps
        # it from waiting. They stay held until then, so a failure here leaves them to `_run`'s giving back
        # (under the lock, so that no renewal copied before it writes a fresh claim over the one given back)
        with self._held_lock:
            unrecorded = [a for a in attempt_ids
                          if (found := self.book.attempt(a)) and found.state is not AttemptState.GRADED]
            if unrecorded:
                self.book.renew_claims(unrecorded, time.time() - STALE_SECONDS - 1)
                self._wake.set()
            self._held.difference_update(attempt_ids)

    def _renew(self) -> None:
        # until the grading thread has ended, not merely been asked to stop: what it grades meanwhile stays claimed
        while not self._finished.wait(RENEW_SECONDS):
            with self._held_lock:
                try:
                    self.book.renew_claims(sorted(self._held), time.time())
                except Exception as err:  # a database that went away: the claims lapse and another grader takes them
                    self._report(f"grader of {self.assignment.name}: could not renew claims: {err}")
