"""The student release: an `Assignment` and its `GradingBundle` in, {path: bytes} of `student/` out.

Only what students may see goes here: stubs, prompts, public tests (the
lecture's worked examples), and self-check data in which every written answer
is a salted digest. Never a reference, a hidden test, a mutant, or another
student's answer (tests/test_build.py scans the release for each).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
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


class Seal:
    """A placeholder in the self-check data: the tag (and, for numbers, the sealed exact values) of one
    answer under the key of `password` and `salt`, derived later with all the others (`derive_seals`)."""

    __slots__ = ("password", "salt", "label", "values")

    def __init__(self, password: str, salt: str, label: str, values: list[float] | None = None) -> None:
        self.password, self.salt, self.label, self.values = password, salt, label, values

    def render(self, key: bytes) -> Any:
        if self.values is None:
            return sealed.tag(key, self.label)
        return {"tag": sealed.tag(key, self.label), "sealed": sealed.seal(key, self.label, self.values)}


def _seals(value: Any) -> list[Seal]:
    if isinstance(value, Seal):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _seals(v)]
    if isinstance(value, list):
        return [s for v in value for s in _seals(v)]
    return []


def _rendered(value: Any, keys: dict[tuple[str, str], bytes]) -> Any:
    if isinstance(value, Seal):
        return value.render(keys[value.password, value.salt])
    if isinstance(value, dict):
        return {k: _rendered(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_rendered(v, keys) for v in value]
    return value


def derive_seals(data: Any, params: dict[str, Any], workers: int | None = None) -> Any:
    """`data` with every Seal replaced by its tag and sealed values: each distinct key derived once, in
    threads (hashlib.scrypt releases the GIL: 2 cores derive twice as many keys a second). The keys are
    a function of their inputs alone, so the result is the same however the work is spread."""
    wanted = list(dict.fromkeys((s.password, s.salt) for s in _seals(data)))
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(wanted) < 2:
        keys = [sealed.derive_key(p, s, params) for p, s in wanted]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            keys = list(pool.map(lambda ps: sealed.derive_key(ps[0], ps[1], params), wanted))
    return _rendered(data, dict(zip(wanted, keys)))


def number_seals(salt: Callable[[str], str], values: Any, mode: str, sizes: list[float], label: str) -> list[Seal]:
    """The seals of `values` in their cells: one for the whole part, or one per entry.

    `salt(suffix)` gives the salt of the part ("") or of entry i ("[i]").
    """
    values = np.asarray(values, dtype=float)
    flat = [float(x) for x in values.reshape(-1)]
    ks = [sealed.cell_index(x, size) for x, size in zip(flat, sizes)]
    if mode == "whole":
        return [Seal(sealed.cell_password(sizes, values.shape, ks), salt(""), label, flat)]
    return [Seal(sealed.cell_password([size], (), [k]), salt(f"[{i}]"), label, [x])
            for i, (x, size, k) in enumerate(zip(flat, sizes, ks))]


def numeric_part_plan(salt: Callable[[str], str], want: Any, part: AnswerPart,
                      wrong: list[Any]) -> tuple[dict[str, Any], list[list[Seal] | None]]:
    """One part for one student: its mode, cell sizes and the seals of the right answer, and of each
    wrong answer in `wrong` (None where a wrong answer has another shape or is within tolerance)."""
    want = np.asarray(want, dtype=float)
    tol = part.tolerance
    mode, sizes = sealed.part_plan(want, tol.abs, tol.rel, part.decimals)
    entry = {"mode": mode, "cells": sizes, "right": number_seals(salt, want, mode, sizes, "right")}
    wrong_seals: list[list[Seal] | None] = []
    for j, value in enumerate(wrong):
        value = None if value is None else np.asarray(value, dtype=float)
        if value is None or value.size != want.size or close(value.reshape(want.shape), want, tol):
            wrong_seals.append(None)  # another shape, or not a mistake for these numbers
        else:
            wrong_seals.append(number_seals(salt, value.reshape(want.shape), mode, sizes, f"mistake{j}"))
    return entry, wrong_seals


def numeric_part_data(salt: Callable[[str], str], want: Any, part: AnswerPart, wrong: list[Any],
                      params: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Any]]:
    """`numeric_part_plan` with its keys derived: the part's data as selfcheck.json holds it."""
    entry, wrong_seals = numeric_part_plan(salt, want, part, wrong)
    return derive_seals([entry, wrong_seals], params or sealed.kdf_params())


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
        found: list[dict[str, list[Seal]]] = [{} for _ in mistakes]
        for part in parts:
            want = variant.answers[part.name]
            shapes[part.name] = list(np.shape(want))
            salt = lambda suffix, p=part.name: sealed.digest_salt(  # noqa: E731
                assignment.name, student, problem.id, p + suffix)
            entry, wrong_parts = numeric_part_plan(salt, want, part, [m.get(part.name) for m in mistakes])
            digests[student][part.name] = entry
            for i, d in enumerate(wrong_parts):
                if d is not None:
                    found[i][part.name] = d
        wrong[student] = [{"message": m.message, "label": f"mistake{j}", "digests": f}
                          for j, (m, f) in enumerate(zip(problem.misconceptions, found)) if f]
    return {
        "parts": [{"name": p.name, "label": p.label, "shape": shapes[p.name],
                   "tolerance": p.tolerance.model_dump()} for p in parts],
        "digests": digests,
        "misconceptions": wrong,
    }


def answer_seal(assignment: str, problem: str, canonical: str, label: str) -> Seal:
    """Shapes, true/false and letters are the same for every student (only numbers vary per student):
    one class-wide key each, a student's own salt would cost the build a key per student and hide nothing."""
    return Seal(sealed.answer_password(canonical), sealed.digest_salt(assignment, CLASS, problem, "answer"), label)


def _written_data(assigned: AssignedProblem, assignment: Assignment, students: list[str]) -> dict[str, Any]:
    problem = assigned.problem
    name = assignment.name

    def right(canonical: str) -> dict[str, dict[str, Any]]:
        return {CLASS: {"answer": answer_seal(name, problem.id, canonical, "right")}}

    def mistakes(canonicals: list[tuple[str, str]]) -> dict[str, list[dict[str, Any]]]:
        return {CLASS: [{"message": message, "digests": {"answer": answer_seal(name, problem.id, c, "mistake")}}
                        for message, c in canonicals]}

    if isinstance(problem, NumericProblem):
        return _numeric_data(assigned, assignment, students)
    if isinstance(problem, ShapeProblem):
        return {
            "symbols": problem.parameters,
            "digests": right("x".join(expected_shape(problem))),
            "misconceptions": mistakes([(m.message, "x".join(answers.evaluate_dim(d, problem.parameters)
                                                             for d in m.answer)) for m in problem.misconceptions]),
        }
    if isinstance(problem, TrueFalseProblem):
        return {"digests": right("true" if problem.answer else "false"), "misconceptions": {}}
    assert isinstance(problem, MultipleChoiceProblem)
    return {
        "choices": len(problem.choices),
        "digests": right(problem.answer),
        "misconceptions": mistakes([(c.misconception, chr(65 + i)) for i, c in enumerate(problem.choices)
                                    if c.misconception]),
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
    params = sealed.kdf_params()
    return {
        "format": sealed.FORMAT, "assignment": assignment.name, "title": assignment.manifest.title,
        "track": assignment.track, "module": assignment.module_name, "variants": assignment.manifest.variants,
        "max_points": assignment.max_points, "problems": derive_seals(problems, params), "prompts": prompts,
        "roster": list(students) if assignment.manifest.variants == "per_student" else [],
        "kdf": params, "limits": bundle.limits.to_json(),
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
