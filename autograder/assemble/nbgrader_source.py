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
(qkv_runtime.nbcells and what it needs) as one text, so test cells judge by the
rules of `qkv grade` and name the same mistakes. Our own metadata lives in `metadata.qkv` (nbgrader's
schema rejects unknown keys in `metadata.nbgrader`). Cell ids are derived from
problem ids and nothing depends on the clock, so builds are byte-identical.

nbgrader runs every cell in one kernel, the students' cells before each test cell,
and restores the locked cells' text but not what their code left in the kernel. So
each test cell begins with `FRESH`: it checks the runtime's text against the
SHA-256 digest built into it and runs that text again, into new modules; a
student's cell that redefined, patched or replaced the helpers, their modules or
the names the test cell uses leaves this cell's verdict unchanged (tested with real
nbgrader). What one kernel cannot stop: code that patches Python or NumPy
themselves (builtins, hashlib, numpy's functions), IPython's display of a cell's
value, or a student's function that, called by a test, reaches up the stack into
the test. `qkv grade` runs each notebook in the sandbox, in a process of its own.
Running the runtime afresh costs each test cell about 30 ms (compiling it).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
from importlib import resources
from typing import Any

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
    from nbformat.v4 import new_code_cell, new_markdown_cell  # nbformat loads only to build (a fifth of a second)

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


RUNTIME_MODULES = ("__init__", "judge", "wire", "values", "compare", "diagnosis", "answers", "nbcells")  # in import order

RUNTIME = """\
# qkv's portable runtime, embedded by `qkv build` from its own sources: the helpers cell and then every
# test cell run this text afresh, as new modules, so nothing a cell in between did to them is used.
import sys

SOURCES = {{
{sources}
}}
_previous = sys.modules.get("qkv_runtime.nbcells")
_modules = {{}}
for _name, _source in SOURCES.items():
    _module = _modules[_name] = type(sys)(_name)
    _module.__package__ = "qkv_runtime"
    if _name == "qkv_runtime":
        _module.__path__ = []
    else:
        setattr(_modules["qkv_runtime"], _name.rpartition(".")[2], _module)
    sys.modules[_name] = _module  # where relative imports and dataclasses look a module up
    exec(compile(_source, "<" + _name + ">", "exec"), _module.__dict__)
_nbcells = _modules["qkv_runtime.nbcells"]
_nbcells.carry_over(_previous)
CodeTests, WrittenAnswer, array = _nbcells.CodeTests, _nbcells.WrittenAnswer, _nbcells.array
"""

HELPERS = """\
# Grading helpers for the test cells below (locked: nbgrader restores this cell when it grades).
# _QKV_RUNTIME is qkv's portable runtime, embedded by `qkv build` from its own sources, so the test
# cells judge outputs and answers by the rules of `qkv grade`; each of them runs it afresh.
_QKV_RUNTIME = {runtime!r}
exec(_QKV_RUNTIME, {{}})  # here only to show at once a runtime that cannot run in this kernel
"""

# The first lines of every test cell. They look up nothing a student's cell can rebind (builtins come from the
# builtins module, not from names of the notebook) and take the runtime's text only if it is, to the bit, the
# text that was built; its classes are then new, in a namespace of this cell's own.
FRESH = """\
import builtins as _qkv_b, hashlib as _qkv_h  # the grading helpers afresh: an earlier cell may have changed them
_qkv_s, _qkv_n = _qkv_b.globals().get("_QKV_RUNTIME"), {{"__builtins__": _qkv_b}}
if _qkv_b.type(_qkv_s) is not _qkv_b.str or _qkv_h.sha256(_qkv_s.encode()).hexdigest() != {digest!r}:
    raise _qkv_b.RuntimeError("the grading helpers cell has not run, or a cell changed it: run the notebook from the top")
_qkv_b.exec(_qkv_b.compile(_qkv_s, "<qkv runtime>", "exec"), _qkv_n)
_QkvTests, _QkvAnswer, _qkv_array = _qkv_n["CodeTests"], _qkv_n["WrittenAnswer"], _qkv_n["array"]
"""


def _relative_imports(text: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
    return found


def _runtime() -> str:
    folder = resources.files("qkv_runtime")
    sources: list[str] = []
    seen: set[str] = set()
    for module in RUNTIME_MODULES:
        text = folder.joinpath(module + ".py").read_text(encoding="utf-8")
        # the runtime is run module by module in this order: each may import only those before it
        needs = _relative_imports(text)
        if not needs <= seen:
            raise RuntimeError(f"qkv_runtime/{module}.py imports {sorted(needs - seen)} before they are run")
        seen.add(module)
        name = "qkv_runtime" if module == "__init__" else f"qkv_runtime.{module}"
        sources.append(f"    {name!r}: {text!r},")
    source = RUNTIME.format(sources="\n".join(sources))
    ast.parse(source)  # fail at build time, not in a kernel
    return source


def _fresh(runtime: str) -> str:
    return FRESH.format(digest=hashlib.sha256(runtime.encode()).hexdigest())


# ---------------------------------------------------------------- notebook


def _prompt(assigned: AssignedProblem, assignment: Assignment) -> str:
    if assignment.manifest.variants == "per_student" and kind_of(assigned.problem).per_student(assigned.problem):
        class_wide = dataclasses.replace(assignment, manifest=assignment.manifest.model_copy(update={"variants": "same"}))
        return (problem_markdown(assigned, class_wide).rstrip("\n")
                + "\n\n*nbgrader grades the class-wide version above (its numbers, the order of its choices); "
                "your own is graded by `qkv grade`.*\n")
    return problem_markdown(assigned, assignment)


def source_notebook(assignment: Assignment, bundle: GradingBundle) -> str:
    runtime = _runtime()
    fresh = _fresh(runtime)
    cells = [
        _cell("markdown", _intro(assignment), "qkv-intro", "intro", locked=True),
        _cell("code", _setup(assignment), "qkv-setup", "setup", locked=True),
        _cell("code", HELPERS.format(runtime=runtime), "qkv-helpers", "selfcheck", locked=True),
    ]
    for assigned in assignment.problems:
        problem = assigned.problem
        pid = problem.id
        cells.append(_cell("markdown", _prompt(assigned, assignment), f"{pid}-prompt", "prompt", pid, locked=True))
        kind = kind_of(problem)
        solution = kind.nbgrader_solution(assigned, assignment)
        tests = kind.nbgrader_tests(assigned, assignment, bundle)
        cells.append(_cell("code", solution, f"{pid}-solution", "work", pid, solution=True))
        cells.append(_cell("code", fresh + tests, f"{pid}-tests", "selfcheck", pid,
                           grade=True, locked=True, points=float(assigned.points)))
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC,
                                                              "language_info": {"name": "python"}})
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
