"""Scoring: a `GradingBundle`, a `Submission` and its `SubmissionRun` (plain arrays from the sandbox) in, a `SubmissionResult` out.

Pure functions in the trusted process. Student outputs are compared here with
the expected values the sandbox never saw; when a test fails, the output is
compared with each misconception's output to name the mistake. Written answers
are judged by their kind (`WrittenKind.grade`) against the student's own variant.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from autograder.bundle import CodeProblem, GradedTest, GradingBundle, WrittenProblem
from autograder.grade.intake import Submission
from autograder.kinds import kind_of
from autograder.results import ProblemResult, SubmissionResult, TestResult
from autograder.sandbox import ProblemRun, SubmissionRun
from qkv_runtime.compare import compare, excerpt, select

HEATMAP_MAX = 12  # largest side of a weight matrix drawn in feedback


# -------------------------------------------------------------- code tests


def _raised(error: str) -> str:
    """The exception's type in the sandbox's error text: "ValueError: ... (line 3)" or a bare "ValueError (line 3)"."""
    match = re.match(r"[A-Za-z_]\w*", error)
    return match.group(0) if match else ""


def _weights_heatmap(got: np.ndarray, want: np.ndarray) -> dict[str, list] | None:
    """The first (n_q x n_k) slice of attention weights, when the expected output looks like weights."""
    if want.ndim < 2 or got.shape != want.shape or want.dtype.kind != "f":
        return None
    rows = want.reshape(-1, want.shape[-2], want.shape[-1])[0]
    if rows.shape[0] > HEATMAP_MAX or rows.shape[1] > HEATMAP_MAX or rows.min() < 0:
        return None
    sums = rows.sum(axis=-1)
    if not np.all((np.abs(sums - 1) < 1e-6) | (np.abs(sums) < 1e-12)):
        return None
    student = got.reshape(-1, got.shape[-2], got.shape[-1])[0]
    return {"want": rows.tolist(), "got": np.nan_to_num(student.astype(float)).tolist()}


def diagnose(test: GradedTest, got: tuple[np.ndarray, ...]) -> str | None:
    """The id of the misconception whose output this student's output matches, if any."""
    for mistake, outputs in test.mutant_outputs.items():
        if compare(got, outputs, test.tolerance.abs, test.tolerance.rel) is None:
            return mistake
    return None


def score_test(problem: CodeProblem, test: GradedTest, run: ProblemRun | None) -> TestResult:
    max_score = problem.test_points(test)

    def result(passed: bool, message: str, **extra: Any) -> TestResult:
        return TestResult(problem.id, test.name, test.visibility, max_score if passed else 0.0, max_score,
                          passed, message, input_shapes=test.input_shapes, **extra)

    call = run.results.get(test.call_id) if run else None
    if call is None:
        reason = run.message if run and run.status != "ok" else "not run"
        return result(False, f"no result: {reason}")
    if test.expect_error:
        if not call.ok and call.error and _raised(call.error) == test.expect_error:
            return result(True, f"raised {test.expect_error} as required")
        return result(False, f"should raise {test.expect_error}" + (f", but raised {call.error}" if call.error else ""))
    if not call.ok:
        return result(False, call.error or "failed")
    got = select(call.outputs, test.output)
    assert test.expected is not None
    mismatch = compare(got, test.expected, test.tolerance.abs, test.tolerance.rel)
    if mismatch is None:
        return result(True, "passed")
    mistake = diagnose(test, got)
    message = mismatch.reason
    if mistake:
        message = f"{problem.misconceptions[mistake]} ({mismatch.reason})"
    first_got = got[0] if got else None
    return result(
        False, message, misconception=mistake, max_error=mismatch.max_error,
        expected_excerpt=excerpt(test.expected[0]), got_excerpt=excerpt(first_got),
        heatmap=_weights_heatmap(np.asarray(first_got), test.expected[0]) if first_got is not None else None,
    )


def score_code_problem(problem: CodeProblem, run: SubmissionRun) -> ProblemResult:
    problem_run = run.problems.get(problem.id)
    tests = tuple(score_test(problem, t, problem_run) for t in problem.tests)
    if problem.function not in run.defined:
        message = f"{problem.function} is not defined"
    elif problem_run is not None and problem_run.status != "ok":
        message = problem_run.message
    else:
        message = f"{sum(t.passed for t in tests)} of {len(tests)} tests passed"
    return ProblemResult(problem.id, "implement", round(sum(t.score for t in tests), 4), problem.points, message, tests)


# ----------------------------------------------------------- written answers


def score_written(written: WrittenProblem, answer: Any, bundle: GradingBundle, student: str) -> ProblemResult:
    problem = written.problem

    def result(fraction: float, message: str, misconception: str | None = None) -> ProblemResult:
        test = TestResult(problem.id, "answer", "hidden", round(written.points * fraction, 4), written.points,
                          fraction == 1.0, message, misconception=misconception)
        return ProblemResult(problem.id, problem.kind, test.score, written.points, message, (test,))

    if answer is None or answer == "" or (isinstance(answer, dict) and all(v in (None, "") for v in answer.values())):
        return result(0.0, "not answered")
    kind = kind_of(problem)
    marked = kind.grade(problem, answer, kind.variant(problem, bundle.seed, bundle.variants, student))
    return result(marked.fraction, marked.message, marked.misconception)


# ------------------------------------------------------------- submissions


def grade_submission(bundle: GradingBundle, submission: Submission, run: SubmissionRun | None) -> SubmissionResult:
    """The whole score of one student; `run` is None when the file could not be run at all."""
    if run is None:
        return SubmissionResult(submission.student, submission.digest, submission.status, submission.message,
                                0.0, bundle.max_points)
    results = {p.id: score_code_problem(p, run) for p in bundle.code}
    answers = run.answers if isinstance(run.answers, dict) else {}
    for written in bundle.written:
        results[written.id] = score_written(written, answers.get(written.id), bundle, submission.student)
    ordered = tuple(results[pid] for pid in bundle.problem_order)
    status = "graded" if run.status == "ok" else run.status
    message = run.message if run.status != "ok" else ""
    if run.status == "ok" and bundle.code and not any(p.function in run.defined for p in bundle.code):
        status, message = "no_functions", "defines none of the functions of the assignment"
    total = round(sum(p.score for p in ordered), 4)
    handed_in = {w.id: answers[w.id] for w in bundle.written if w.id in answers}  # kept for item analysis
    return SubmissionResult(submission.student, submission.digest, status, message, total, bundle.max_points,
                            ordered, run.stdout, tuple(run.cell_errors), handed_in)
