"""The student release: an `Assignment` and its `GradingBundle` in, {path: bytes} of `student/` out.

Only what students may see goes here: stubs, prompts, public tests (the
lecture's worked examples), and self-check data in which every written answer
is a salted digest. Never a reference, a hidden test, a mutant, or another
student's answer (tests/test_build.py scans the release for each).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import numpy as np

from autograder import answer_forms
from autograder.bank.answers import expected_shape
from autograder.bank.model import (
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
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    return {"value": value}


def _public_test(test: GradedTest) -> dict[str, Any]:
    digits = answer_forms.OUTPUT_DIGITS
    return {
        "name": test.name,
        "args": [_json_value(a) for a in test.args],
        "kwargs": {k: _json_value(v) for k, v in sorted(test.kwargs.items())},
        "expected": None if test.expected is None else [_json_value(np.asarray(e)) for e in test.expected],
        "expect_error": test.expect_error,
        "output": test.output,
        "tolerance": test.tolerance.model_dump(),
        "mutants": {m: answer_forms.outputs_digest(o, digits) for m, o in sorted(test.mutant_outputs.items())},
    }


def _digest(assignment: str, student: str, problem: str, part: str, canonical: str) -> str:
    return answer_forms.answer_digest(answer_forms.digest_salt(assignment, student, problem, part), canonical)


def _numeric_data(assigned: AssignedProblem, assignment: Assignment, students: list[str]) -> dict[str, Any]:
    problem = assigned.problem
    parts = [{"name": p.name, "label": p.label,
              "digits": answer_forms.kept_decimals(p.tolerance.abs, p.decimals),
              "neighbours": p.tolerance.abs > 0} for p in problem.parts]
    digests: dict[str, dict[str, str]] = {}
    shapes: dict[str, list[int]] = {}
    wrong: dict[str, list[dict[str, Any]]] = {}
    for student in students:
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants,
                              None if student == CLASS else student)
        digests[student] = {}
        for part in parts:
            value = variant.answers[part["name"]]
            shapes[part["name"]] = list(np.shape(value))
            digests[student][part["name"]] = _digest(assignment.name, student, problem.id, part["name"],
                                                     answer_forms.canonical_numbers(value, part["digits"]))
        for mistake in problem.misconceptions:
            answers = resolve(mistake.compute)(**variant.params)
            wrong.setdefault(student, []).append({
                "message": mistake.message,
                "digests": {p["name"]: _digest(assignment.name, student, problem.id, p["name"],
                                               answer_forms.canonical_numbers(answers[p["name"]], p["digits"]))
                            for p in parts if p["name"] in answers},
            })
    return {"parts": [{**p, "shape": shapes[p["name"]]} for p in parts], "digests": digests, "misconceptions": wrong}


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
                "x".join(answer_forms.evaluate_dim(d, problem.parameters) for d in m.answer))}}
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
        "qkv_answers.py": _package_text("answer_forms.py"),
        "selfcheck.json": json.dumps(selfcheck_data(assignment, bundle), indent=1, sort_keys=True) + "\n",
        f"{module}.ipynb": student_notebook(assignment),
    }
    return {path: text.encode("utf-8") for path, text in texts.items()}
