"""The student release: an `Assignment` and its `GradingBundle` in, {path: bytes} of `student/` out.

Only what students may see goes here: stubs, prompts, public tests (the
lecture's worked examples), and self-check data in which every written answer
is a salted digest. Never a reference, a hidden test, a mutant, or another
student's answer (tests/test_build.py scans the release for each).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Callable

import numpy as np

from qkv_runtime import answers, sealed
from autograder.bank.answers import close, expected_shape
from autograder.bank.model import (
    AnswerPart,
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    ShapeProblem,
    TrueFalseProblem,
)
from autograder.bank.resolve import resolve
from autograder.bank.variants import variant_for
from autograder.build.manifest import AssignedProblem, Assignment
from autograder.build.notebook import student_notebook
from autograder.build.student_text import (
    CLASS,
    TEMPLATES,
    problems_markdown,
    stub_module,
    students_of,
    written_prompt,
)
from autograder.bundle import GradedTest, GradingBundle

# --------------------------------------------------------- self-check data


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    return {"value": value}


def _public_test(test: GradedTest) -> dict[str, Any]:
    digits = sealed.OUTPUT_DIGITS
    return {
        "name": test.name,
        "args": [_json_value(a) for a in test.args],
        "kwargs": {k: _json_value(v) for k, v in sorted(test.kwargs.items())},
        "expected": None if test.expected is None else [_json_value(np.asarray(e)) for e in test.expected],
        "expect_error": test.expect_error,
        "output": test.output,
        "tolerance": test.tolerance.model_dump(),
        "mutants": {m: sealed.outputs_digest(o, digits) for m, o in sorted(test.mutant_outputs.items())},
    }


def _digest(assignment: str, student: str, problem: str, part: str, canonical: str) -> str:
    return sealed.answer_digest(sealed.digest_salt(assignment, student, problem, part), canonical)


def number_digests(salt: Callable[[str], str], values: Any, mode: str, steps: list[float]) -> list[str]:
    """Digests of `values` snapped to the grid `steps`: one for the whole part, or one per entry.

    `salt(suffix)` gives the salt of the part ("" ) or of entry i ("[i]").
    """
    values = np.asarray(values, dtype=float)
    ks = [sealed.grid_index(x, step) for x, step in zip(values.reshape(-1), steps)]
    if mode == "whole":
        return [sealed.answer_digest(salt(""), sealed.grid_form(ks, values.shape))]
    return [sealed.answer_digest(salt(f"[{i}]"), sealed.grid_form([k], ())) for i, k in enumerate(ks)]


def numeric_part_data(salt: Callable[[str], str], want: Any, part: AnswerPart,
                      wrong: list[Any]) -> tuple[dict[str, Any], list[list[str] | None]]:
    """One part for one student: how it is hashed and the digests of the right answer, and of each
    wrong answer in `wrong` (None where a wrong answer has another shape or is within tolerance)."""
    want = np.asarray(want, dtype=float)
    tol = part.tolerance
    mode, steps, exact = sealed.grid_plan(want, tol.abs, tol.rel, part.decimals)
    entry = {"mode": mode, "steps": steps, "exact": exact, "digests": number_digests(salt, want, mode, steps)}
    wrong_digests: list[list[str] | None] = []
    for value in wrong:
        value = None if value is None else np.asarray(value, dtype=float)
        if value is None or value.size != want.size or close(value.reshape(want.shape), want, tol):
            wrong_digests.append(None)  # another shape, or not a mistake for these numbers
        else:
            wrong_digests.append(number_digests(salt, value.reshape(want.shape), mode, steps))
    return entry, wrong_digests


def _numeric_data(assigned: AssignedProblem, assignment: Assignment, students: list[str]) -> dict[str, Any]:
    problem = assigned.problem
    parts = problem.parts
    digests: dict[str, dict[str, Any]] = {}
    shapes: dict[str, list[int]] = {}
    wrong: dict[str, list[dict[str, Any]]] = {}
    for student in students:
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants,
                              None if student == CLASS else student)
        mistakes = [resolve(m.compute)(**variant.params) for m in problem.misconceptions]
        digests[student] = {}
        found: list[dict[str, list[str]]] = [{} for _ in mistakes]
        for part in parts:
            want = variant.answers[part.name]
            shapes[part.name] = list(np.shape(want))
            salt = lambda suffix, p=part.name: sealed.digest_salt(  # noqa: E731
                assignment.name, student, problem.id, p + suffix)
            entry, wrong_parts = numeric_part_data(salt, want, part, [m.get(part.name) for m in mistakes])
            digests[student][part.name] = entry
            for i, d in enumerate(wrong_parts):
                if d is not None:
                    found[i][part.name] = d
        wrong[student] = [{"message": m.message, "digests": f}
                          for m, f in zip(problem.misconceptions, found) if f]
    return {
        "parts": [{"name": p.name, "label": p.label, "shape": shapes[p.name],
                   "tolerance": p.tolerance.model_dump()} for p in parts],
        "digests": digests,
        "misconceptions": wrong,
    }


def _written_data(assigned: AssignedProblem, assignment: Assignment, students: list[str]) -> dict[str, Any]:
    problem = assigned.problem
    name = assignment.name

    def digests_of(canonical: str) -> dict[str, dict[str, str]]:
        return {s: {"answer": _digest(name, s, problem.id, "answer", canonical)} for s in students}

    if isinstance(problem, NumericProblem):
        return _numeric_data(assigned, assignment, students)
    if isinstance(problem, ShapeProblem):
        return {
            "symbols": problem.parameters,
            "digests": digests_of("x".join(expected_shape(problem))),
            "misconceptions": {s: [{"message": m.message, "digests": {"answer": _digest(
                name, s, problem.id, "answer",
                "x".join(answers.evaluate_dim(d, problem.parameters) for d in m.answer))}}
                for m in problem.misconceptions] for s in students},
        }
    if isinstance(problem, TrueFalseProblem):
        return {"digests": digests_of("true" if problem.answer else "false"), "misconceptions": {}}
    assert isinstance(problem, MultipleChoiceProblem)
    return {
        "choices": len(problem.choices),
        "digests": digests_of(problem.answer),
        "misconceptions": {s: [{"message": c.misconception, "digests": {"answer": _digest(
            name, s, problem.id, "answer", chr(65 + i))}}
            for i, c in enumerate(problem.choices) if c.misconception] for s in students},
    }


def selfcheck_data(assignment: Assignment, bundle: GradingBundle) -> dict[str, Any]:
    students = students_of(assignment)
    public = {p.id: [_public_test(t) for t in p.tests if t.visibility == "public"] for p in bundle.code}
    hidden = {p.id: sum(t.visibility == "hidden" for t in p.tests) for p in bundle.code}
    problems = []
    for assigned in assignment.problems:
        problem = assigned.problem
        entry: dict[str, Any] = {"id": problem.id, "kind": problem.kind, "title": problem.title, "points": assigned.points}
        if isinstance(problem, ImplementProblem):
            entry.update(function=problem.function, public_tests=public[problem.id], hidden_tests=hidden[problem.id],
                         misconceptions={m.id: m.message for m in problem.misconceptions})
        else:
            entry.update(_written_data(assigned, assignment, students))
        problems.append(entry)
    prompts = {}
    if assignment.manifest.variants == "per_student":
        prompts = {s: {p.problem.id: written_prompt(p, assignment, s) for p in assignment.written
                       if isinstance(p.problem, NumericProblem)} for s in students}
    return {
        "format": 1, "assignment": assignment.name, "title": assignment.manifest.title,
        "track": assignment.track, "module": assignment.module_name, "variants": assignment.manifest.variants,
        "max_points": assignment.max_points, "problems": problems, "prompts": prompts,
    }


# ----------------------------------------------------------------- release


def _package_text(module: str) -> str:
    return resources.files("autograder").joinpath(module).read_text(encoding="utf-8")


def runtime_files() -> dict[str, str]:
    """The portable runtime's modules, {path in a release: source}: the self-check runs on the grader's rules."""
    folder = resources.files("qkv_runtime")
    return {f"qkv_runtime/{entry.name}": entry.read_text(encoding="utf-8")
            for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".py")}


def student_files(assignment: Assignment, bundle: GradingBundle) -> dict[str, bytes]:
    module = assignment.module_name
    context = dict(title=assignment.manifest.title, track=assignment.track, module=module,
                   due=str(assignment.manifest.due) if assignment.manifest.due else None,
                   max_points=assignment.max_points, per_student=assignment.manifest.variants == "per_student")
    texts = {
        f"{module}.py": stub_module(assignment),
        "README.md": TEMPLATES.get_template("README.md.j2").render(**context),
        "PROBLEMS.md": problems_markdown(assignment),
        "tests/test_public.py": TEMPLATES.get_template("test_public.py.j2").render(**context),
        "pytest.ini": "[pytest]\ntestpaths = tests\naddopts = -p no:cacheprovider\n",
        "qkv_check.py": _package_text("selfcheck/qkv_check.py"),
        **runtime_files(),
        "selfcheck.json": json.dumps(selfcheck_data(assignment, bundle), indent=1, sort_keys=True) + "\n",
        f"{module}.ipynb": student_notebook(assignment),
    }
    return {path: text.encode("utf-8") for path, text in texts.items()}
