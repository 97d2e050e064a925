"""Scoring: a `GradingBundle`, a `Submission` and its `SubmissionRun` (plain arrays from the sandbox) in, a `SubmissionResult` out.

Pure functions in the trusted process. Student outputs are compared here with
the expected values the sandbox never saw; when a test fails, the output is
compared with each misconception's output to name the mistake, and with the
reference's outputs with a misconception of a function it builds on inside
(qkv_runtime.diagnosis says in which order, and in which words). Problems are
scored most basic first, so that what a function shows itself confirms the
mistakes of the functions built on it. Written answers are judged by their kind
(`WrittenKind.grade`) against the student's own variant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.bundle import CodeProblem, GradedTest, GradingBundle, WrittenProblem
from autograder.grade.intake import Submission
from autograder.grade.matrices import picture
from autograder.grade.written_policy import problem_seed
from autograder.kinds import kind_of
from autograder.kinds.implement import IMPLEMENT
from autograder.memo import Memo
from autograder.results import ProblemResult, SubmissionResult, TestResult
from autograder.sandbox import ProblemRun, SubmissionRun
from qkv_runtime.compare import compare, excerpt, select
from qkv_runtime.diagnosis import Named, mistake_text, name_mistake, shown
from qkv_runtime.judge import unanswered


# -------------------------------------------------------------- code tests


@dataclass
class Upstream:
    """What the problems built on say: their functions and messages, and the mistakes each one showed."""

    functions: dict[str, str] = field(default_factory=dict)
    messages: dict[str, dict[str, str]] = field(default_factory=dict)
    shown: dict[str, frozenset] = field(default_factory=dict)

    @staticmethod
    def of(bundle: GradingBundle) -> "Upstream":
        shared = _shared(bundle)  # read only: each grading adds what it shows to its own `shown`
        return Upstream(shared.functions, shared.messages)

    def confirmed(self, problem: str, mistake: str) -> bool:
        return mistake in self.shown.get(problem, ())


def _raised(error: str) -> str:
    """The exception's type in the sandbox's error text: "ValueError: ... (line 3)" or a bare "ValueError (line 3)"."""
    match = re.match(r"[A-Za-z_]\w*", error)
    return match.group(0) if match else ""


def diagnose(test: GradedTest, got: tuple[np.ndarray, ...], upstream: Upstream | None = None,
             problem: str = "") -> Named | None:
    """The mistake this student's output shows, if any (qkv_runtime.diagnosis.name_mistake's order); `problem`:
    the test's own, whose earlier tests' mistakes win a tie."""
    def matches(outputs) -> bool:
        return compare(got, outputs, test.tolerance.abs, test.tolerance.rel) is None

    upstream = upstream or Upstream()
    return name_mistake(matches, test.mutant_outputs, list(test.upstream_outputs.items()), upstream.confirmed,
                        upstream.shown.get(problem, ()))


# a test passed is the same result for every student: made once (results are frozen, so sharing one is safe)
_PASSED: Memo[TestResult] = Memo(16384)


def _passed(problem: CodeProblem, test: GradedTest) -> TestResult:
    def make() -> TestResult:
        max_score = problem.test_points(test)
        message = f"raised {test.expect_error} as required" if test.expect_error else "passed"
        return TestResult(problem.id, test.name, test.visibility, max_score, max_score, True, message,
                          input_shapes=test.input_shapes)

    return _PASSED.get((problem, test), make)


def score_test(problem: CodeProblem, test: GradedTest, run: ProblemRun | None,
               upstream: Upstream | None = None) -> TestResult:
    def result(passed: bool, message: str, **extra: Any) -> TestResult:
        max_score = problem.test_points(test)
        return TestResult(problem.id, test.name, test.visibility, max_score if passed else 0.0, max_score,
                          passed, message, input_shapes=test.input_shapes, **extra)

    call = run.results.get(test.call_id) if run else None
    if call is None:
        reason = run.message if run and run.status != "ok" else "not run"
        return result(False, f"no result: {reason}")
    if test.expect_error:
        if not call.ok and call.error and _raised(call.error) == test.expect_error:
            return _passed(problem, test)
        return result(False, f"should raise {test.expect_error}" + (f", but raised {call.error}" if call.error else ""))
    if not call.ok:
        return result(False, call.error or "failed")
    got = select(call.outputs, test.output)
    assert test.expected is not None
    mismatch = compare(got, test.expected, test.tolerance.abs, test.tolerance.rel)
    if mismatch is None:
        return _passed(problem, test)
    upstream = upstream or Upstream()
    named = diagnose(test, got, upstream, problem.id)
    message = mismatch.reason
    if named:
        own = upstream.messages.get(named.cause, {}) if named.cause else problem.misconceptions
        message = mistake_text(named, problem.function, own.get(named.mistake, named.mistake), mismatch.reason,
                               upstream.functions.get(named.cause or "", ""))
    first_got = got[0] if got else None
    return result(
        False, message, misconception=named.mistake if named else None, cause=named.cause if named else None,
        max_error=mismatch.max_error, expected_excerpt=excerpt(test.expected[0]), got_excerpt=excerpt(first_got),
        heatmap=picture(got, test.expected, test.args, test.kwargs),
    )


# a problem whose every test passed is one result for the class (its tests are the shared ones, _PASSED): made
# once, so that what is made of it (its JSON, its rows of results.json, its part of the page) is made once too
_ALL_PASSED: Memo[ProblemResult] = Memo(16384)


def score_code_problem(problem: CodeProblem, run: SubmissionRun, upstream: Upstream | None = None) -> ProblemResult:
    problem_run = run.problems.get(problem.id)
    upstream = upstream if upstream is not None else Upstream()
    upstream.shown[problem.id] = frozenset()  # what this problem shows, growing test by test, in the tests' order
    scored = []
    for test in problem.tests:
        scored.append(score_test(problem, test, problem_run, upstream))
        if not scored[-1].passed:  # a test passed shows no mistake
            upstream.shown[problem.id] |= shown([(scored[-1].misconception, scored[-1].cause)])
    tests = tuple(scored)
    if problem.function not in run.defined:
        message = f"{problem.function} is not defined"
    elif problem_run is not None and problem_run.status != "ok":
        message = problem_run.message
    else:
        message = f"{sum(t.passed for t in tests)} of {len(tests)} tests passed"

    def make() -> ProblemResult:
        return ProblemResult(problem.id, IMPLEMENT.name, round(sum(t.score for t in tests), 4), problem.points,
                             message, tests)

    return _ALL_PASSED.get((problem, *tests), make, message) if all(t.passed for t in tests) else make()


def basic_first(code: tuple[CodeProblem, ...]) -> list[CodeProblem]:
    """The code problems, each after those it builds on (the bundle's order otherwise)."""
    by_id = {p.id: p for p in code}
    done: dict[str, CodeProblem] = {}

    def visit(problem: CodeProblem, path: tuple[str, ...]) -> None:
        if problem.id in done or problem.id in path:  # a cycle only loses confirmations, never a score
            return
        for other in problem.builds_on:
            if other in by_id:
                visit(by_id[other], path + (problem.id,))
        done[problem.id] = problem

    for problem in code:
        visit(problem, ())
    return list(done.values())


@dataclass(frozen=True)
class _Shared:
    """What every student's grading of one bundle starts from."""

    order: tuple[CodeProblem, ...]  # basic_first
    functions: dict[str, str]
    messages: dict[str, dict[str, str]]


# made once per bundle, not per submission
_SHARED: Memo[_Shared] = Memo(8)


def _shared(bundle: GradingBundle) -> _Shared:
    return _SHARED.get((bundle,), lambda: _Shared(tuple(basic_first(bundle.code)),
                                                  {p.id: p.function for p in bundle.code},
                                                  {p.id: p.misconceptions for p in bundle.code}))


# ----------------------------------------------------------- written answers


_PLAIN = (str, int, float, bool, type(None))
_LONGEST = 4096  # a longer answer is judged afresh: the memo must stay small whatever students type


def _fingerprint(answer: Any) -> str | None:
    """The answer's repr when it is plain data, whose repr tells apart every value a kind may judge apart
    (1, 1.0, True and "1"; a list and a tuple); None for anything else, which is judged afresh."""
    def plain(value: Any) -> bool:
        if type(value) in _PLAIN:
            return True
        if type(value) in (list, tuple):
            return all(plain(v) for v in value)
        return type(value) is dict and all(type(k) is str and plain(v) for k, v in value.items())

    try:
        text = repr(answer) if plain(answer) else None
    except RecursionError:  # nested deeper than Python reads: the kind says what it makes of that
        return None
    return text if text is not None and len(text) <= _LONGEST else None


# a class types the same answers (its right ones above all): each one is judged once per variant. A kind's verdict
# depends on the problem, the answer and the variant only, and the variant on (seed, mode, and the student only
# when the mode is per_student: base.WrittenKind.variant)
_JUDGED: Memo[ProblemResult] = Memo(16384)


def score_written(written: WrittenProblem, answer: Any, bundle: GradingBundle, student: str,
                  attempt_seed: int | None = None) -> ProblemResult:
    """`attempt_seed`: the attempt's seed of fresh numbers (grade/written_policy.py); None: the assignment's."""
    seed = problem_seed(bundle.seed, written.problem, attempt_seed)
    fingerprint = _fingerprint(answer)
    if fingerprint is None:
        return _score_written(written, answer, bundle, student, seed)
    # an attempt's own seed draws numbers of that student alone, whatever the mode
    who = student if bundle.variants == "per_student" or seed != bundle.seed else None
    variant = (seed, bundle.variants, who)
    return _JUDGED.get((written,), lambda: _score_written(written, answer, bundle, student, seed),
                       (variant, fingerprint))


def _score_written(written: WrittenProblem, answer: Any, bundle: GradingBundle, student: str,
                   seed: int) -> ProblemResult:
    problem = written.problem

    def result(fraction: float, message: str, misconception: str | None = None) -> ProblemResult:
        test = TestResult(problem.id, "answer", "hidden", round(written.points * fraction, 4), written.points,
                          fraction == 1.0, message, misconception=misconception)
        return ProblemResult(problem.id, problem.kind, test.score, written.points, message, (test,))

    if unanswered(answer):
        return result(0.0, "not answered")
    kind = kind_of(problem)
    marked = kind.grade(problem, answer, kind.variant(problem, seed, bundle.variants, student))
    return result(marked.fraction, marked.message, marked.misconception)


# ------------------------------------------------------------- submissions


def grade_submission(bundle: GradingBundle, submission: Submission, run: SubmissionRun | None) -> SubmissionResult:
    """The whole score of one student; `run` is None when the file could not be run at all."""
    if run is None:
        return SubmissionResult(submission.student, submission.digest, submission.status, submission.message,
                                0.0, bundle.max_points)
    upstream = Upstream.of(bundle)
    results = {p.id: score_code_problem(p, run, upstream) for p in _shared(bundle).order}
    answers = run.answers if isinstance(run.answers, dict) else {}
    for written in bundle.written:
        results[written.id] = score_written(written, answers.get(written.id), bundle, submission.student,
                                            submission.seed)
    ordered = tuple(results[pid] for pid in bundle.problem_order)
    status = "graded" if run.status == "ok" else run.status
    message = run.message if run.status != "ok" else ""
    if run.status == "ok" and bundle.code and not any(p.function in run.defined for p in bundle.code):
        status, message = "no_functions", "defines none of the functions of the assignment"
    total = round(sum(p.score for p in ordered), 4)
    handed_in = {w.id: answers[w.id] for w in bundle.written if w.id in answers}  # kept for item analysis
    return SubmissionResult(submission.student, submission.digest, status, message, total, bundle.max_points,
                            ordered, run.stdout, tuple(run.cell_errors), handed_in, submission.seed)
