"""Code problems in the service's practice space: a student's function, handed in on the variant's page, graded in
the sandbox on the route an attempt of the assignment is graded on, and kept as a practice try, never an attempt.

Takes the served assignments (a code problem is practised where a served assignment's bundle grades it: its tests,
expected outputs and misconceptions' outputs were computed at build, so no reference runs here and the sandbox never
sees an expected output) and the practice store's code tries; gives each try its share of the points, the
misconceptions its failed tests name and the feedback its page shows, stored in one transaction with its variant
answered (grade/gradebook/practice.py), so the practice rule replays it like a written try. Nothing here writes to an
assignment's gradebook: a practice try is in no attempt, grade, export or LMS passback.

One grader per assignment, in a thread of its own, grades its tries one at a time on a route of one sandbox worker
with the assignment's limits (a loop is stopped by the same time limits as in an attempt, and no try holds more than
that worker; attempts have their own pool). A claim a grader that died left is taken over after STALE_SECONDS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Optional, Union

from autograder.bundle import CodeProblem, GradingBundle, module_name
from autograder.grade.gradebook.practice import CodeTry, PracticeStore
from autograder.grade.intake import submission_from_bytes
from autograder.grade.route import Route
from autograder.results import SubmissionResult
from autograder.serve.course import ServedAssignment

CODE_CHARS = 20_000  # the most code a practice try takes (a function, not a notebook)
STALE_SECONDS = 300.0  # longer than any try's run under the limits (a failed fast path is run again once)
RETRY_SECONDS = 10.0
HIDDEN = "a hidden test"


def code_homes(assignments: Iterable[ServedAssignment]) -> dict[str, ServedAssignment]:
    """Each code problem a served assignment grades, by id: the (first) assignment whose bundle grades it."""
    homes: dict[str, ServedAssignment] = {}
    for a in assignments:
        for problem in a.bundle.code:
            homes.setdefault(problem.id, a)
    return homes


def _code_problem(bundle: GradingBundle, problem_id: str) -> Optional[CodeProblem]:
    return next((p for p in bundle.code if p.id == problem_id), None)


def judged(bundle: GradingBundle, problem_id: str, result: SubmissionResult) -> tuple[float, tuple[str, ...], dict]:
    """(the share of the problem's points, the misconceptions named, the feedback shown) of a try's grading. A
    hidden test shows whether it passed and the misconception it names, never its message (its numbers)."""
    found = next((p for p in result.problems if p.problem_id == problem_id), None)
    if found is None or result.status != "graded":
        why = result.message or "it could not be run"
        return 0.0, (), dict(share=0.0, status=result.status, message=why, tests=[])
    named: list[str] = []
    tests: list[dict[str, Any]] = []
    for test in found.tests:
        mistake = None
        if test.misconception:
            own = _code_problem(bundle, test.cause or problem_id)
            mistake = own.misconceptions.get(test.misconception, test.misconception) if own else test.misconception
            if mistake not in named:
                named.append(mistake)
        public = test.visibility == "public"
        tests.append(dict(name=test.name if public else HIDDEN, passed=test.passed, misconception=mistake,
                          message="" if test.passed or not public else test.message))
    share = round(found.score / found.max_score, 6) if found.max_score else 0.0
    return share, tuple(named), dict(share=share, status=result.status, message=found.message, tests=tests)


class PracticeCodeGrader:
    """Grades the practice code tries of one assignment's problems, in a thread of its own until `stop`."""

    def __init__(self, assignment: ServedAssignment, where: Union[Path, str],
                 open_route: Callable[[], AbstractContextManager[Route]], clock: Callable[[], float],
                 report: Callable[[str], None] = lambda line: None,
                 on_graded: Callable[[str], None] = lambda variant: None):
        self.assignment = assignment
        self.problems = tuple(p.id for p in assignment.bundle.code)
        self.store = PracticeStore(where)  # a connection of its own: the web's threads use theirs
        self._open_route = open_route
        self._clock = clock
        self._report = report
        self._on_graded = on_graded  # told each variant whose try's grading is stored (serve/results.py)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"qkv-practice-{assignment.name}", daemon=True)

    def start(self) -> "PracticeCodeGrader":
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, seconds: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.ident is not None:  # never started when the app did not (a port taken)
            self._thread.join(timeout=seconds)
        self.store.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self._open_route() as route:
                    while not self._stop.is_set():
                        claimed = self.store.claim_code(self._clock(), STALE_SECONDS, self.problems)
                        if claimed is None:
                            self._wake.wait(1.0)  # another web process may have taken one: look again anyway
                            self._wake.clear()
                            continue
                        self._grade(route, *claimed)
            except Exception as err:  # a sandbox that cannot start, a database away: the tries wait, none is lost
                self._report(f"practice grader of {self.assignment.name}: {type(err).__name__}: {err}; "
                             f"its tries wait, trying again in {RETRY_SECONDS:g} s")
                self._stop.wait(RETRY_SECONDS)

    def _grade(self, route: Route, code: CodeTry, problem_id: str) -> None:
        bundle = self.assignment.bundle
        submission = submission_from_bytes(code.student, Path(module_name(bundle.name) + ".py"),
                                           code.source.encode("utf-8"))
        named: tuple[str, ...] = ()
        if submission.program is None:
            share, feedback = 0.0, dict(share=0.0, status=submission.status, message=submission.message,
                                                   tests=[])
        else:
            result = next(result for _, result, _ in route.grade([submission]))
            share, named, feedback = judged(bundle, problem_id, result)
        if self.store.judge_code(code.variant, code.student, self._clock(), share, named, feedback):
            self._on_graded(code.variant)


__all__ = ["CODE_CHARS", "PracticeCodeGrader", "code_homes", "judged"]
