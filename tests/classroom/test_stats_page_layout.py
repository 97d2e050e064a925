"""The stats page of a class of the bundled assignment's size, looked at in Chromium (Playwright) at a laptop's width:
a page one scrolls a few screens of, not 10,700 px; misconception labels in type as large as the page's notes; a
histogram whose axis counts whole students. And a heatmap drawn from a 4-D output says which slice it shows.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from autograder.classroom.stats import ChoiceItem, Scores, analyse
from autograder.classroom.stats_page import plots, stats_html
from autograder.grade.matrices import picture
from autograder.report.pictures import test_pictures as pictures_of
from page_look import WIDTHS, looks_finished

pytestmark = pytest.mark.slow  # a real browser

WIDTH = 1280
STUDENTS, PROBLEMS, TESTS_EACH = 60, 12, 7


def big_class() -> Scores:
    """60 students, 12 code problems of 7 hidden tests, 14 choice problems, 25 misconceptions worded as the bank's
    written ones are (sentences), scores drawn at random with a fixed seed."""
    rng = np.random.default_rng(7)
    columns = tuple((f"problem-{p:02d}", f"hidden-test-{t}", "hidden") for p in range(PROBLEMS)
                    for t in range(TESTS_EACH))
    columns += tuple((f"choice-{c:02d}", "answer", "hidden") for c in range(14))
    tests = (rng.random((STUDENTS, len(columns))) < rng.uniform(0.3, 0.95, len(columns))).astype(float)
    students = tuple(f"s{n:03d}" for n in range(STUDENTS))
    misconceptions = {(f"problem-{m % PROBLEMS:02d}",
                       f"you normalised F(x) and then added x; post-norm Add & Norm adds first and normalises the sum "
                       f"(case {m})"): {s for s in students if rng.random() < 0.2} for m in range(25)}
    answers = {s: {f"choice-{c:02d}": "ABCD"[int(rng.integers(4))] for c in range(14)} for s in students}
    kinds = {**{f"problem-{p:02d}": "implement" for p in range(PROBLEMS)},
             **{f"choice-{c:02d}": "multiple_choice" for c in range(14)}}
    return Scores(students, columns, tests, np.ones(len(columns)), misconceptions, answers, 1, kinds)


def analysis():
    scores = big_class()
    choices = {f"choice-{c:02d}": ChoiceItem("multiple_choice", ("A", "B", "C", "D"), "B",
                                             ("one", "two", "three", "four")) for c in range(14)}
    return analyse(scores, choices=choices)


@pytest.fixture(scope="module")
def stats_page(chromium_browser, tmp_path_factory):
    path = tmp_path_factory.mktemp("stats") / "stats.html"
    path.write_text(stats_html(analysis(), "Attention from scratch"), encoding="utf-8")
    page = chromium_browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(path.as_uri())
    yield page
    page.close()


def test_the_stats_page_of_a_class_is_a_few_screens_tall(stats_page):
    height = stats_page.evaluate("document.documentElement.scrollHeight")
    assert height <= 4 * 900, f"the stats page is {height} px tall at {WIDTH} px wide"
    assert stats_page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    # what folds away is one click from sight, and its rows are all there
    stats_page.click("#hidden-tests >> xpath=ancestor::details/summary")
    assert stats_page.locator("#hidden-tests tr[data-item]").count() == PROBLEMS * TESTS_EACH
    assert stats_page.locator("#hidden-tests").is_visible()


def test_misconception_labels_are_as_large_as_the_pages_notes(stats_page):
    """Each label's rendered glyph height, from the SVG as drawn, against the page's note type (0.9em)."""
    labels = stats_page.evaluate("""() => {
        const svg = document.querySelector('#plot-misconceptions svg');
        return Array.from(svg.querySelectorAll('g[id^="ytick"] text, g[id^="ytick"] use')).length > 0
            ? Array.from(svg.querySelectorAll('g[id^="ytick"]')).map(g => g.getBoundingClientRect().height) : [];
    }""")
    note = stats_page.evaluate("parseFloat(getComputedStyle(document.querySelector('.note')).fontSize)")
    assert labels, "no label drawn"
    # a label of two lines is about twice the height of a line of its type: one line at least the note's
    assert min(labels) >= 0.75 * note, (labels, note)
    width = stats_page.evaluate("document.querySelector('#plot-misconceptions svg').getBoundingClientRect().width")
    assert width <= WIDTH / 2 + 50


def test_the_histogram_counts_whole_students():
    """Three students: matplotlib's own ticks would be 0, 0.25, 0.5, ... students."""
    scores = Scores(("a", "b", "c"), (("P", "t", "hidden"),), np.array([[1.0], [0.0], [1.0]]), np.array([1.0]), {},
                    {}, 0, {"P": "implement"})
    figure = str(plots(analyse(scores))["histogram"])
    y_ticks = re.findall(r'<g id="ytick_\d+">.*?<!-- ([-\d.−]+) -->', figure, re.S)
    assert y_ticks and all(float(t.replace("−", "-")).is_integer() for t in y_ticks), y_ticks


def test_a_heatmap_of_a_4d_output_says_which_slice_it_shows():
    want = np.full((2, 3, 4, 4), 0.25)
    got = want.copy()
    got[0, 0, 0] = [0.7, 0.1, 0.1, 0.1]
    record = picture([got], [want], (), {})
    images = pictures_of(record, "t1")
    yours = images[0]
    assert "[0, 0, :, :]" in yours.caption and "2 × 3 × 4 × 4" in yours.caption, yours.caption
    assert "[0, 0, :, :]" in yours.alt
    # a 2-D output is the whole of itself: no slice named
    plain = pictures_of(picture([got[0, 0]], [want[0, 0]], (), {}), "t1")[0]
    assert ":" not in plain.caption


@pytest.mark.parametrize("width", WIDTHS)
def test_the_stats_page_looks_finished_on_a_laptop_and_a_phone(chromium_browser, axe, width, tmp_path):
    """In the service's style: nothing wider than the window, its tables scrolling in their own box, a navigation
    bar to its sections, and axe-core clean; with the long lists unfolded, as an instructor reading them sees it."""
    path = tmp_path / "stats.html"
    path.write_text(stats_html(analysis(), "Attention from scratch"), encoding="utf-8")
    page = chromium_browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(path.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        looks_finished(page, axe, width, tmp_path / f"stats-{width}.png")
    finally:
        page.close()
