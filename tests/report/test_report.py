"""Reports: the CSV a spreadsheet imports, results.json, and what feedback.html shows when (test_feedback.py: the
rest)."""

from __future__ import annotations

import csv
import io

import numpy as np
from rich.console import Console

from autograder.results import ProblemResult, SubmissionResult, TestResult
from autograder.report.csv import gradebook_csv
from autograder.report.feedback import feedback_html
from autograder.report.results_json import results_json
from autograder.report.summary import gradebook_table

WEIGHTS = np.array([[2 / 3, 1 / 3, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]])


def sample(student: str = "ada", passed: bool = False) -> SubmissionResult:
    test = TestResult(
        "softmax-rows", "lecture masked example", "public", 1.0 if passed else 0.0, 1.0, passed,
        "your weights are normalised down the columns (3 of 9 entries differ, largest error 0.5)",
        misconception=None if passed else "column-softmax", max_error=0.5, input_shapes="(3, 3)",
        expected_excerpt="shape (3, 3): [0.6667, 0.3333, 0]", got_excerpt="shape (3, 3): [0.5, 0.2, 0]",
        heatmap=None if passed else {"want": WEIGHTS.tolist(), "got": WEIGHTS.T.tolist()},
    )
    hidden = TestResult("softmax-rows", "batched rows", "hidden", 0.0, 3.0, False, "3 of 210 entries differ",
                        expected_excerpt="shape (2, 3): [0.1]", got_excerpt="shape (2, 3): [0.2]")
    problem = ProblemResult("softmax-rows", "implement", test.score, 4.0, "1 of 2 tests passed", (test, hidden))
    written = ProblemResult("heads-reduce-cost", "true_false", 2.0, 2.0, "correct",
                            (TestResult("heads-reduce-cost", "answer", "hidden", 2.0, 2.0, True, "correct"),))
    return SubmissionResult(student, "d" * 64, "graded", "", problem.score + 2.0, 6.0, (problem, written), "hello")


def test_csv_has_the_promised_columns_and_imports_back():
    text = gradebook_csv([sample("bob"), sample("ada", passed=True)], ["softmax-rows", "heads-reduce-cost"],
                         {"ada": "bwrap", "bob": "bwrap"})
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["student", "total", "max", "status", "softmax-rows", "heads-reduce-cost", "isolation"]
    assert [r["student"] for r in rows] == ["ada", "bob"]
    assert float(rows[0]["total"]) == 3.0 and float(rows[1]["softmax-rows"]) == 0.0


def test_results_json_hides_hidden_expected_values_and_states_the_isolation():
    data = results_json(sample(), "uid")
    assert data["extra_data"] == {"isolation": "uid"} and "isolated by user id only" in data["output"]
    hidden = next(t for t in data["tests"] if t["name"].endswith("batched rows"))
    public = next(t for t in data["tests"] if t["name"].endswith("lecture masked example"))
    assert hidden["visibility"] == "after_due_date" and "expected" not in hidden["output"]
    assert public["visibility"] == "visible" and "expected shape (3, 3)" in public["output"]


def test_feedback_hides_hidden_details_before_the_due_date():
    result = sample()
    hidden_map = {"want": WEIGHTS.tolist(), "got": WEIGHTS[::-1].tolist()}
    problem = result.problems[0]
    tests = (problem.tests[0], TestResult(**{**problem.tests[1].__dict__, "heatmap": hidden_map}))
    result = SubmissionResult(**{**result.__dict__, "problems": (ProblemResult(**{**problem.__dict__, "tests": tests}),
                                                                  result.problems[1])})
    before = feedback_html(result, "A1", "2999-01-01T00:00:00+00:00", "bwrap")
    after = feedback_html(result, "A1", "2000-01-01T00:00:00+00:00", "bwrap")
    # yours, expected and the difference for each drawn test: the public one, and the hidden one after the due date
    assert before.count('class="matrix"') == 3 and after.count('class="matrix"') == 6
    assert "0.1]" not in before and "0.1]" in after, "a hidden test's expected excerpt was shown before the due date"


def test_feedback_warns_when_not_isolated():
    assert "without namespace isolation" in feedback_html(sample(), "A1", None, "rlimits-only")
    assert "without namespace isolation" not in feedback_html(sample(), "A1", None, "bwrap")


def test_the_terminal_gradebook_prints_student_text_as_it_is():
    message = "SyntaxError: '[bold]' was never closed [a-z0-9] (line 1)"
    result = SubmissionResult("[red]mallory[/red]", "d", "load_error", message, 0.0, 80.0)
    console = Console(record=True, width=400)
    console.print(gradebook_table([result]))
    text = console.export_text()
    assert "[red]mallory[/red]" in text and message in text


def test_the_written_documents_are_the_dumps_of_their_data_to_the_byte():
    import dataclasses
    import json

    from autograder.report.results_json import results_json_text

    for result in (sample(), sample(passed=True), SubmissionResult("eve", "", "load_error", "", 0.0, 6.0)):
        # a student's text that looks like the entries written in afterwards must stay text
        problems = tuple(dataclasses.replace(p, message='"tests": null') for p in result.problems)
        odd = dataclasses.replace(result, message='"tests":null "problems": null', notes=('"tests": null',),
                                  stdout='"problems": null', problems=problems,
                                  answers={"problems": None, "tests": None, "x": [1, float("nan")]})
        for each in (result, odd):
            assert results_json_text(each, "bwrap") == json.dumps(results_json(each, "bwrap"), separators=(",", ":"))
            assert each.to_json_text() == json.dumps(each.to_json(), allow_nan=True)
            assert SubmissionResult.from_json(json.loads(each.to_json_text())).to_json_text() == each.to_json_text()
