"""autograder/serve/pages.py: when a pending attempt's page looks again (its data-refresh)."""

from __future__ import annotations

import pytest

from autograder.serve.pages import FIRST_LOOK_S, LONGEST_LOOK_S, next_look_s


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
