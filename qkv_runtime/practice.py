"""The practice rule: a student's tries, oldest first, replayed into what practice remembers of them (mastery,
misconceptions held), and the next problem chosen from it and the reviews due. Pure: no clock, no files, no
scheduler; the caller gives the reviews due (autograder/practice/rule.py schedules them with fsrs; the release's
self-check has none), so the service, `qkv practice` and the offline self-check choose by this one rule.

Mastery of a problem, from 0 to 1, in the spirit of PrairieLearn's homework points: a fully right try adds
STREAK_STEP times the run of consecutive fully right tries it extends (0.2, then 0.4, then 0.6: three right in a
row from nothing is full mastery); a try that is not fully right (a wrong or partly right answer, a skip) ends the
run and keeps FALL_BACK (half) of the mastery. A topic's mastery is the mean over its problems, untried ones at 0.

A misconception is held from the try whose wrong answer names it until CLEARED_AFTER fully right tries on problems
that can name it (the one that named it among them); naming it again starts the count again.

The next problem: one that can name a held misconception (the most recently named first), else the review most
overdue (the caller's list), else the weakest topic's weakest problem (the least mastered, then the least tried,
then the least recently tried). Among the problems that fit, another than the one just tried comes first; then by id.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

STREAK_STEP = 0.2
FALL_BACK = 0.5
CLEARED_AFTER = 2


@dataclass(frozen=True)
class PracticeProblem:
    """A problem as the rule sees it."""

    id: str
    topic: str  # the topic mastery is shown for (the bank's top-level topic)
    detects: FrozenSet[str] = frozenset()  # the misconceptions a wrong answer to it can name


@dataclass(frozen=True)
class Try:
    """One problem tried once, on a variant of its own."""

    problem_id: str
    seed: int  # the variant's seed
    at: datetime  # timezone-aware
    score: float  # the share of the points earned, 0 to 1
    misconceptions: Tuple[str, ...] = ()  # named by its wrong answers

    @property
    def right(self) -> bool:
        return self.score >= 1.0


@dataclass(frozen=True)
class ProblemMemory:
    mastery: float = 0.0
    streak: int = 0  # consecutive fully right tries, the last one included
    tries: int = 0
    last_try: Optional[datetime] = None


@dataclass(frozen=True)
class HeldMisconception:
    name: str
    named_by: str  # the problem whose wrong answer named it last
    named_at: datetime
    right_since: int = 0  # fully right tries since, on problems that can name it


class Reason(enum.Enum):
    MISCONCEPTION = "a misconception you hold"
    REVIEW = "a review due"
    WEAKEST_TOPIC = "your weakest topic"


@dataclass(frozen=True)
class NextProblem:
    problem_id: str
    reason: Reason
    misconception: Optional[str] = None  # the held misconception it targets


@dataclass(frozen=True)
class Memory:
    problems: Dict[str, ProblemMemory] = field(default_factory=dict)
    held: Tuple[HeldMisconception, ...] = ()  # the most recently named first
    last_problem: Optional[str] = None

    def of(self, problem_id: str) -> ProblemMemory:
        return self.problems.get(problem_id, ProblemMemory())

    def topic_mastery(self, catalogue: Iterable[PracticeProblem]) -> Dict[str, float]:
        """Each topic's mean mastery over its problems, weakest first (then by name)."""
        by_topic: Dict[str, List[float]] = {}
        for problem in catalogue:
            by_topic.setdefault(problem.topic, []).append(self.of(problem.id).mastery)
        means = {topic: sum(values) / len(values) for topic, values in by_topic.items()}
        return dict(sorted(means.items(), key=lambda tm: (tm[1], tm[0])))


def _mastery_after(memo: ProblemMemory, attempt: Try) -> Tuple[float, int]:
    if attempt.right:
        streak = memo.streak + 1
        return min(1.0, memo.mastery + STREAK_STEP * streak), streak
    return memo.mastery * FALL_BACK, 0


def _detectors(catalogue: Iterable[PracticeProblem]) -> Dict[str, FrozenSet[str]]:
    """Each misconception the catalogue can show: the problems that can."""
    index: Dict[str, set] = {}
    for problem in catalogue:
        for name in problem.detects:
            index.setdefault(name, set()).add(problem.id)
    return {name: frozenset(ids) for name, ids in index.items()}


def _can_show(detectors: Dict[str, FrozenSet[str]], held: HeldMisconception) -> FrozenSet[str]:
    return detectors.get(held.name, frozenset()) | {held.named_by}


def _step(detectors: Dict[str, FrozenSet[str]], memory: Memory, attempt: Try) -> Memory:
    memo = memory.of(attempt.problem_id)
    mastery, streak = _mastery_after(memo, attempt)
    problems = {**memory.problems, attempt.problem_id: ProblemMemory(mastery, streak, memo.tries + 1, attempt.at)}
    if not attempt.right and not attempt.misconceptions:  # nothing named, nothing cleared
        return Memory(problems, memory.held, attempt.problem_id)
    held: List[HeldMisconception] = []
    for each in memory.held:
        if each.name in attempt.misconceptions:
            continue  # named again: held afresh below, first in line
        if attempt.right and attempt.problem_id in _can_show(detectors, each):
            if each.right_since + 1 >= CLEARED_AFTER:
                continue
            each = replace(each, right_since=each.right_since + 1)
        held.append(each)
    named = tuple(HeldMisconception(name, attempt.problem_id, attempt.at) for name in dict.fromkeys(attempt.misconceptions))
    return Memory(problems, named + tuple(held), attempt.problem_id)


def after(catalogue: Iterable[PracticeProblem], memory: Memory, attempt: Try) -> Memory:
    """The memory once one more try is counted: the rule's step (the module's docstring). A try of a problem not
    in the catalogue (the bank changed) still counts for its own problem."""
    return _step(_detectors(catalogue), memory, attempt)


def remember(catalogue: Iterable[PracticeProblem], tries: Iterable[Try]) -> Memory:
    """The tries, oldest first, replayed by the rule."""
    detectors, memory = _detectors(catalogue), Memory()
    for attempt in tries:
        memory = _step(detectors, memory, attempt)
    return memory


def next_problem(catalogue: Sequence[PracticeProblem], memory: Memory, due: Sequence[str] = ()) -> Optional[NextProblem]:
    """The problem to give next by the rule (the module's docstring), `due` the problems whose review is due, the
    most overdue first; None for an empty catalogue."""
    by_id, detectors = {p.id: p for p in catalogue}, _detectors(catalogue)

    def order(i: str) -> tuple:
        memo = memory.of(i)
        last = memo.last_try.timestamp() if memo.last_try is not None else float("-inf")
        return (i == memory.last_problem, memo.mastery, memo.tries, last, i)

    def pick(ids: Iterable[str]) -> Optional[str]:
        return min((i for i in ids if i in by_id), default=None, key=order)

    for held in memory.held:
        chosen = pick(_can_show(detectors, held))
        if chosen is not None:
            return NextProblem(chosen, Reason.MISCONCEPTION, held.name)
    reviews = [pid for pid in due if pid in by_id]
    if reviews:
        return NextProblem(reviews[0], Reason.REVIEW)
    for topic in memory.topic_mastery(catalogue):
        chosen = pick(p.id for p in catalogue if p.topic == topic)
        if chosen is not None:
            return NextProblem(chosen, Reason.WEAKEST_TOPIC)
    return None


def held_lines(memory: Memory) -> List[str]:
    """The misconceptions held, as the drill and the self-check tell a student in their terminal."""
    if not memory.held:
        return ["No misconception held."]
    return ([f"Misconceptions you hold (each cleared by {CLEARED_AFTER} right answers to problems that can show it):"]
            + [f"  - {h.name} (named in {h.named_by}; {h.right_since}/{CLEARED_AFTER} right answers since)"
               for h in memory.held])
