"""Gradescope's results.json for one student: a `SubmissionResult` in, the JSON document out.

Schema: top-level `score`, `output`, `stdout_visibility`, and `tests[]` with
`name`, `score`, `max_score`, `output`, `visibility`, and `extra_data.isolation`
(how student code was isolated: bwrap, uid, rlimits-only). Hidden tests use
`after_due_date`, so students see them only once the due date has passed;
their inputs and expected values are never in the output. The top-level output
opens with what to fix first (report/lessons.py): each recognised mistake of the
code once, with its points and the problems it touches; each test's output
names its mistake in the words of every other route (qkv_runtime.diagnosis).
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.results import SubmissionResult, TestResult
from autograder.report.files import write_atomic
from autograder.report.lessons import summarise


def _test_output(test: TestResult) -> str:
    if test.passed:
        return test.message
    lines = [test.message]
    if test.visibility == "public":
        if test.input_shapes:
            lines.append(f"input shapes: {test.input_shapes}")
        if test.expected_excerpt:
            lines.append(f"expected {test.expected_excerpt}")
        if test.got_excerpt:
            lines.append(f"got      {test.got_excerpt}")
    return "\n".join(lines)


ISOLATION_TEXT = {
    "bwrap": "isolated (bubblewrap namespaces)",
    "uid": "isolated by user id only (no namespaces; the grader's files unreadable)",
    "rlimits-only": "NOT isolated: resource limits only",
}


def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")  # as the page shows them (report.summary.points, without rich)


def fix_first(result: SubmissionResult, bundle=None) -> list[str]:
    """The summary's lines: the code's recognised mistakes, largest first (written answers' stay with their tests)."""
    functions = {p.id: p.function for p in bundle.code} if bundle is not None else {}
    messages = {(p.id, m): t for p in bundle.code for m, t in p.misconceptions.items()} if bundle is not None else {}
    summary = summarise(result, functions, messages, written_mistakes=False)
    lines = []
    for n, lesson in enumerate(summary.lessons, 1):
        where = ", ".join(f"{pid} -{_points(lost)}" for pid, lost in lesson.problems)
        lines.append(f"{n}. {lesson.title} (-{_points(lesson.points)} points: {where}): {lesson.message}")
        if lesson.upstream_of:
            lines.append(f"   fix {lesson.function} first: your {' and '.join(lesson.upstream_of)} "
                         f"{'matches' if len(lesson.upstream_of) == 1 else 'match'} the reference with that same "
                         "mistake inside")
    return (["what to fix first:"] + lines) if lines else []


def results_json(result: SubmissionResult, isolation: str, bundle=None) -> dict:
    """`bundle` (the GradingBundle) gives the summary the bank's words; without it, the tests' own stand in."""
    tests = [
        {
            "name": f"{t.problem_id}: {t.name}",
            "score": round(t.score, 4),
            "max_score": round(t.max_score, 4),
            "output": _test_output(t),
            "visibility": "visible" if t.visibility == "public" else "after_due_date",
            "status": "passed" if t.passed else "failed",
        }
        for p in result.problems for t in p.tests
    ]
    output = f"status: {result.status}" + (f" ({result.message})" if result.message else "")
    output += f"\nsandbox: {ISOLATION_TEXT.get(isolation, isolation)}"
    for note in result.notes:
        output += f"\n{note}"
    for line in fix_first(result, bundle):
        output += f"\n{line}"
    return {"score": round(result.score, 4), "output": output, "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"isolation": isolation}}


def write_results_json(path: Path, result: SubmissionResult, isolation: str, bundle=None) -> None:
    write_atomic(path, (json.dumps(results_json(result, isolation, bundle), separators=(",", ":")) + "\n").encode())
