"""qkv stats: item analysis of a small gradebook checked against figures computed by hand (below) and against
scipy, and the stats page rendered in headless Chromium with its plots drawn.

The gradebook (real SQLite, written by Gradebook.record): four graded students and one whose file did
not run (left out). P1 is a code problem with two hidden tests of one point; P2 a multiple-choice
problem of two points (key B).

    student  t1  t2  P1  P2  total   P2's answer
    a         1   1   2   2    4     "B"
    b         1   0   1   2    3     "b"
    c         0   1   1   0    1     "A"   (misconception "chose A"; t1 "wrong-axis")
    d         0   0   0   0    0     ""    (t1 "wrong-axis")

By hand: facility P1 = P2 = 1/2. Point-biserial with the rest score: P1 against P2's [2,2,0,0]:
sum dx*dy = 2, sum dx^2 = 2, sum dy^2 = 4, r = 2/sqrt(8) = 0.7071 (P2 the same by symmetry);
t1 against [3,2,1,0]: r = 2/sqrt(5) = 0.8944; t2 against [3,3,0,0]: r = 0 (flagged, below 0.2).
Upper-lower: groups of round(0.27 * 4) = 1, a and d: P1 1 - 0 = 1, t2 1 - 0 = 1.
Cronbach's alpha over P1, P2: variances 2/3 and 4/3, the total's 10/3: 2 * (1 - 2 / (10/3)) = 0.8.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from autograder.classroom.classbook import open_gradebook
from autograder.classroom.stats import ChoiceItem, analyse, load_scores
from autograder.classroom.stats_page import stats_html
from autograder.exam.pdf import find_browser, headless_command
from autograder.grade.gradebook import Gradebook
from autograder.results import ProblemResult, SubmissionResult, TestResult
from conftest import QKV, said

ROWS = {  # student: (t1, t2, P2, answer, misconceptions)
    "a": (1, 1, 2, "B", {}),
    "b": (1, 0, 2, "b", {}),
    "c": (0, 1, 0, "A", {"t1": "wrong-axis", "answer": "chose A"}),
    "d": (0, 0, 0, "", {"t1": "wrong-axis"}),
}
CHOICES = {"P2": ChoiceItem("multiple_choice", ("A", "B", "C", "D"), "B", ("one", "two", "three", "four"))}


def result(student: str, t1: float, t2: float, choice: float, answer: str, wrong: dict[str, str]) -> SubmissionResult:
    tests = tuple(TestResult("P1", name, "hidden", score, 1.0, score == 1, "", misconception=wrong.get(name))
                  for name, score in (("t1", t1), ("t2", t2)))
    p1 = ProblemResult("P1", "implement", t1 + t2, 2.0, "", tests)
    p2 = ProblemResult("P2", "multiple_choice", choice, 2.0, "", (
        TestResult("P2", "answer", "hidden", choice, 2.0, choice == 2, "", misconception=wrong.get("answer")),))
    return SubmissionResult(student, f"digest-{student}", "graded", "", t1 + t2 + choice, 4.0, (p1, p2),
                            answers={"P2": answer})


@pytest.fixture
def small_gradebook(tmp_path):
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        book.check_assignment("tiny", "f" * 64)
        for student, (t1, t2, p2, answer, wrong) in ROWS.items():
            book.record(result(student, t1, t2, p2, answer, wrong), "bwrap")
        book.record(result("b", 0, 0, 0, "", {}), "bwrap")  # an older grading of b: the next one counts
        book.record(result("b", 1, 0, 2, "b", {}), "bwrap")
        book.record(SubmissionResult("e", "digest-e", "load_error", "SyntaxError", 0.0, 4.0), "bwrap")
    return tmp_path


def analysed(folder: Path):
    with open_gradebook(folder, "tiny") as db:
        scores = load_scores(db)
    return scores, analyse(scores, ("P1", "P2"), choices=CHOICES, messages={("P1", "wrong-axis"): "the wrong axis"})


def test_item_analysis_matches_the_figures_by_hand(small_gradebook):
    scores, a = analysed(small_gradebook)
    assert scores.students == ("a", "b", "c", "d") and a.excluded == 1 and a.students == 4
    p1, p2 = a.problems
    assert (p1.facility, p2.facility) == (0.5, 0.5)
    assert p1.point_biserial == pytest.approx(2 / math.sqrt(8)) and p2.point_biserial == pytest.approx(2 / math.sqrt(8))
    assert p1.upper_lower == 1.0 and a.group_size == 1
    t1, t2 = a.hidden_tests
    assert t1.point_biserial == pytest.approx(2 / math.sqrt(5)) and t2.point_biserial == pytest.approx(0.0)
    assert t2.upper_lower == 1.0
    assert a.alpha == pytest.approx(0.8)
    assert [i.name for i in a.flagged] == ["P1::t2"] and "discrimination below 0.2" in t2.flags
    table = {d.option: (d.count, d.upper, d.lower, d.correct) for d in a.distractors["P2"]}
    assert table == {"A": (1, 0, 0, False), "B": (2, 1, 0, True), "C": (0, 0, 0, False), "D": (0, 0, 0, False),
                     "(none)": (1, 0, 1, False)}
    counts = {(c.problem, c.misconception): (c.students, c.share, c.message) for c in a.misconceptions}
    assert counts == {("P1", "wrong-axis"): (2, 0.5, "the wrong axis"), ("P2", "chose A"): (1, 0.25, "chose A")}


def test_item_analysis_agrees_with_scipy(small_gradebook):
    from scipy import stats  # a test dependency: make test installs the `test` extra
    scores, a = analysed(small_gradebook)
    totals = scores.tests.sum(axis=1)
    for column, item in zip((0, 1), a.hidden_tests):
        x = scores.tests[:, column]
        if np.std(x) and np.std(totals - x):
            assert item.point_biserial == pytest.approx(stats.pointbiserialr(x, totals - x).statistic)
    p1 = scores.tests[:, 0] + scores.tests[:, 1]
    assert a.problems[0].point_biserial == pytest.approx(stats.pearsonr(p1, totals - p1).statistic)


def test_facility_flag_and_no_variance():
    from autograder.classroom.stats import Scores

    easy = Scores(("a", "b", "c"), (("P", "t", "hidden"), ("Q", "t", "hidden")),
                  np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.array([1.0, 1.0]), {}, {})
    a = analyse(easy, kinds={"P": "implement", "Q": "implement"})
    p, q = a.problems
    assert p.facility == 1.0 and "facility above 0.95" in p.flags and "no variance" in p.flags and p.point_biserial is None
    assert q.flags == ()


@pytest.mark.slow
def test_the_stats_page_renders_in_chromium_with_its_plots(small_gradebook, tmp_path):
    browser = find_browser()
    assert browser, "headless Chromium is missing: run `make setup` as root"
    _, a = analysed(small_gradebook)
    page = tmp_path / "stats.html"
    page.write_text(stats_html(a, "Tiny"), encoding="utf-8")
    dom = subprocess.run(headless_command(browser, tmp_path / "profile") + ["--virtual-time-budget=5000", "--dump-dom",
                                                                            page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and 'id="alpha">0.800<' in dom.stdout, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") == 3 and 'data-item="P1::t2"' in dom.stdout
    shot = tmp_path / "shot.png"
    done = subprocess.run(headless_command(browser, tmp_path / "profile") + ["--window-size=1200,1100",
                                                                             f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
    colours = {tuple(int(v) for v in p) for p in pixels[::7]}
    # the histogram's bars (#4c72b0) and the misconception bars (#dd8452) are drawn, not just in the file
    assert any(abs(r - 0x4c) < 8 and abs(g - 0x72) < 8 and abs(b - 0xb0) < 8 for r, g, b in colours)
    assert any(abs(r - 0xdd) < 8 and abs(g - 0x84) < 8 and abs(b - 0x52) < 8 for r, g, b in colours)


@pytest.mark.slow
def test_qkv_stats_writes_the_page_and_a_table(small_gradebook):
    done = subprocess.run([str(QKV), "stats", "tiny", "--grades", str(small_gradebook), "--dist", str(small_gradebook)],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "Cronbach's alpha 0.80" in done.stdout and "1 item(s) flagged" in done.stdout
    assert (small_gradebook / "stats.html").is_file()
    missing = subprocess.run([str(QKV), "stats", "tiny", "--grades", str(small_gradebook / "none")],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "no such grades folder" in missing.stderr
    assert len(said(missing.stderr)) == 1


def test_gradings_of_two_bundles_are_read_test_by_test(small_gradebook):
    """After a rebuild that added a test, students graded before and after have different tests: each
    test's column holds only the scores of those who had it."""
    with Gradebook(small_gradebook / "gradebook.sqlite") as book:
        book.rebind("e" * 64)
        newer = result("a", 1, 1, 2, "B", {})
        extra = TestResult("P1", "t3", "hidden", 0.5, 1.0, False, "")
        p1 = newer.problems[0]
        newer = SubmissionResult("a", "digest-a2", "graded", "", 4.5, 5.0,
                                 (ProblemResult("P1", "implement", 2.5, 3.0, "", (*p1.tests, extra)), newer.problems[1]),
                                 answers={"P2": "B"})
        book.record(newer, "bwrap")
    scores, a = analysed(small_gradebook)
    columns = {(p, t): i for i, (p, t, _) in enumerate(scores.columns)}
    assert set(columns) == {("P1", "t1"), ("P1", "t2"), ("P1", "t3"), ("P2", "answer")}
    t3 = scores.tests[:, columns[("P1", "t3")]]
    assert t3.tolist() == [0.5, 0.0, 0.0, 0.0]  # only a has it
    assert scores.tests[:, columns[("P1", "t1")]].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_written_corrections_are_kept_for_the_instructor_and_listed_on_the_page(tmp_path):
    """A true/false answer's free-text correction earns nothing by itself (kinds/true_false/); the gradebook
    keeps it as handed in, and the stats page lists it, as written, with the points the rest earned. A
    `correction` in the answer of a kind that takes none (a numeric problem's parts) is not one."""
    from autograder.classroom.corrections import written_corrections

    answers = {"a": {"answer": False, "follow_up": "B", "correction": "It is linear in n: O(n d d_ff)."},
               "b": {"answer": False, "follow_up": "A", "correction": "banana <b>"},
               "c": {"answer": True, "follow_up": None, "correction": "   "}}
    points = {"a": 2.0, "b": 1.0, "c": 0.0}
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        book.check_assignment("tiny", "f" * 64)
        for student, answer in answers.items():
            test = TestResult("P3", "answer", "hidden", points[student], 2.0, points[student] == 2.0, "")
            other = TestResult("P4", "answer", "hidden", 1.0, 1.0, True, "")
            book.record(SubmissionResult(student, f"digest-{student}", "graded", "", points[student] + 1.0, 3.0,
                                         (ProblemResult("P3", "true_false", points[student], 2.0, "", (test,)),
                                          ProblemResult("P4", "numeric", 1.0, 1.0, "", (other,))),
                                         answers={"P3": answer, "P4": {"x": 1.0, "correction": "not a statement"}}),
                        "bwrap")
    with open_gradebook(tmp_path, "tiny") as db:
        scores = load_scores(db)
    found = written_corrections(scores)
    assert [(c.student, c.text, c.points, c.max_points) for c in found] == [
        ("a", "It is linear in n: O(n d d_ff).", 2.0, 2.0), ("b", "banana <b>", 1.0, 2.0)]
    page = stats_html(analyse(scores, ("P3",)), "tiny", (), found)
    assert "Written corrections to read" in page and "banana &lt;b&gt;" in page and "1.00 of 2.00" in page
