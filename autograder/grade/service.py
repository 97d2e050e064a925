"""The grading service: the one path from a program handed in to a grading kept, for every front door (`qkv
grade`, routes/class_grading.py; the graders of `qkv serve`, serve/grader.py; practice, exams and the hub next).

It takes a program (a `Submission`) and who handed it in (`HandedIn`: the student, when and how that time is
known, the LMS's LATE marker, where the file came from, the service's attempt), grades it on a route
(grade/route.py; a file with no program is scored here, as nothing), and records one grading in the gradebook
with its late outcome, in one transaction. It gives back each grading as `Recorded`: the result, the isolation
it ran under, the late outcome and the grading's id.

The late outcome is worked out here, once per grading (`late_outcome`, the engine's one call of
classroom/deadlines.py's rules), from the bundle's late policy (late_policy.py) and the roster's extension of
the student; every page and export after reads the one kept. `settled` gives each student's counted outcome,
working one out again only where its inputs changed since (an extension given later) or where a gradebook of
before kept none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Optional

from autograder.bundle import GradingBundle
from autograder.classroom.classbook import extension_of, late_entry, outcome_of
from autograder.classroom.deadlines import Deadline, LateOutcome, apply_policy, policy_from
from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook, GradingContext, HandIn
from autograder.grade.gradebook.records import Counting, moment
from autograder.grade.intake import Submission
from autograder.grade.route import Route
from autograder.grade.score import grade_submission, score_written
from autograder.grade.timings import Timings
from autograder.grade.written_policy import applied, shown_score
from autograder.results import SubmissionResult


@dataclass(frozen=True)
class HandedIn:
    """A program and who handed it in: `context` says when (and how that is known) and where it came from;
    `attempt` is the service's attempt it is, if any."""

    submission: Submission
    context: GradingContext = GradingContext()
    attempt: Optional[str] = None

    @property
    def hand_in(self) -> HandIn:
        return HandIn(moment(self.context.submitted_at), self.context.time_source, self.context.late_marked)


@dataclass(frozen=True)
class Recorded:
    """One grading as kept: `grading` is None when its attempt had been graded already (nothing was written)."""

    handed: HandedIn
    result: SubmissionResult
    isolation: str
    late: LateOutcome
    grading: Optional[int]


def late_outcome(deadline: Deadline, roster: Optional[Roster], student: str, score: float, max_score: float,
                 hand_in: HandIn) -> LateOutcome:
    """A grading's penalty under the late policy, with the roster's extension of the student."""
    return apply_policy(deadline, score, max_score, hand_in.submitted_at, extension_of(roster, student),
                        hand_in.time_source, hand_in.late_marked)


class GradingService:
    """Grades and records one assignment's hand-ins in its gradebook (`counting`: which attempt counts)."""

    def __init__(self, bundle: GradingBundle, book: Gradebook, roster: Optional[Roster],
                 counting: Counting = Counting.LATEST, timings: Optional[Timings] = None):
        self.bundle = bundle
        self.book = book
        self.roster = roster
        self.counting = counting
        self.deadline = policy_from(bundle.due, bundle.late)
        self.clock = timings or Timings()

    def grade(self, route: Route, handed: Iterable[Optional[HandedIn]]) -> Iterator[Recorded]:
        """Grade `handed` on `route` and record each as it comes back. `handed` may be a stream, None meaning
        "nothing yet" (Route.grade); a file with no program is recorded as it is read, and given back at the
        next grading the route returns or at the end."""
        waiting: dict[int, HandedIn] = {}  # by the submission's identity: the route gives back the object it took
        ready: list[Recorded] = []

        def submissions() -> Iterator[Optional[Submission]]:
            for item in handed:
                if item is not None and item.submission.program is None:
                    with self.clock.stage("score"):
                        result = grade_submission(self.bundle, item.submission, None)
                    ready.append(self.record(item, result, route.isolation))
                    continue
                if item is not None:
                    waiting[id(item.submission)] = item
                yield None if item is None else item.submission

        for submission, result, isolation in route.grade(submissions()):
            yield from _drained(ready)
            yield self.record(waiting.pop(id(submission)), result, isolation)
        yield from _drained(ready)

    def record(self, handed: HandedIn, result: SubmissionResult, isolation: str) -> Recorded:
        """Keep one grading with its late outcome and, for an attempt, its fixed written items scored by the
        written-answer policy over the student's attempts before it (grade/written_policy.py), each worked out here
        and nowhere else."""
        policy = self.bundle.written_attempts
        if handed.attempt is not None:
            student = result.student
            result = applied(policy, self.bundle, result, self.book.answers_before(handed.attempt),
                             lambda written, answer: score_written(written, answer, self.bundle, student))
        late = late_outcome(self.deadline, self.roster, result.student, result.score, result.max_score,
                            handed.hand_in)
        with self.clock.stage("gradebook"):
            grading = self.book.record(result, isolation, handed.context, attempt=handed.attempt,
                                       late=late_entry(result.student, late), counting=self.counting,
                                       shown=shown_score(policy, self.bundle, result))
        return Recorded(handed, result, isolation, late, grading)

    def settled(self, now: Iterable[Recorded] = ()) -> dict[str, LateOutcome]:
        """Each student's counted late outcome: those recorded `now` as they are, the others as kept, worked out
        again (and kept) only when the roster's extension of the student changed since, or none was kept (a
        gradebook of before the service)."""
        fresh = {r.result.student: r.late for r in now if r.grading is not None}
        out: dict[str, LateOutcome] = {}
        for counted in self.book.counted_late():
            if counted.student in fresh:
                out[counted.student] = fresh[counted.student]
                continue
            extension = extension_of(self.roster, counted.student)
            if counted.late is not None and counted.late.extension == (str(extension) if extension else ""):
                out[counted.student] = outcome_of(counted.late)
                continue
            late = late_outcome(self.deadline, self.roster, counted.student, counted.score, counted.max_score,
                                counted.hand_in)
            self.book.store_late(counted.grading, late_entry(counted.student, late))
            out[counted.student] = late
        return out

    def kept_late(self, grading: int) -> Optional[LateOutcome]:
        """A grading's kept late outcome (None for one of before the service that `settled` did not reach)."""
        entry = self.book.grading_late(grading)
        return outcome_of(entry) if entry else None


def _drained(ready: list[Recorded]) -> Iterator[Recorded]:
    while ready:
        yield ready.pop(0)


__all__ = ["GradingService", "HandedIn", "Recorded", "late_outcome"]
