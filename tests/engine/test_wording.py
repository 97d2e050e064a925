"""The words of messages and pages: counts agree with their nouns ("1 student", never "1 students"), a table is
drawn only with something in it, one column says one kind of thing, and the course `qkv init` makes links nowhere
qkv is not.
"""

from __future__ import annotations

import re

import numpy as np
from rich.console import Console

from autograder.classroom.collect import IntakeRow
from autograder.classroom.stats import Scores, analyse
from autograder.classroom.stats_page import stats_html
from autograder.classroom.terminal import intake_table
from autograder.course.scaffold import init_course
from autograder.report.summary import gradebook_table
from autograder.results import ProblemResult, SubmissionResult, TestResult
from autograder.wording import counted


def test_counted_agrees_with_its_noun():
    assert counted(1, "student") == "1 student" and counted(0, "student") == "0 students"
    assert counted(2, "file") == "2 files" and counted(1_200, "problem") == "1,200 problems"
    assert counted(3, "matrix", "matrices") == "3 matrices" and counted(1, "matrix", "matrices") == "1 matrix"


def _one_student(excluded: int) -> str:
    scores = Scores(("a",), (("P", "t", "hidden"),), np.array([[1.0]]), np.array([1.0]), {}, {})
    analysis = analyse(scores, kinds={"P": "implement"})
    from dataclasses import replace

    return stats_html(replace(analysis, excluded=excluded), "Tiny")


def test_the_stats_page_counts_one_student_as_one():
    summary = re.search(r'<p id="summary">(.*?)</p>', _one_student(1), re.S).group(1)
    text = " ".join(summary.split())
    assert text.startswith("1 student analysed (1 student whose file did not run is left out);"), text
    assert "groups of 1 student (27%)" in text and "students" not in text
    two = " ".join(re.search(r'<p id="summary">(.*?)</p>', _one_student(2), re.S).group(1).split())
    assert "(2 students whose file did not run are left out)" in two


def test_no_intake_table_is_drawn_when_no_row_needs_a_look():
    graded = [IntakeRow(entry=f"{s}.py", student=s, status="graded", message="", identified_by="file name")
              for s in ("s001", "s002")]
    assert intake_table(graded) is None
    table = intake_table(graded + [IntakeRow(entry="x.py", student="", status="unmatched", message="no roster row")])
    console = Console(record=True, width=200)
    console.print(table)
    assert "x.py" in console.export_text()


def test_the_gradebooks_mistakes_column_names_each_mistake_alike():
    """A code problem's mistake (stored as an id) and a written one's (stored as the bank's sentence) read in one
    form: the feedback page's heading for each."""
    code = ProblemResult("softmax-rows", "implement", 0.0, 1.0, "", (
        TestResult("softmax-rows", "t1", "public", 0.0, 1.0, False, "wrong", misconception="columns-softmax"),))
    written = ProblemResult("why-scale", "multiple_choice", 0.0, 1.0, "", (
        TestResult("why-scale", "answer", "hidden", 0.0, 1.0, False, "you chose the rows summing to one",
                   misconception="the softmax rows always sum to one, whatever the scale"),))
    result = SubmissionResult("ada", "d", "graded", "", 0.0, 2.0, (code, written))
    console = Console(record=True, width=400)
    console.print(gradebook_table([result]))
    row = next(line for line in console.export_text().splitlines() if "ada" in line)
    assert "whatever the scale" not in row  # no sentence beside an id
    assert "columns softmax in softmax-rows" in row and "your answer to why-scale" in row, row


def test_the_course_readme_links_no_package_index(tmp_path):
    init_course(tmp_path / "c", "Course 101")
    readme = (tmp_path / "c" / "README.md").read_text()
    assert "pypi.org" not in readme and "](http" not in readme
    assert readme.startswith("# Course 101")
