"""Gradescope's results.json for one student: a `SubmissionResult` in, the JSON document out.

Schema: top-level `score`, `output`, `stdout_visibility`, and `tests[]` with
`name`, `score`, `max_score`, `output`, `visibility`, and `extra_data.isolation`
(how student code was isolated: bwrap, uid, rlimits-only). Hidden tests use
`after_due_date`, so students see them only once the due date has passed;
their inputs and expected values are never in the output.
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.results import SubmissionResult, TestResult
from autograder.report.files import write_atomic


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


def results_json(result: SubmissionResult, isolation: str) -> dict:
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
    return {"score": round(result.score, 4), "output": output, "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"isolation": isolation}}


def write_results_json(path: Path, result: SubmissionResult, isolation: str) -> None:
    write_atomic(path, (json.dumps(results_json(result, isolation), separators=(",", ":")) + "\n").encode())
