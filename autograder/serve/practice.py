"""The service's practice space: course.yaml's `practice:` (which topics and kinds), the bank and the practice store
in; a student's next variant, their judged tries, their memory and the class's out.

What a student is given next and what they are shown to know is the practice rule's (autograder/practice/rule.py),
replayed from the stored tries, the same rule the offline drill follows. Every variant is drawn on a seed of its own,
kept with it; a written answer is judged by the kinds' own code (autograder/practice/answers.py) in the web
process, and kept before the page that shows its verdict is sent. A code problem's try is kept as it is handed in
and graded in the sandbox by the practice grader of the served assignment that grades the problem
(serve/practice_code.py), never as an attempt; its page shows it waiting until then.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from contextlib import AbstractContextManager
from typing import Optional, Union
from pathlib import Path

from autograder.grade.gradebook.practice import PracticeStore, PracticeVariant
from autograder.grade.route import Route
from autograder.kinds import Problem
from autograder.practice.answers import Judged
from autograder.practice.catalogue import catalogue
from autograder.practice.rule import Memory, PracticeProblem, next_problem, remember
from autograder.serve.course import ServedAssignment
from autograder.serve.pages import Refusal
from autograder.serve.practice_code import CODE_CHARS, PracticeCodeGrader

SEEDS = 2**31  # a variant's seed: any below this (the drill's range, and an INTEGER in either database)


def moment(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


@dataclass(frozen=True)
class ClassView:
    students: int  # counted in the means: the roster's students, else those who practised
    topics: dict[str, float]  # each topic's mean mastery over them, weakest first
    held: list[tuple[str, int]]  # each misconception held now, and by how many students, most held first
    activity: list[tuple[str, int, Optional[float]]]  # (student, tries, last try) of each student who practised


@dataclass
class PracticeSpace:
    pool: dict[str, Problem]
    problems: tuple[PracticeProblem, ...]
    store: PracticeStore
    new_seed: Callable[[], int] = field(default=lambda: secrets.randbelow(SEEDS))
    code: dict[str, ServedAssignment] = field(default_factory=dict)  # each code problem's assignment, which grades it
    graders: dict[str, PracticeCodeGrader] = field(default_factory=dict)  # by assignment: its code tries' grader

    @classmethod
    def open(cls, pool: Iterable[Problem], where: Union[Path, str],
             code: Optional[dict[str, ServedAssignment]] = None) -> "PracticeSpace":
        problems = {p.id: p for p in pool}
        return cls(problems, catalogue(problems.values()), PracticeStore(where), code=dict(code or {}))

    def code_graders(self, open_route: Callable[[ServedAssignment], AbstractContextManager[Route]],
                     report: Callable[[str], None], on_graded: Callable[[str], None]) -> list[PracticeCodeGrader]:
        """A practice grader for each assignment that grades a code problem practised here, for the app's
        lifespan to start; `on_graded` is told each variant whose try's grading is stored (serve/results.py, for
        the held looks)."""
        for a in {a.name: a for a in self.code.values()}.values():
            self.graders[a.name] = PracticeCodeGrader(a, self.store.location, partial(open_route, a),
                                                      time.time, report, on_graded)
        return list(self.graders.values())

    def stop_graders(self) -> None:
        for grader in self.graders.values():
            grader.stop()

    def hand_in_code(self, variant: PracticeVariant, source: str, now: float) -> None:
        """A code try, kept (committed) before the page says it waits, and its grader woken; a variant answered or
        handed in already keeps what it has. Too much code is refused in one line, not kept."""
        if len(source) > CODE_CHARS:
            raise Refusal(413, f"the code is {len(source):,} characters; a practice try takes at most "
                               f"{CODE_CHARS:,}", "Too large")
        if not source.strip():
            raise Refusal(400, "no code was handed in: write the function in the box", "Not kept")
        self.store.hand_in_code(variant.id, variant.student, source, now)
        grader = self.graders.get(self.code[variant.problem].name)
        if grader is not None:
            grader.wake()

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.problems})

    def memory(self, student: str) -> tuple[Memory, int]:
        """(what the rule remembers of `student`, how many tries they made)."""
        tries = [v.as_try() for v in self.store.tries(student) if v.problem in self.pool]
        return remember(self.problems, tries), len(tries)

    def give(self, student: str, topic: Optional[str], now: float) -> str:
        """A new variant of the problem the rule chooses for `student` (in `topic`, or what they need most): its id."""
        if topic is not None and topic not in self.topics:
            raise Refusal(404, f"no topic called {topic!r} is practised here", "Not found")
        among = self.problems if topic is None else tuple(p for p in self.problems if p.topic == topic)
        chosen = next_problem(among, self.memory(student)[0], moment(now))
        if chosen is None:
            raise Refusal(404, "no problem to practise here", "Not found")
        why = f"chosen for {chosen.reason.value}" + (f": {chosen.misconception}" if chosen.misconception else "")
        return self.store.give(student, chosen.problem_id, self.new_seed(), why, now)

    def variant(self, variant: str, student: str) -> tuple[PracticeVariant, Problem]:
        """`student`'s own variant and its problem; another's, or one of a problem no longer practised, is 404."""
        found = self.store.variant(variant, student)
        if found is None or found.problem not in self.pool:
            raise Refusal(404, "no such practice problem", "Not found")
        return found, self.pool[found.problem]

    def keep(self, variant: PracticeVariant, judged: Judged, now: float) -> None:
        """The try, stored before the verdict is shown; a variant already answered keeps its first answer."""
        answers = None if judged.skipped else {p.label: p.typed for p in judged.parts}
        self.store.answer(variant.id, variant.student, now, judged.share, judged.misconceptions, answers)

    def class_view(self, roster_students: Optional[list[str]]) -> ClassView:
        everyone = self.store.everyone()
        students = roster_students if roster_students else sorted(everyone)
        memories = {s: remember(self.problems, [v.as_try() for v in everyone.get(s, []) if v.problem in self.pool])
                    for s in students}
        sums: Counter[str] = Counter()
        for memory in memories.values():
            sums.update(memory.topic_mastery(self.problems))
        topics = {t: (sums[t] / len(memories) if memories else 0.0) for t in self.topics}
        held = Counter(h.name for memory in memories.values() for h in memory.held)
        activity = [(s, len(vs), vs[-1].answered) for s, vs in sorted(everyone.items())]
        return ClassView(len(memories), dict(sorted(topics.items(), key=lambda tm: (tm[1], tm[0]))),
                         sorted(held.items(), key=lambda nc: (-nc[1], nc[0])), activity)


__all__ = ["ClassView", "PracticeSpace", "SEEDS", "moment"]
