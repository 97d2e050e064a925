"""Gradescope's results.json for one student: a `SubmissionResult` in, the JSON document out.

Schema: top-level `score`, `output`, `stdout_visibility`, and `tests[]` with
`name`, `score`, `max_score`, `output`, `visibility`, and `extra_data.isolation`
(how student code was isolated: bwrap, uid, rlimits-only). Hidden tests use
`after_due_date`, so students see them only once the due date has passed;
their inputs and expected values are never in the output. The top-level output
opens with what to fix first (report/lessons.py): each recognised mistake of the
code and of the written answers once, with its points and the problems it touches, in the
words of every other route (qkv_runtime.diagnosis); a test it explains points to it
by number and says only what differs.
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.isolation_modes import IsolationMode
from autograder.kinds import KINDS
from autograder.memo import Memo
from autograder.private import write_private
from autograder.results import ProblemResult, SubmissionResult, TestResult, all_passed
from autograder.report.lessons import Summary, bank_words, summarise
from qkv_runtime.diagnosis import written_mistake_text


def _what_differs(test: TestResult, message: str, code: bool) -> str:
    """A test that `message` (its mistake's words, which the summary says once) explains, without them: for code,
    what differs (diagnosis.mistake_text closes with it in parentheses); for a written answer, its parts' verdicts."""
    if code:
        _, found, rest = test.message.partition(f"{message} (")
        return rest[:-1] if found and rest.endswith(")") else ""
    return test.message.replace(f"; {written_mistake_text(message)}", "")


def _test_output(test: TestResult, summary: Summary, code: bool) -> str:
    if test.passed:
        return test.message
    lesson = summary.lesson_of.get((test.problem_id, test.name))
    if lesson is None:
        lines = [test.message]
    else:
        differs = _what_differs(test, summary.lessons[lesson].message, code)
        lines = [f"mistake {lesson + 1} of what to fix first ({summary.lessons[lesson].title})"
                 + (f": {differs}" if differs else "")]
    if test.visibility == "public":
        if test.input_shapes:
            lines.append(f"input shapes: {test.input_shapes}")
        if test.expected_excerpt:
            lines.append(f"expected {test.expected_excerpt}")
        if test.got_excerpt:
            lines.append(f"got      {test.got_excerpt}")
    return "\n".join(lines)




def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")  # as the page shows them (report.summary.points, without rich)


def summary_of(result: SubmissionResult, bundle=None) -> Summary:
    """What to fix first, in the bank's words when `bundle` gives them (a written answer's verdict words hidden:
    results.json is what Gradescope shows before the due date)."""
    functions, messages = bank_words(bundle)
    return summarise(result, functions, messages, verdict_words=False)


def fix_first(summary: Summary) -> list[str]:
    """The summary's lines: every recognised mistake once, largest first, with its points and problems."""
    lines = []
    for n, lesson in enumerate(summary.lessons, 1):
        where = ", ".join(f"{pid} -{_points(lost)}" for pid, lost in lesson.problems)
        lines.append(f"{n}. {lesson.title} (-{_points(lesson.points)} points: {where}): {lesson.message}")
        if lesson.upstream_of:
            lines.append(f"   fix {lesson.function} first: your {' and '.join(lesson.upstream_of)} "
                         f"{'matches' if len(lesson.upstream_of) == 1 else 'match'} the reference with that same "
                         "mistake inside")
    return (["what to fix first:"] + lines) if lines else []


def _test_entry(test: TestResult, summary: Summary, code: bool) -> dict:
    return {
        "name": f"{test.problem_id}: {test.name}",
        "score": round(test.score, 4),
        "max_score": round(test.max_score, 4),
        "output": _test_output(test, summary, code),
        "visibility": "visible" if test.visibility == "public" else "after_due_date",
        "status": "passed" if test.passed else "failed",
    }


def results_json(result: SubmissionResult, isolation: str, bundle=None,
                 shown: SubmissionResult | None = None) -> dict:
    """`bundle` (the GradingBundle) gives the summary the bank's words; without it, the tests' own stand in.
    Each mistake is named once, in the summary; a test it explains points there and says what differs.
    `shown`: the result as its student may see it before hand-in closes (grade/written_policy.py's `masked`), which
    the summary is written from: Gradescope shows the top-level output at once."""
    summary = summary_of(shown or result, bundle)
    tests = [_test_entry(t, summary, KINDS[p.kind].code) for p in result.problems for t in p.tests]
    return _document(result, isolation, summary, tests)


def _document(result: SubmissionResult, isolation: str, summary: Summary, tests: list[dict] | None) -> dict:
    output = f"status: {result.status}" + (f" ({result.message})" if result.message else "")
    output += f"\nsandbox: {IsolationMode(isolation).text if isolation in set(IsolationMode) else isolation}"
    for note in result.notes:
        output += f"\n{note}"
    for line in fix_first(summary):
        output += f"\n{line}"
    return {"score": round(result.score, 4), "output": output, "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"isolation": isolation}}


_COMPACT = (",", ":")

# a passed test's entry is the same for every student (grade.score shares its result), and so are the entries of
# a problem all of whose tests passed: written once
_PASSED: Memo[str] = Memo(16384)


def _test_text(test: TestResult, summary: Summary, code: bool) -> str:
    if not test.passed:
        return json.dumps(_test_entry(test, summary, code), separators=_COMPACT)
    # passed: its entry reads neither summary nor code
    return _PASSED.get((test,), lambda: json.dumps(_test_entry(test, summary, code), separators=_COMPACT))


def _problem_tests(problem: ProblemResult, summary: Summary) -> str:
    """A problem's test entries, one after another: once for the class when all of them passed."""
    def make() -> str:
        return ",".join(_test_text(t, summary, KINDS[problem.kind].code) for t in problem.tests)

    return _PASSED.get((problem,), make) if all_passed(problem) else make()


def results_json_text(result: SubmissionResult, isolation: str, bundle=None) -> str:
    """`json.dumps(results_json(...), separators=(",", ":"))`, the same text: the tests are written in one by one,
    where the document has null (the first '"tests":null' is theirs: JSON escapes every quote inside a string)."""
    summary = summary_of(result, bundle)
    tests = ",".join(filter(None, (_problem_tests(p, summary) for p in result.problems)))
    head = json.dumps(_document(result, isolation, summary, None), separators=_COMPACT)
    return head.replace('"tests":null', f'"tests":[{tests}]', 1)


def write_results_json(path: Path, result: SubmissionResult, isolation: str, bundle=None) -> None:
    write_private(path, (results_json_text(result, isolation, bundle) + "\n").encode())
