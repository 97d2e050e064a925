"""The practice rule (qkv_runtime/practice.py, with autograder/practice/rule.py's fsrs reviews): mastery up and down,
misconceptions held and cleared, reviews scheduled by fsrs, and the order in which the next problem is chosen; with
Hypothesis over whole histories.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from fsrs import Card, Rating, Scheduler
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.practice import (
    CLEARED_AFTER, FALL_BACK, Memory, PracticeProblem, Reason, Try, after, next_problem, rating_of, remember,
)

T0 = datetime(2027, 3, 1, 9, 0, tzinfo=timezone.utc)
MIX = "you divided by d instead of its square root"
ROWS = "you normalised the columns, not the rows"
CATALOGUE = (
    PracticeProblem("scale-a", "attention", frozenset({MIX})),
    PracticeProblem("scale-b", "attention", frozenset({MIX, ROWS})),
    PracticeProblem("rows", "attention", frozenset({ROWS})),
    PracticeProblem("mask-a", "masking"),
    PracticeProblem("norm-a", "layer-norm"),
)


def tries(*spec: tuple[str, float] | tuple[str, float, tuple[str, ...]], start: datetime = T0,
          gap: timedelta = timedelta(minutes=1)) -> list[Try]:
    """Tries a minute apart: (problem, score) or (problem, score, misconceptions named)."""
    return [Try(s[0], i, start + i * gap, s[1], s[2] if len(s) > 2 else ()) for i, s in enumerate(spec)]


# ------------------------------------------------------------------ mastery


def test_mastery_grows_with_consecutive_right_tries_and_falls_back_on_a_wrong_one():
    memory = Memory()
    seen = []
    for attempt in tries(("mask-a", 1), ("mask-a", 1), ("mask-a", 0), ("mask-a", 1), ("mask-a", 1)):
        memory = after(CATALOGUE, memory, attempt)
        seen.append((round(memory.of("mask-a").mastery, 9), memory.of("mask-a").streak))
    # +0.2, +0.4 (a run of two), halved by the wrong one, then the run starts again: +0.2, +0.4
    assert seen == [(0.2, 1), (0.6, 2), (0.3, 0), (0.5, 1), (0.9, 2)]


def test_three_right_in_a_row_is_full_mastery_and_it_stays_there():
    memory = remember(CATALOGUE, tries(*[("norm-a", 1)] * 5))
    assert memory.of("norm-a").mastery == 1.0 and memory.of("norm-a").tries == 5


def test_a_partly_right_try_ends_the_run_like_a_wrong_one():
    memory = remember(CATALOGUE, tries(("mask-a", 1), ("mask-a", 1), ("mask-a", 0.75), ("mask-a", 1)))
    assert memory.of("mask-a").mastery == pytest.approx(0.6 * FALL_BACK + 0.2)


def test_topic_mastery_is_the_mean_over_its_problems_weakest_first():
    memory = remember(CATALOGUE, tries(("norm-a", 1), ("norm-a", 1), ("scale-a", 1)))
    assert memory.topic_mastery(CATALOGUE) == {"masking": 0.0, "attention": pytest.approx(0.2 / 3),
                                                "layer-norm": pytest.approx(0.6)}


scores = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
histories = st.lists(st.tuples(st.sampled_from([p.id for p in CATALOGUE] + ["gone-from-the-bank"]), scores,
                               st.lists(st.sampled_from([MIX, ROWS]), max_size=2).map(tuple),
                               st.integers(0, 3 * 24 * 60)), max_size=25)


def as_tries(history) -> list[Try]:
    """Tries in time order, each some minutes after the last; misconceptions only on wrong tries."""
    out, at = [], T0
    for i, (pid, score, named, minutes) in enumerate(history):
        at += timedelta(minutes=minutes)
        out.append(Try(pid, i, at, score, () if score >= 1 else named))
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(histories)
def test_mastery_stays_between_0_and_1_rises_on_right_falls_on_not_right(history):
    memory = Memory()
    for attempt in as_tries(history):
        before = memory.of(attempt.problem_id)
        memory = after(CATALOGUE, memory, attempt)
        now = memory.of(attempt.problem_id)
        assert 0.0 <= now.mastery <= 1.0
        if attempt.right:
            assert now.mastery >= before.mastery and now.streak == before.streak + 1
        else:
            assert now.mastery == before.mastery * FALL_BACK and now.streak == 0


# ------------------------------------------------------------ misconceptions


def test_a_misconception_is_held_until_cleared_by_right_answers_to_problems_that_can_show_it():
    named = tries(("scale-a", 0, (MIX,)))
    memory = remember(CATALOGUE, named)
    assert [h.name for h in memory.held] == [MIX]
    # right answers elsewhere do not clear it
    memory = remember(CATALOGUE, named + tries(("mask-a", 1), ("norm-a", 1), start=T0 + timedelta(hours=1)))
    assert [(h.name, h.right_since) for h in memory.held] == [(MIX, 0)]
    # one right answer to a problem that can show it is not enough; CLEARED_AFTER are
    cleared = named + tries(*[("scale-b", 1)] * CLEARED_AFTER, start=T0 + timedelta(hours=1))
    assert [(h.name, h.right_since) for h in remember(CATALOGUE, cleared[:-1]).held] == [(MIX, CLEARED_AFTER - 1)]
    assert remember(CATALOGUE, cleared).held == ()


def test_naming_it_again_starts_the_count_again_and_puts_it_first():
    memory = remember(CATALOGUE, tries(("scale-a", 0, (MIX,)), ("rows", 0, (ROWS,)), ("scale-a", 1),
                                       ("scale-b", 0.5, (MIX,))))
    assert [(h.name, h.right_since, h.named_by) for h in memory.held] == [(MIX, 0, "scale-b"), (ROWS, 0, "rows")]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(histories)
def test_held_is_exactly_what_was_named_and_not_cleared_since(history):
    attempts = as_tries(history)
    memory = remember(CATALOGUE, attempts)
    detects = {p.id: p.detects for p in CATALOGUE}
    for name in (MIX, ROWS):
        last = max((i for i, a in enumerate(attempts) if name in a.misconceptions), default=None)
        if last is None:
            assert name not in [h.name for h in memory.held]
            continue
        clearing = sum(1 for a in attempts[last + 1:] if a.right and (
            name in detects.get(a.problem_id, ()) or a.problem_id == attempts[last].problem_id))
        assert (name in [h.name for h in memory.held]) == (clearing < CLEARED_AFTER)


# ------------------------------------------------------------------ reviews


def test_reviews_are_the_fsrs_librarys_schedule():
    """Each problem's card is what fsrs itself gives for the same ratings at the same times."""
    attempts = tries(("mask-a", 1), ("mask-a", 0), ("mask-a", 0.5), ("mask-a", 1), gap=timedelta(days=2))
    scheduler, card = Scheduler(enable_fuzzing=False), Card(card_id=1, due=T0)
    for attempt, rating in zip(attempts, (Rating.Good, Rating.Again, Rating.Hard, Rating.Good)):
        assert rating_of(attempt.score) == rating
        card, _ = scheduler.review_card(card, rating, review_datetime=attempt.at)
    memory = remember(CATALOGUE, attempts)
    assert memory.cards["mask-a"].due == card.due and memory.cards["mask-a"].stability == card.stability
    assert remember(CATALOGUE, attempts).cards["mask-a"].due == card.due  # a replay schedules the same


def test_a_wrong_answer_comes_back_for_review_sooner_than_a_right_one():
    memory = remember(CATALOGUE, tries(("mask-a", 0), ("norm-a", 1)))
    assert memory.cards["mask-a"].due < memory.cards["norm-a"].due
    assert [pid for pid, _ in memory.due(T0 + timedelta(minutes=5))] == ["mask-a"]  # fsrs: Again 1 min, Good 10


# -------------------------------------------------------------- next problem


def test_nothing_tried_gives_the_weakest_topic_first():
    chosen = next_problem(CATALOGUE, Memory(), T0)
    assert chosen.reason == Reason.WEAKEST_TOPIC and chosen.problem_id in {"scale-a", "scale-b", "rows"}


def test_a_held_misconception_comes_before_a_due_review_before_the_weakest_topic():
    # mask-a wrong (due again within minutes), then MIX named on scale-a
    memory = remember(CATALOGUE, tries(("mask-a", 0), ("norm-a", 1), ("scale-a", 0, (MIX,))))
    later = T0 + timedelta(hours=1)
    assert memory.due(later) and memory.held
    first = next_problem(CATALOGUE, memory, later)
    assert (first.reason, first.misconception) == (Reason.MISCONCEPTION, MIX)
    assert first.problem_id == "scale-b"  # can show it too, and is not the problem just tried
    cleared = remember(CATALOGUE, tries(("mask-a", 0), ("norm-a", 1), ("scale-a", 0, (MIX,)), ("scale-b", 1),
                                        ("scale-a", 1)))
    assert cleared.held == ()
    second = next_problem(CATALOGUE, cleared, later)
    assert (second.reason, second.problem_id) == (Reason.REVIEW, "mask-a")
    rested = next_problem(CATALOGUE, remember(CATALOGUE, tries(("mask-a", 1), ("norm-a", 1))), T0 + timedelta(minutes=5))
    assert (rested.reason, rested.problem_id) == (Reason.WEAKEST_TOPIC, "rows")  # attention: nothing mastered


def test_a_misconception_only_the_last_problem_shows_brings_it_back():
    memory = remember(CATALOGUE, tries(("rows", 0, (ROWS,)), ("scale-b", 1)))
    assert [(h.name, h.right_since) for h in memory.held] == [(ROWS, 1)]
    assert next_problem(CATALOGUE, memory, T0).problem_id == "rows"
    alone = (PracticeProblem("rows", "attention", frozenset({ROWS})),)
    again = next_problem(alone, remember(alone, tries(("rows", 0, (ROWS,)))), T0)
    assert (again.problem_id, again.reason) == ("rows", Reason.MISCONCEPTION)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(histories, st.integers(0, 30 * 24 * 60))
def test_the_next_problem_follows_the_order(history, minutes_later):
    attempts = as_tries(history)
    memory = remember(CATALOGUE, attempts)
    now = (attempts[-1].at if attempts else T0) + timedelta(minutes=minutes_later)
    chosen = next_problem(CATALOGUE, memory, now)
    ids = {p.id for p in CATALOGUE}
    assert chosen is not None and chosen.problem_id in ids
    if memory.held:
        first = memory.held[0]
        assert chosen.reason == Reason.MISCONCEPTION and chosen.misconception == first.name
        assert first.name in dict((p.id, p.detects) for p in CATALOGUE)[chosen.problem_id] \
            or chosen.problem_id == first.named_by
    elif [pid for pid, _ in memory.due(now) if pid in ids]:
        assert chosen.reason == Reason.REVIEW
        assert chosen.problem_id == [pid for pid, _ in memory.due(now) if pid in ids][0]
    else:
        assert chosen.reason == Reason.WEAKEST_TOPIC
        topics = memory.topic_mastery(CATALOGUE)
        topic = next(p.topic for p in CATALOGUE if p.id == chosen.problem_id)
        assert topics[topic] == min(topics.values())


def test_an_empty_catalogue_has_no_next_problem():
    assert next_problem((), Memory(), T0) is None
