"""The practice rule: a student's tries, oldest first, replayed into what practice remembers of them, and the next
problem chosen from it. Pure: no clock, no files; the caller gives the time.

Mastery of a problem, from 0 to 1, in the spirit of PrairieLearn's homework points: a fully right try adds
STREAK_STEP times the run of consecutive fully right tries it extends (0.2, then 0.4, then 0.6: three right in a
row from nothing is full mastery); a try that is not fully right (a wrong or partly right answer, a skip) ends the
run and keeps FALL_BACK (half) of the mastery. A topic's mastery is the mean over its problems, untried ones at 0.

A misconception is held from the try whose wrong answer names it until CLEARED_AFTER fully right tries on problems
that can name it (the one that named it among them); naming it again starts the count again.

Reviews: each tried problem is an FSRS card (the `fsrs` library, default parameters, no fuzzing so that a replay
gives the same schedule): a fully right try is rated Good, at least half right Hard, less Again.

The next problem: one that can name a held misconception (the most recently named first), else the review most
overdue, else the weakest topic's weakest problem (the least mastered, then the least tried, then the least
recently tried). Among the problems that fit, another than the one just tried comes first; then by id.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from fsrs import Card, Rating, Scheduler

STREAK_STEP = 0.2
FALL_BACK = 0.5
CLEARED_AFTER = 2
HARD_FROM = 0.5  # the share of the points from which a try not fully right is rated Hard, not Again

# no fuzzing: the schedule is replayed from the tries on every start, and must come out the same each time
SCHEDULER = Scheduler(enable_fuzzing=False)


@dataclass(frozen=True)
class PracticeProblem:
    """A problem as the rule sees it."""

    id: str
    topic: str  # the topic mastery is shown for (the bank's top-level topic)
    detects: frozenset[str] = frozenset()  # the misconceptions a wrong answer to it can name


@dataclass(frozen=True)
class Try:
    """One problem tried once, on a variant of its own."""

    problem_id: str
    seed: int  # the variant's seed
    at: datetime  # timezone-aware
    score: float  # the share of the points earned, 0 to 1
    misconceptions: tuple[str, ...] = ()  # named by its wrong answers

    @property
    def right(self) -> bool:
        return self.score >= 1.0


@dataclass(frozen=True)
class ProblemMemory:
    mastery: float = 0.0
    streak: int = 0  # consecutive fully right tries, the last one included
    tries: int = 0
    last_try: datetime | None = None
    card: Card | None = None  # its FSRS card; None until first tried


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
    misconception: str | None = None  # the held misconception it targets


@dataclass(frozen=True)
class Memory:
    problems: dict[str, ProblemMemory] = field(default_factory=dict)
    held: tuple[HeldMisconception, ...] = ()  # the most recently named first
    last_problem: str | None = None

    def of(self, problem_id: str) -> ProblemMemory:
        return self.problems.get(problem_id, ProblemMemory())

    def topic_mastery(self, catalogue: Iterable[PracticeProblem]) -> dict[str, float]:
        """Each topic's mean mastery over its problems, weakest first (then by name)."""
        by_topic: dict[str, list[float]] = {}
        for problem in catalogue:
            by_topic.setdefault(problem.topic, []).append(self.of(problem.id).mastery)
        means = {topic: sum(values) / len(values) for topic, values in by_topic.items()}
        return dict(sorted(means.items(), key=lambda tm: (tm[1], tm[0])))

    def due(self, now: datetime) -> list[tuple[str, datetime]]:
        """(problem id, due) of every review due at `now`, the most overdue first."""
        cards = [(pid, memo.card.due) for pid, memo in self.problems.items() if memo.card is not None]
        return sorted(((pid, due) for pid, due in cards if due <= now), key=lambda pd: (pd[1], pd[0]))


def rating_of(score: float) -> Rating:
    if score >= 1.0:
        return Rating.Good
    return Rating.Hard if score >= HARD_FROM else Rating.Again


def _mastery_after(memo: ProblemMemory, attempt: Try) -> tuple[float, int]:
    if attempt.right:
        streak = memo.streak + 1
        return min(1.0, memo.mastery + STREAK_STEP * streak), streak
    return memo.mastery * FALL_BACK, 0


def _review(memo: ProblemMemory, attempt: Try, card_id: int) -> Card:
    card = memo.card or Card(card_id=card_id, due=attempt.at)  # an explicit id: fsrs otherwise sleeps to make one
    reviewed, _ = SCHEDULER.review_card(card, rating_of(attempt.score), review_datetime=attempt.at)
    return reviewed


def _detectors(catalogue: Iterable[PracticeProblem]) -> dict[str, frozenset[str]]:
    """Each misconception the catalogue can show: the problems that can."""
    index: dict[str, set[str]] = {}
    for problem in catalogue:
        for name in problem.detects:
            index.setdefault(name, set()).add(problem.id)
    return {name: frozenset(ids) for name, ids in index.items()}


def _can_show(detectors: dict[str, frozenset[str]], held: HeldMisconception) -> frozenset[str]:
    return detectors.get(held.name, frozenset()) | {held.named_by}


def _step(detectors: dict[str, frozenset[str]], memory: Memory, attempt: Try) -> Memory:
    memo = memory.of(attempt.problem_id)
    mastery, streak = _mastery_after(memo, attempt)
    card = _review(memo, attempt, len(memory.problems) + 1)
    problems = {**memory.problems, attempt.problem_id: ProblemMemory(mastery, streak, memo.tries + 1, attempt.at, card)}
    if not attempt.right and not attempt.misconceptions:  # nothing named, nothing cleared
        return Memory(problems, memory.held, attempt.problem_id)
    held: list[HeldMisconception] = []
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


def next_problem(catalogue: Sequence[PracticeProblem], memory: Memory, now: datetime) -> NextProblem | None:
    """The problem to give next by the rule (the module's docstring); None for an empty catalogue."""
    by_id, detectors = {p.id: p for p in catalogue}, _detectors(catalogue)

    def pick(ids: Iterable[str]) -> str | None:
        return min((i for i in ids if i in by_id), default=None, key=lambda i: (
            i == memory.last_problem, memory.of(i).mastery, memory.of(i).tries,
            memory.of(i).last_try or datetime.min.replace(tzinfo=now.tzinfo), i))

    for held in memory.held:
        chosen = pick(_can_show(detectors, held))
        if chosen is not None:
            return NextProblem(chosen, Reason.MISCONCEPTION, held.name)
    due = [pid for pid, _ in memory.due(now) if pid in by_id]
    if due:
        return NextProblem(due[0], Reason.REVIEW)
    for topic in memory.topic_mastery(catalogue):
        chosen = pick(p.id for p in catalogue if p.topic == topic)
        if chosen is not None:
            return NextProblem(chosen, Reason.WEAKEST_TOPIC)
    return None
