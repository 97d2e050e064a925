"""The practice rule with its reviews: the tries in; what practice remembers (qkv_runtime/practice.py: mastery,
misconceptions held, the next problem) with each tried problem's review scheduled, and the next problem chosen
with the reviews due, out. Pure: no clock, no files; the caller gives the time.

The rule itself (mastery, misconceptions, the order of the next problem) is qkv_runtime.practice, one module for
the service, `qkv practice` and the release's offline self-check (which has no scheduler and so no reviews due).
What is here is only what needs fsrs: each tried problem is an FSRS card (the `fsrs` library, default parameters,
no fuzzing so that a replay gives the same schedule): a fully right try is rated Good, at least half right Hard,
less Again; the reviews due at a time are the cards due then, the most overdue first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fsrs import Card, Rating, Scheduler

from qkv_runtime import practice
from qkv_runtime.practice import (
    CLEARED_AFTER, FALL_BACK, STREAK_STEP, HeldMisconception, NextProblem, PracticeProblem, ProblemMemory, Reason, Try,
)

__all__ = [
    "CLEARED_AFTER", "FALL_BACK", "HARD_FROM", "STREAK_STEP", "HeldMisconception", "Memory", "NextProblem",
    "PracticeProblem", "ProblemMemory", "Reason", "Try", "after", "next_problem", "rating_of", "remember",
]

HARD_FROM = 0.5  # the share of the points from which a try not fully right is rated Hard, not Again

# no fuzzing: the schedule is replayed from the tries on every start, and must come out the same each time
SCHEDULER = Scheduler(enable_fuzzing=False)


@dataclass(frozen=True)
class Memory(practice.Memory):
    """The rule's memory, and each tried problem's FSRS card."""

    cards: Mapping[str, Card] = field(default_factory=dict)

    def due(self, now: datetime) -> list[tuple[str, datetime]]:
        """(problem id, due) of every review due at `now`, the most overdue first."""
        return sorted(((pid, card.due) for pid, card in self.cards.items() if card.due <= now),
                      key=lambda pd: (pd[1], pd[0]))


def rating_of(score: float) -> Rating:
    if score >= 1.0:
        return Rating.Good
    return Rating.Hard if score >= HARD_FROM else Rating.Again


def _reviewed(cards: Mapping[str, Card], attempt: Try) -> Card:
    """The try's problem's card once reviewed by the try."""
    # an explicit id (the order the problem was first tried in): fsrs otherwise sleeps to make one
    card = cards.get(attempt.problem_id) or Card(card_id=len(cards) + 1, due=attempt.at)
    reviewed, _ = SCHEDULER.review_card(card, rating_of(attempt.score), review_datetime=attempt.at)
    return reviewed


def _with(known: practice.Memory, cards: Mapping[str, Card]) -> Memory:
    return Memory(known.problems, known.held, known.last_problem, cards)


def after(catalogue: Iterable[PracticeProblem], memory: Memory, attempt: Try) -> Memory:
    """The memory once one more try is counted (qkv_runtime.practice.after), its problem's card reviewed."""
    return _with(practice.after(catalogue, memory, attempt),
                 {**memory.cards, attempt.problem_id: _reviewed(memory.cards, attempt)})


def remember(catalogue: Iterable[PracticeProblem], tries: Iterable[Try]) -> Memory:
    """The tries, oldest first, replayed by the rule, each reviewing its problem's card."""
    tries = tuple(tries)
    cards: dict[str, Card] = {}
    for attempt in tries:
        cards[attempt.problem_id] = _reviewed(cards, attempt)
    return _with(practice.remember(catalogue, tries), cards)


def next_problem(catalogue: Sequence[PracticeProblem], memory: Memory, now: datetime) -> NextProblem | None:
    """The problem to give next by the rule (qkv_runtime.practice.next_problem), with the reviews due at `now`."""
    return practice.next_problem(catalogue, memory, [pid for pid, _ in memory.due(now)])
