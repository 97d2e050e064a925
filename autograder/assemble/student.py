"""The student release: an `Assignment` and its `GradingBundle` in, {path: bytes} of `student/` out.

Only what students may see goes here: stubs, prompts, public tests (the
lecture's worked examples), and self-check data in which every written answer
is sealed under a slow, salted key (each problem's entry is written by its kind,
in autograder/kinds/; kinds/sealing.py derives the keys, once each, at the end). Never a reference, a hidden test, a mutant, or another
student's answer (tests/assemble/test_build.py scans the release for each).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from autograder.assemble.manifest import Assignment
from autograder.assemble.notebook import student_notebook
from autograder.assemble.student_text import TEMPLATES, problems_markdown, stub_module, students_of, written_prompt
from autograder.bundle import GradingBundle
from autograder.kinds import kind_of
from autograder.kinds.sealing import derive_seals
from autograder.practice.catalogue import topic_of
from qkv_runtime import sealed


# --------------------------------------------------------- self-check data


def selfcheck_data(assignment: Assignment, bundle: GradingBundle) -> dict[str, Any]:
    students = students_of(assignment)
    problems = []
    for assigned in assignment.problems:
        problem = assigned.problem
        kind = kind_of(problem)
        # "code": the self-check runs public tests of a function, or judges an ANSWERS entry by its kind's judge
        entry: dict[str, Any] = {"id": problem.id, "kind": problem.kind, "code": kind.code, "judge": kind.selfcheck_judge,
                                 "title": problem.title, "points": assigned.points,
                                 "topic": topic_of(problem)}  # the self-check's history shows mastery by it
        entry.update(kind.selfcheck_data(assigned, assignment, bundle, students))
        problems.append(entry)
    prompts = {}
    if assignment.manifest.variants == "per_student":
        prompts = {s: {p.problem.id: written_prompt(p, assignment, s) for p in assignment.written
                       if kind_of(p.problem).per_student(p.problem)} for s in students}
    params = sealed.kdf_params()
    return {
        "format": sealed.FORMAT, "assignment": assignment.name, "title": assignment.manifest.title,
        "track": assignment.track, "module": assignment.module_name, "variants": assignment.manifest.variants,
        "max_points": assignment.max_points, "problems": derive_seals(problems, params), "prompts": prompts,
        "roster": list(students) if assignment.manifest.variants == "per_student" else [],
        "kdf": params, "limits": bundle.limits.to_json(),
    }


# ----------------------------------------------------------------- release


def _python_files(folder: Any, into: str) -> dict[str, str]:
    """A package folder's modules, {into/name: source}, byte for byte: one source, copied."""
    return {f"{into}/{entry.name}": entry.read_bytes().decode("utf-8")
            for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".py")}


def runtime_files() -> dict[str, str]:
    """The portable runtime's modules, {path in a release: source}: the self-check runs on the grader's rules."""
    return _python_files(resources.files("qkv_runtime"), "qkv_runtime")


def selfcheck_files() -> dict[str, str]:
    """The self-check, {path in a release: source}: qkv_check.py, which students run and their notebook imports,
    and its parts, the package beside it (autograder/selfcheck/qkv_selfcheck/)."""
    folder = resources.files("autograder.selfcheck")
    return {"qkv_check.py": folder.joinpath("qkv_check.py").read_bytes().decode("utf-8"),
            **_python_files(folder.joinpath("qkv_selfcheck"), "qkv_selfcheck")}


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
        **selfcheck_files(),
        **runtime_files(),
        "selfcheck.json": json.dumps(selfcheck_data(assignment, bundle), indent=1, sort_keys=True) + "\n",
        f"{module}.ipynb": student_notebook(assignment),
    }
    return {path: text.encode("utf-8") for path, text in texts.items()}
