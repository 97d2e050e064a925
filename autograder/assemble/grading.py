"""The grading bundle of an assignment: an `Assignment` in, a `GradingBundle` (expected outputs computed) out.

This is the only place where references and misconception mutants run for an
assignment's code problems: once, at build time, in the trusted process. Each
test also keeps the reference's outputs with a misconception of a function it
builds on inside (compose.py), where they differ from the right outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from autograder.kinds.implement.inputs import call_arguments
from autograder.kinds.implement.outputs import run_trusted
from autograder.kinds.resolve import resolve
from autograder.assemble.compose import builds_on, composed_functions
from autograder.assemble.manifest import Assignment
from autograder.bundle import CodeProblem, GradedTest, GradingBundle, WrittenProblem
from autograder.kinds.implement import ImplementProblem
from autograder.kinds.model import TestCase, Track
from qkv_runtime.compare import compare, select


def _upstream_outputs(composed, test, expected) -> dict:
    found: dict = {}
    for upstream, mistakes in composed.items():
        for mistake_id, function in mistakes.items():
            try:
                outputs = select(run_trusted(function, test), test.output)
            except Exception:  # noqa: BLE001 - a composition that cannot run on this input just can't be recognised
                continue
            if expected is not None and compare(outputs, expected, test.tolerance.abs, test.tolerance.rel) is None:
                continue  # the mistake upstream does not change this test's answer
            found.setdefault(upstream, {})[mistake_id] = outputs
    return found


def _code_problem(problem: ImplementProblem, points: float, track: Track,
                  others: Sequence[ImplementProblem] = ()) -> CodeProblem:
    reference = resolve(problem.references[track])
    mutants = {m.id: resolve(m.implementation) for m in problem.misconceptions if m.implementation}
    upstream = builds_on(problem, list(others))
    composed = composed_functions(problem, [o for o in others if o.id in upstream])
    weighted: list[tuple[TestCase, Literal["public", "hidden"]]] = [(t, "public") for t in problem.public_tests] + [(t, "hidden") for t in problem.hidden_tests]
    tests = []
    for test, visibility in weighted:
        args, kwargs = call_arguments(test)
        expected = None if test.expect_error else select(run_trusted(reference, test, track), test.output)
        mutant_outputs = {}
        for mutant_id, mutant in mutants.items():
            try:
                mutant_outputs[mutant_id] = select(run_trusted(mutant, test), test.output)
            except Exception:  # noqa: BLE001 - a mutant that cannot run on this input just can't be recognised here
                continue
        tests.append(GradedTest(
            problem_id=problem.id, name=test.name, visibility=visibility,
            weight=test.points, tolerance=test.tolerance,
            args=args, kwargs=kwargs, expected=expected, expect_error=test.expect_error,
            output=test.output, mutant_outputs=mutant_outputs,
            upstream_outputs=_upstream_outputs(composed, test, expected) if not test.expect_error else {},
        ))
    return CodeProblem(problem.id, problem.title, points, problem.function, tuple(tests),
                       {m.id: m.message for m in problem.misconceptions}, upstream)


def grading_bundle(assignment: Assignment) -> GradingBundle:
    manifest = assignment.manifest
    return GradingBundle(
        name=assignment.name, title=manifest.title, track=manifest.track, seed=manifest.seed,
        variants=manifest.variants, due=manifest.due.isoformat() if manifest.due else None,
        code=tuple(_code_problem(p.problem, p.points, manifest.track, [q.problem for q in assignment.implement])
                   for p in assignment.implement),
        written=tuple(WrittenProblem(p.problem.id, p.points, p.problem) for p in assignment.written),
        problem_order=tuple(p.problem.id for p in assignment.problems),
        limits=assignment.limits, isolation=manifest.grading.isolation,
        late=manifest.late,
        serve=manifest.serve.model_dump(mode="json"),
        written_attempts=manifest.written_attempts,
    )
