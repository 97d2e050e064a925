"""validate's test power: implement problems in, one finding per hidden test that an answer knowing nothing passes.

A stand-in is a function that never looks at what it is given: zeros, ones, its first
argument handed back, or a constant of the right shape (every entry the mean of the
right output, or the right output of another test of the problem). Each hidden test
worth points is run against each stand-in, and a test one of them passes is a finding:
a student who returns that constant would earn the test's points.

The stand-ins are a program the real sandbox runs, as the grader runs a student's
file (values made arrays in the child, carried back as plain arrays), and their
outputs are judged by `qkv_runtime.compare`, the grader's judge. The whole bank is one
sandboxed run, so validate pays for one worker start, not one per problem.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autograder.isolation_modes import IsolationRequest
from autograder.kinds.implement import runnable_references
from autograder.kinds.implement.inputs import call_arguments
from autograder.kinds.implement.outputs import Outputs, run_trusted
from autograder.kinds.model import TestCase
from autograder.sandbox import Call, ProblemCalls, SandboxError, SandboxPool, SubmissionRun
from qkv_runtime.compare import compare, select

CALLS = "test-power"


@dataclass(frozen=True)
class StandIn:
    call_id: str
    problem: str
    test: TestCase
    what: str  # how the finding names it: "zeros", "its first argument", ...
    returns: Outputs | None  # None: hands back its first argument


def _constants(test: TestCase, right: Outputs, others: dict[str, Outputs]) -> list[tuple[str, Outputs]]:
    constants = [("zeros", tuple(np.zeros_like(r) for r in right)), ("ones", tuple(np.ones_like(r) for r in right))]
    # one entry's mean is that entry itself: a constant of one entry is the answer, not a guess
    if any(r.size > 1 for r in right):
        constants.append(("a constant (its right output's mean)",
                          tuple(np.full_like(r, r.mean() if r.dtype.kind == "f" else round(float(r.mean())))
                                for r in right)))
    for name, outputs in others.items():
        if name != test.name and [o.shape for o in outputs] == [r.shape for r in right]:
            constants.append((f"a constant (the right output of test '{name}')", outputs))
    return constants


def right_outputs(problem) -> dict[str, Outputs]:
    """The reference's outputs on every test it answers (what it cannot answer, check_implement reports)."""
    right: dict[str, Outputs] = {}
    references = runnable_references(problem)
    if not references:
        return right
    track, reference = next(iter(references.items()))
    for test in problem.public_tests + problem.hidden_tests:
        if test.expect_error:
            continue
        try:
            right[test.name] = run_trusted(reference, test, track)
        except Exception:  # noqa: BLE001 - a reference that fails a test is check_implement's finding
            continue
    return right


def stand_ins(problems: Sequence, right: dict[str, dict[str, Outputs]]) -> list[StandIn]:
    """Every stand-in of every hidden test worth points (an error test no stand-in raises for is failed by all);
    `right`: {problem id: {test name: the reference's outputs}}."""
    found: list[StandIn] = []
    for problem in problems:
        for test in problem.hidden_tests:
            if test.points == 0 or test.name not in right[problem.id]:
                continue
            guesses: list[tuple[str, Outputs | None]] = list(_constants(test, right[problem.id][test.name],
                                                                         right[problem.id]))
            if test.args:
                guesses.insert(2, ("its first argument", None))
            found += [StandIn(f"{problem.id}::{test.name}::{i}", problem.id, test, what, returns)
                      for i, (what, returns) in enumerate(guesses)]
    return found


def _literal(array: np.ndarray) -> str:
    # bytes, not decimals: the constant is the very array, NaN and infinities included
    return (f"_array({array.astype(array.dtype.newbyteorder('<')).tobytes().hex()!r}, "
            f"{array.dtype.newbyteorder('<').str!r}, {tuple(array.shape)!r})")


def program(found: Sequence[StandIn]) -> str:
    """The stand-ins as a module of functions, one per call, as a student's file would define them."""
    lines = ["import numpy as np", "",
             "def _array(data, dtype, shape):",
             "    return np.frombuffer(bytes.fromhex(data), dtype=dtype).reshape(shape).copy()", "",
             "def first_argument(*args, **kwargs):", "    return args[0]", ""]
    for i, stand_in in enumerate(found):
        if stand_in.returns is None:
            continue
        values = [_literal(r) for r in stand_in.returns]
        value = values[0] if len(values) == 1 else "(" + ", ".join(values) + ",)"
        lines += [f"def stand_in_{i}(*args, **kwargs):", f"    return {value}", ""]
    return "\n".join(lines)


def _calls(found: Sequence[StandIn]) -> ProblemCalls:
    calls = []
    for i, stand_in in enumerate(found):
        args, kwargs = call_arguments(stand_in.test)
        function = "first_argument" if stand_in.returns is None else f"stand_in_{i}"
        calls.append(Call(stand_in.call_id, function, tuple(args), kwargs))
    return ProblemCalls(CALLS, tuple(calls), batched=True)


def _run(found: Sequence[StandIn]) -> SubmissionRun:
    # the stand-ins are our own code, so the weakest isolation is enough and its warning is not news
    pool_log = logging.getLogger(SandboxPool.__module__)
    level = pool_log.level
    pool_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            pool = SandboxPool("numpy", jobs=1, isolation=IsolationRequest.ALLOW_RLIMITS)
        with pool:
            return pool.run(program(found), [_calls(found)])
    finally:
        pool_log.setLevel(level)


def power_findings(problems: Sequence) -> dict[str, list[str]]:
    """{problem id: findings} for the hidden tests a stand-in passes; problems without any are left out."""
    right = {problem.id: right_outputs(problem) for problem in problems}
    found = stand_ins(problems, right)
    if not found:
        return {}
    try:
        run = _run(found)
    except SandboxError as err:
        return {found[0].problem: [f"test power: the sandbox could not run the stand-ins ({err})"]}
    results = run.problems.get(CALLS)
    if results is None or results.status != "ok":
        why = results.message if results is not None else run.message
        return {found[0].problem: [f"test power: the stand-ins did not run ({why})"]}
    passed: dict[tuple[str, str], list[str]] = {}
    for stand_in in found:
        call = results.results.get(stand_in.call_id)
        test = stand_in.test
        want = select(right[stand_in.problem][test.name], test.output)
        if call is not None and call.ok and \
                compare(select(call.outputs, test.output), want, test.tolerance.abs, test.tolerance.rel) is None:
            passed.setdefault((stand_in.problem, test.name), []).append(stand_in.what)
    findings: dict[str, list[str]] = {}
    for (problem_id, test_name), whats in passed.items():
        findings.setdefault(problem_id, []).append(
            f"hidden test '{test_name}': passed by a function that returns {' or '.join(whats)}, whatever its input; "
            "give it an input whose right output is not a constant, or points: 0")
    return findings
