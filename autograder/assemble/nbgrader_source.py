"""The nbgrader course folder: an `Assignment` and its `GradingBundle` in, {path: bytes} of `nbgrader/` out.

`nbgrader_config.py` (course id, root, gradebook in the course folder) and
`source/NAME/NAME.ipynb`, an nbgrader source notebook (cell metadata schema 3):
locked prompts, a locked setup cell, a locked cell of grading helpers, and per
problem a solution cell (the reference between BEGIN/END SOLUTION, or the right
`ANSWERS` entry) and an autograded test cell, both written by the problem's kind
(autograder/kinds/). A test cell holds the public tests in the open and the
hidden ones between BEGIN/END HIDDEN TESTS; its last line's value is the points
earned, which nbgrader reads as partial credit, weighted per test as `qkv grade` does.

Test inputs, expected outputs and each named mistake's outputs are the bundle's
exact arrays, base64-encoded; the helpers cell embeds the portable runtime
(qkv_runtime.nbcells and what it needs), so test cells judge by the rules of
`qkv grade` and name the same mistakes. Our own metadata lives in `metadata.qkv` (nbgrader's
schema rejects unknown keys in `metadata.nbgrader`). Cell ids are derived from
problem ids and nothing depends on the clock, so builds are byte-identical.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from importlib import resources
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.assemble.manifest import AssignedProblem, Assignment
from autograder.assemble.notebook import KERNELSPEC
from autograder.assemble.student_text import TRACK_IMPORTS, problem_markdown
from autograder.bundle import GradingBundle
from autograder.kinds import kind_of

COURSE_ID = "qkv"
SCHEMA_VERSION = 3

CONFIG = '''\
"""nbgrader configuration of this course folder (written by `qkv build`).

Run nbgrader from this folder with the virtual environment's bin/ first on PATH
(nbgrader runs `alembic` from PATH when it creates the gradebook):

    nbgrader generate_assignment {name} --force
    nbgrader autograde {name}
"""

import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

_here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.root = _here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_here, "gradebook.db")
c.Execute.timeout = {timeout}  # seconds per cell: the assignment's limit for loading, or for one problem
'''


# ------------------------------------------------------------------ cells


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                            "schema_version": SCHEMA_VERSION, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def _cell(kind: str, source: str, cell_id: str, role: str, problem: str | None = None, **nbgrader: Any):
    make = new_markdown_cell if kind == "markdown" else new_code_cell
    cell = make(source.rstrip("\n"))
    cell.id = cell_id[-64:]
    cell.metadata["nbgrader"] = _meta(cell_id, **nbgrader)
    # role "selfcheck" for helpers and tests: `qkv grade` skips those cells of a submitted notebook
    cell.metadata["qkv"] = {"role": role, **({"problem": problem} if problem else {})}
    return cell


# ------------------------------------------------------------ fixed cells


def _intro(assignment: Assignment) -> str:
    text = (
        f"# {assignment.manifest.title}\n\n"
        "Write each function in the cell under its prompt (replace `raise NotImplementedError()`), "
        "set each `ANSWERS[...]` entry, then restart the kernel and run every cell from the top. "
        "The locked cell after each problem runs its public tests now; hidden tests are added when it is graded, "
        "and its result is the points earned."
    )
    if assignment.manifest.variants == "per_student":
        text += (
            "\n\n**Hand calculations:** this assignment gives every student their own numbers when it is graded "
            "with `qkv grade`. This nbgrader notebook uses the **class-wide numbers** shown in each prompt, "
            "and nbgrader grades those; per-student numbers are graded by `qkv grade`, not by nbgrader."
        )
    return text


def _setup(assignment: Assignment) -> str:
    return (
        'STUDENT_ID = ""  # your student id, e.g. "s1234567"\n\n'
        f"{TRACK_IMPORTS[assignment.track]}\n\n"
        "ANSWERS = {}"
    )


RUNTIME_MODULES = ("__init__", "wire", "values", "compare", "diagnosis", "answers", "nbcells")  # what the test cells run on

HELPERS = """\
# Grading helpers for the test cells below (locked: nbgrader restores this cell when it grades).
# qkv's portable runtime, embedded by `qkv build` from its own sources, so the test cells judge
# outputs and answers by the rules of `qkv grade`.
import importlib.abc as _qkv_abc
import importlib.util as _qkv_util
import sys as _qkv_sys


class _QkvRuntime(_qkv_abc.MetaPathFinder, _qkv_abc.Loader):
    def __init__(self, sources):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name in self.sources:
            return _qkv_util.spec_from_loader(name, self, is_package=name == "qkv_runtime")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(self.sources[module.__name__], "<" + module.__name__ + ">", "exec"), module.__dict__)


for _qkv_name in [n for n in _qkv_sys.modules if n == "qkv_runtime" or n.startswith("qkv_runtime.")]:
    del _qkv_sys.modules[_qkv_name]
_qkv_sys.meta_path[:] = [f for f in _qkv_sys.meta_path if type(f).__name__ != "_QkvRuntime"]
_qkv_sys.meta_path.insert(0, _QkvRuntime({{
{sources}
}}))
from qkv_runtime.nbcells import CodeTests as _QkvTests, WrittenAnswer as _QkvAnswer, array as _qkv_array
"""


def _helpers() -> str:
    folder = resources.files("qkv_runtime")
    sources = []
    for module in RUNTIME_MODULES:
        name = "qkv_runtime" if module == "__init__" else f"qkv_runtime.{module}"
        sources.append(f"    {name!r}: {folder.joinpath(module + '.py').read_text(encoding='utf-8')!r},")
    source = HELPERS.format(sources="\n".join(sources))
    ast.parse(source)  # fail at build time, not in a kernel
    return source


# ---------------------------------------------------------------- notebook


def _prompt(assigned: AssignedProblem, assignment: Assignment) -> str:
    if assignment.manifest.variants == "per_student" and kind_of(assigned.problem).per_student(assigned.problem):
        class_wide = dataclasses.replace(assignment, manifest=assignment.manifest.model_copy(update={"variants": "same"}))
        return (problem_markdown(assigned, class_wide).rstrip("\n")
                + "\n\n*nbgrader grades the class-wide version above (its numbers, the order of its choices); "
                "your own is graded by `qkv grade`.*\n")
    return problem_markdown(assigned, assignment)


def source_notebook(assignment: Assignment, bundle: GradingBundle) -> str:
    cells = [
        _cell("markdown", _intro(assignment), "qkv-intro", "intro", locked=True),
        _cell("code", _setup(assignment), "qkv-setup", "setup", locked=True),
        _cell("code", _helpers(), "qkv-helpers", "selfcheck", locked=True),
    ]
    for assigned in assignment.problems:
        problem = assigned.problem
        pid = problem.id
        cells.append(_cell("markdown", _prompt(assigned, assignment), f"{pid}-prompt", "prompt", pid, locked=True))
        kind = kind_of(problem)
        solution = kind.nbgrader_solution(assigned, assignment)
        tests = kind.nbgrader_tests(assigned, assignment, bundle)
        cells.append(_cell("code", solution, f"{pid}-solution", "work", pid, solution=True))
        cells.append(_cell("code", tests, f"{pid}-tests", "selfcheck", pid,
                           grade=True, locked=True, points=float(assigned.points)))
    notebook = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)


def nbgrader_files(assignment: Assignment, bundle: GradingBundle) -> dict[str, bytes]:
    name = assignment.name
    return {
        "nbgrader_config.py": CONFIG.format(name=name, course=COURSE_ID, timeout=math.ceil(
            max(bundle.limits.load_seconds, bundle.limits.problem_seconds))).encode(),
        f"source/{name}/{name}.ipynb": (source_notebook(assignment, bundle)).encode(),
    }


__all__ = ["COURSE_ID", "nbgrader_files", "source_notebook"]
