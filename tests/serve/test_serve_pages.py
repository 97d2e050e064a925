"""autograder/serve/pages.py: when a pending attempt's page looks again (its data-refresh), and what it shows."""

from __future__ import annotations

import pytest

from autograder.grade.gradebook.records import Attempt, AttemptState
from autograder.serve.pages import FIRST_LOOK_S, LONGEST_LOOK_S, AttemptView, attempt_view, next_look_s


@pytest.mark.parametrize(("waited", "again"), [(0.0, 0.25), (0.3, 0.25), (1.0, 0.5), (4.0, 2.0), (6.0, 3.0),
                                                (3600.0, 3.0)])
def test_a_page_looks_again_after_half_the_wait_between_a_quarter_second_and_3_s(waited: float, again: float) -> None:
    assert next_look_s(waited) == pytest.approx(again)


def test_a_score_stays_unseen_for_at_most_half_the_grading_time_beyond_the_first_look() -> None:
    # a page that follows its data-refresh from its first look: whenever grading ends, the look that sees it comes
    # at most half the time it took later (or FIRST_LOOK_S, or LONGEST_LOOK_S, whichever bounds it)
    looks, t = [], 0.0
    while t < 120:
        t += next_look_s(t)
        looks.append(t)
    for graded in (0.01, 0.2, 0.9, 2.5, 7.0, 60.0):
        seen = next(look for look in looks if look >= graded)
        assert seen - graded <= max(FIRST_LOOK_S, min(LONGEST_LOOK_S, graded / 2)) + 1e-9, (graded, seen)
    assert all(b - a <= LONGEST_LOOK_S + 1e-9 for a, b in zip(looks, looks[1:]))  # a queue is looked at every 3 s


def attempt(state: AttemptState, grading: int | None, status: str | None) -> Attempt:
    return Attempt("a1", "s2026001", 1000.0, "ada.py", "d" * 64, state, grading, status)


@pytest.mark.parametrize(("state", "grading", "status", "view"), [
    (AttemptState.QUEUED, None, None, AttemptView(0.5, False)),  # handed in a second ago
    (AttemptState.GRADING, None, None, AttemptView(0.5, False)),
    # queued again by a regrade: it waits, and its last grading's line is not shown (nor its result read)
    (AttemptState.QUEUED, 7, "load_error", AttemptView(0.5, False)),
    (AttemptState.GRADING, 7, "graded", AttemptView(0.5, False)),
    (AttemptState.GRADED, 7, "graded", AttemptView(None, False)),
    (AttemptState.GRADED, 7, "load_error", AttemptView(None, True)),
])
def test_an_attempt_waits_by_its_state_and_only_a_failed_grading_shows_its_line(state, grading, status, view):
    assert attempt_view(attempt(state, grading, status), now=1001.0) == view
