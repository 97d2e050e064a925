"""Check a bank deeply: a folder of problem files in, a list of one-line findings out (empty = valid).

Beyond the schema (load.py) it proves each problem can be graded: every dotted
reference resolves; a lecture example reproduces the lecture's figures; drawn
variants are feasible; templates render; and for each `implement` problem the
reference passes every test on every track, the stub fails every test, and each
misconception fails at least one hidden test (the hidden tests can catch it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from autograder.bank.answers import close
from autograder import extras
from autograder.bank.load import Bank, LoadReport, load_bank
from autograder.bank.model import ImplementProblem, NumericProblem, Problem, TestCase
from autograder.bank.outputs import Outputs, literal_outputs, run_trusted
from qkv_runtime.compare import compare, select
from autograder.bank.render import render_prompt, render_solution
from autograder.bank.resolve import UnresolvedReference, resolve
from autograder.bank.variants import InfeasibleProblem, draw_variant, lecture_variant

VARIANTS_CHECKED = 20


@dataclass(frozen=True)
class Finding:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _refs(problem: Problem) -> list[tuple[str, str]]:
    """(field, dotted reference) pairs a problem depends on."""
    if isinstance(problem, ImplementProblem):
        refs = [(f"references.{t}", r) for t, r in problem.references.items()] + [("stub", problem.stub)]
        refs += [(f"misconceptions.{m.id}", m.implementation) for m in problem.misconceptions if m.implementation]
        return refs
    if isinstance(problem, NumericProblem):
        refs = [("compute", problem.compute)] + ([("feasible", problem.feasible)] if problem.feasible else [])
        return refs + [(f"misconceptions.{m.id}", m.compute) for m in problem.misconceptions]
    return []


def _run(function, test: TestCase, track: str) -> tuple[Outputs | None, BaseException | None]:
    try:
        return run_trusted(function, test, track), None
    except Exception as err:  # noqa: BLE001 - any failure of the code under test is a finding, not a crash
        return None, err


def _passes(function, test: TestCase, track: str, want: Outputs | None) -> bool:
    got, error = _run(function, test, track)
    if test.expect_error:
        return error is not None and type(error).__name__ == test.expect_error
    return error is None and want is not None and compare(select(got, test.output), want, test.tolerance.abs, test.tolerance.rel) is None


def check_implement(problem: ImplementProblem) -> list[str]:
    problems: list[str] = []
    tests = problem.public_tests + problem.hidden_tests
    # without the torch extra the torch references cannot run here; `qkv validate` says so once
    reference = {track: resolve(ref) for track, ref in problem.references.items()
                 if track != "torch" or extras.available("torch")}
    if not reference:
        return []
    numpy_ref = reference.get("numpy") or next(iter(reference.values()))
    expected: dict[str, Outputs | None] = {}
    for test in tests:
        want, error = _run(numpy_ref, test, "numpy" if "numpy" in reference else "torch")
        if test.expect_error:
            if error is None or type(error).__name__ != test.expect_error:
                problems.append(f"test '{test.name}': the reference does not raise {test.expect_error}")
            expected[test.name] = None
            continue
        if error is not None:
            problems.append(f"test '{test.name}': the reference raised {type(error).__name__}: {error}")
            expected[test.name] = None
            continue
        expected[test.name] = select(want, test.output)
        if test.expect is not None:
            mismatch = compare(expected[test.name], literal_outputs(test.expect), test.tolerance.abs, test.tolerance.rel)
            if mismatch:
                problems.append(f"test '{test.name}': expect: the reference gives other numbers ({mismatch.reason})")
        for track, function in reference.items():
            if function is not numpy_ref and not _passes(function, test, track, expected[test.name]):
                problems.append(f"test '{test.name}': the {track} reference disagrees with the numpy one")
    stub = resolve(problem.stub)
    passing_stub = [t.name for t in tests if _passes(stub, t, "numpy", expected[t.name])]
    if passing_stub:
        problems.append(f"stub: passes test(s) {', '.join(passing_stub)}; a stub must fail every test")
    for wrong in problem.misconceptions:
        if not wrong.implementation:
            continue
        mutant = resolve(wrong.implementation)
        if all(_passes(mutant, t, "numpy", expected[t.name]) for t in problem.hidden_tests):
            problems.append(f"misconceptions.{wrong.id}: passes every hidden test; the hidden tests are too weak to catch it")
    return problems


def check_numeric(problem: NumericProblem) -> list[str]:
    problems: list[str] = []
    variants = []
    if problem.lecture_example is not None:
        variant = lecture_variant(problem)
        variants.append(variant)
        parts = {p.name: p for p in problem.parts}
        for name, figure in problem.lecture_example.expected.items():
            if name not in parts:
                problems.append(f"lecture_example.expected.{name}: no part of that name")
                continue
            got = variant.answers[name]
            want = np.asarray(figure, dtype=float)
            tol = parts[name].tolerance
            if got.shape != want.shape or not np.allclose(got, want, atol=tol.abs, rtol=tol.rel):
                problems.append(
                    f"lecture_example.expected.{name}: computed {np.round(got, 6).tolist()} "
                    f"but the file says {want.tolist()}"
                )
    if problem.parameters:
        try:
            variants += [draw_variant(problem, seed) for seed in range(VARIANTS_CHECKED)]
        except InfeasibleProblem as err:
            problems.append(f"parameters: {err}")
    for variant in variants:
        for wrong in problem.misconceptions:
            wrong_answers = resolve(wrong.compute)(**variant.params)
            # indistinguishable when every part it gives is within that part's grading tolerance
            if all(close(np.asarray(wrong_answers[p.name], dtype=float), variant.answers[p.name], p.tolerance)
                   for p in problem.parts if p.name in wrong_answers):
                problems.append(f"misconceptions.{wrong.id}: gives the right answer for {variant.params}")
                break
    for variant in variants[:3]:
        problems += [found for found in _render_problems(problem, variant) if found not in problems]
    return problems


def _render_problems(problem: Problem, variant=None) -> list[str]:
    out = []
    for field, render in (("prompt", render_prompt), ("solution", render_solution)):
        try:
            render(problem, variant)
        except (jinja2.TemplateError, TypeError, ValueError, KeyError) as err:
            out.append(f"{field}: template does not render: {err}")
    return out


def check_problem(problem: Problem) -> list[str]:
    """Everything wrong with one loaded problem, as 'field: reason' strings."""
    unresolved = []
    for field, ref in _refs(problem):
        if field == "references.torch" and not extras.available("torch"):
            continue  # not checkable here; `qkv validate` says so once
        try:
            resolve(ref)
        except UnresolvedReference as err:
            unresolved.append(f"{field}: unknown reference {err}")
    if unresolved:
        return unresolved
    try:
        if isinstance(problem, ImplementProblem):
            return check_implement(problem)
        if isinstance(problem, NumericProblem):
            return check_numeric(problem)
    except Exception as err:  # noqa: BLE001 - a broken compute/feasible function is the bank's error
        return [f"checking failed: {type(err).__name__}: {err}"]
    return _render_problems(problem)


def validate_bank(bank: Bank) -> list[Finding]:
    findings = []
    for problem_id, problem in sorted(bank.problems.items()):
        where = str(bank.paths[problem_id])
        findings += [Finding(where, what) for what in check_problem(problem)]
    return findings


def validate_report(report: LoadReport) -> list[Finding]:
    """Every loading error and every finding of the problems that loaded."""
    return [Finding(e.where, e.what) for e in report.errors] + validate_bank(report.bank)


def validate_path(path: Path | None) -> tuple[Bank, list[Finding]]:
    report = load_bank(path)
    return report.bank, validate_report(report)
