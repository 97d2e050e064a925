"""The service's timed mock exams: course.yaml's `exams:` (each drawn as `qkv exam` draws a paper), the bank, the
roster (a student's extra time) and the exam store in; a student's sitting, their paper, its marks and the class's
progress out.

Every rule of time is here, on the server's clock (`CLOCK`, read once per request): a sitting starts within the
window, once; its end is fixed at the start (the start plus the exam's minutes, more by the roster's extra-time
percent, never past the window's close) and stored; an answer is kept only before that end. Marks, keys and worked
solutions are given only once the window has closed, or, for an exam marked `practice`, once the student's sitting
is over.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np

from autograder.bank.load import Bank
from autograder.classroom.stats import ItemAnalysis, Scores, analyse
from autograder.classroom.roster import Roster
from autograder.course.find import ExamSettings
from autograder.errors import QkvError
from autograder.exam.select import DEFAULT_KINDS, ExamSpec, draw_exam
from autograder.grade.gradebook.exams import ExamStore, Sitting
from autograder.kinds import KINDS, Problem
from autograder.practice.answers import Judged, Unreadable, judge
from autograder.serve.pages import Refusal

CLOCK: Callable[[], float] = time.time  # the server's clock; tests/exam_client.py serves with a clock it sets
MOST_EXTRA = 400.0  # percent: beyond five times the time is a typo in the roster, not an accommodation


def when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def extra_percent(value: str, where: str) -> float:
    """A roster's extra time ("50", "50%", "" for none) as a percent; a one-line QkvError naming `where`."""
    text = value.strip().removesuffix("%").strip()
    if not text:
        return 0.0
    try:
        percent = float(text)
    except ValueError:
        percent = math.nan
    if not 0 <= percent <= MOST_EXTRA:
        raise QkvError(where, f"{value!r} is not an extra time in percent from 0 to {MOST_EXTRA:g} (e.g. 50)")
    return percent


@dataclass(frozen=True)
class MockExam:
    name: str
    settings: ExamSettings
    problems: tuple[Problem, ...]  # the paper's, in order (each student answers them on numbers of their own)

    @property
    def opens(self) -> float:
        return self.settings.opens.timestamp()

    @property
    def closes(self) -> float:
        return self.settings.closes.timestamp()

    @property
    def points(self) -> float:
        return sum(p.points for p in self.problems)

    def marks_shown(self, sitting: Optional[Sitting], now: float) -> bool:
        """Whether marks, keys and worked solutions may be shown (to the sitting's student, and to staff)."""
        return now >= self.closes or (self.settings.practice and sitting is not None and sitting.over(now))


@dataclass(frozen=True)
class Marked:
    number: int
    problem: Problem
    judged: Judged

    @property
    def points(self) -> float:
        return self.judged.share * self.problem.points


@dataclass(frozen=True)
class Progress:
    """One student's sitting as staff see it."""

    student: str
    sitting: Optional[Sitting]
    answered: int
    state: str  # "not started", "sitting", "handed in", "time up"
    left: float  # seconds left, 0 unless sitting
    score: Optional[float]  # once the marks may be shown


@dataclass
class ExamRooms:
    exams: dict[str, MockExam]
    store: ExamStore
    extra: dict[str, dict[str, float]]  # a student's extra time in percent, by roster column and roster id
    clock: Callable[[], float]

    @classmethod
    def open(cls, settings: dict[str, ExamSettings], bank: Bank, roster: Optional[Roster],
             where: Union[Path, str]) -> "ExamRooms":
        """Every exam drawn now (a draw the bank cannot give is a one-line error naming course.yaml's exam) and
        every roster row's extra time read (a bad one names the roster and the student)."""
        exams = {name: MockExam(name, s, _draw(name, s, bank)) for name, s in settings.items()}
        extra: dict[str, dict[str, float]] = {s.extra_time: {} for s in settings.values()}
        for column, percents in extra.items():
            for student in roster.students if roster is not None else ():
                row = f"{roster.source or 'roster'}: {student.id}: {column}" if roster is not None else column
                percents[student.id] = extra_percent(student.get(column), row)
        return cls(exams, ExamStore(where), extra, CLOCK)

    def exam(self, name: str) -> MockExam:
        if name not in self.exams:
            raise Refusal(404, "no such exam", "Not found")
        return self.exams[name]

    def minutes(self, exam: MockExam, student: str) -> float:
        return exam.settings.minutes * (1 + self.extra[exam.settings.extra_time].get(student, 0.0) / 100)

    def start(self, exam: MockExam, student: str, now: float) -> Sitting:
        """`student`'s sitting, begun now if it was not before: only within the window."""
        begun = self.store.of(exam.name, student)
        if begun is not None:
            return begun
        if now < exam.opens:
            raise Refusal(409, f"the exam opens at {when(exam.opens)}", "Not open yet")
        if now >= exam.closes:
            raise Refusal(409, f"the exam closed at {when(exam.closes)}", "Closed")
        ends = min(now + 60 * self.minutes(exam, student), exam.closes)
        return self.store.start(exam.name, student, tuple(p.id for p in exam.problems), now, ends)

    def sitting(self, sitting: str, student: str) -> tuple[Sitting, MockExam]:
        """`student`'s own sitting; another's, or one of an exam no longer offered, is 404 as a made-up one."""
        found = self.store.sitting(sitting, student)
        if found is None or found.exam not in self.exams:
            raise Refusal(404, "no such exam paper", "Not found")
        return found, self.exams[found.exam]

    def mark(self, exam: MockExam, sitting: Sitting) -> list[Marked]:
        """Each item judged on its saved answers (a part left blank earns nothing)."""
        saved = self.store.answers(sitting.id)
        marked = []
        for number, problem in enumerate(exam.problems, 1):
            try:
                judged = judge(problem, exam.settings.seed, saved.get(number, {}), sitting.student,
                               blank_is_wrong=True)
            except Unreadable:  # the bank changed its reading since the answer was saved: no points, no error
                judged = Judged((), 0.0)
            marked.append(Marked(number, problem, judged))
        return marked

    def progress(self, exam: MockExam, students: list[str], now: float) -> list[Progress]:
        sittings = {s.student: s for s in self.store.everyone(exam.name)}
        answered = self.store.answered(exam.name)
        rows = []
        for student in sorted(set(students) | set(sittings)):
            sitting = sittings.get(student)
            if sitting is None:
                rows.append(Progress(student, None, 0, "not started", 0.0, None))
                continue
            state = "sitting" if not sitting.over(now) else "handed in" if sitting.handed_in else "time up"
            score = sum(m.points for m in self.mark(exam, sitting)) if exam.marks_shown(sitting, now) else None
            rows.append(Progress(student, sitting, answered.get(sitting.id, 0), state,
                                 max(0.0, sitting.ends - now) if state == "sitting" else 0.0, score))
        return rows

    def marked(self, exam: MockExam) -> list[tuple[Sitting, list[Marked]]]:
        """Every sitting of `exam` with its items marked, by student."""
        return [(sitting, self.mark(exam, sitting)) for sitting in self.store.everyone(exam.name)]

    def analysis(self, exam: MockExam) -> ItemAnalysis:
        """The item analysis of the marked sittings, by the same code as `qkv stats` (facility, discrimination,
        alpha, the misconceptions named): each problem one item."""
        marked = self.marked(exam)
        ids = tuple(p.id for p in exam.problems)
        held: dict[tuple[str, str], set[str]] = {}
        messages: dict[tuple[str, str], str] = {}
        for sitting, marks in marked:
            for mark in marks:
                for part in mark.judged.parts:
                    if not part.correct and part.misconception:
                        held.setdefault((mark.problem.id, part.misconception), set()).add(sitting.student)
                        messages[(mark.problem.id, part.misconception)] = part.message
        scores = Scores(tuple(s.student for s, _ in marked), tuple((pid, "", "visible") for pid in ids),
                        np.array([[m.points for m in marks] for _, marks in marked]).reshape(len(marked), len(ids)),
                        np.array([p.points for p in exam.problems]), held, {},
                        problem_kinds={p.id: p.kind for p in exam.problems})
        return analyse(scores, ids, messages=messages)


def _draw(name: str, settings: ExamSettings, bank: Bank) -> tuple[Problem, ...]:
    kinds = tuple(settings.kinds) or DEFAULT_KINDS
    code = [k for k in kinds if k in KINDS and KINDS[k].code]
    if code:
        raise QkvError("course.yaml", f"exams.{name}.kinds: {', '.join(code)} run code; a mock exam takes written "
                                      "kinds only")
    try:
        drawn = draw_exam(bank, ExamSpec(tuple(settings.topics), kinds, settings.count, settings.seed))
    except QkvError as err:
        raise QkvError("course.yaml", f"exams.{name}: {err.what}") from None
    return tuple(item.problem for item in drawn.items)


__all__ = ["CLOCK", "ExamRooms", "Marked", "MockExam", "Progress", "extra_percent", "when"]
