"""Shared fixtures: the bank, built assignments, and submissions made from the answer key."""

from __future__ import annotations

import inspect
import pprint
import sqlite3
from pathlib import Path

import nbformat
import pytest

from autograder.bank.load import Bank, load_bank_strict
from autograder.build import BuildResult, build
from autograder.build.manifest import Assignment
from autograder.build.solution_key import key_answer, key_function, key_module

@pytest.fixture(scope="session")
def bank() -> Bank:
    return load_bank_strict()


@pytest.fixture(scope="session")
def built_numpy(bank, tmp_path_factory) -> BuildResult:
    return build("attention-numpy", tmp_path_factory.mktemp("dist") / "attention-numpy", bank=bank)


def replace_function(source: str, target: str, implementation) -> str:
    """Append `implementation` (a misconception from solutions.misconceptions) under the name
    `target`, so it replaces the key's version. Its module's header comes along; the `ref` it
    may call is the submission's own (right) functions, never the solutions package."""
    header = inspect.getsource(inspect.getmodule(implementation)).split("\ndef ", 1)[0]
    header = header.replace("from solutions import numpy_ref as ref", "")
    ref = "import types as _types\nref = _types.SimpleNamespace(**{k: v for k, v in dict(globals()).items() if callable(v)})\n"
    return f"{source}\n{header}\n{ref}\n{inspect.getsource(implementation)}\n{target} = {implementation.__name__}\n"


def key_notebook(assignment: Assignment, release_notebook: Path, student: str | None = None) -> str:
    """The release notebook with every work cell filled from the answer key."""
    nb = nbformat.read(release_notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("qkv", {})
        if meta.get("role") == "work":
            problem = next(a.problem for a in assignment.problems if a.problem.id == meta["problem"])
            if problem.kind == "implement":
                cell.source = key_function(problem, assignment.track)
            else:
                cell.source = f"ANSWERS[{problem.id!r}] = {pprint.pformat(key_answer(problem, assignment, student))}"
        if meta.get("role") == "setup" and student:
            cell.source = cell.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {student!r}")
    return nbformat.writes(nb)


def graded_so_far(gradebook: Path) -> int:
    """Rows in a gradebook that a running grader writes; 0 until its file and tables exist."""
    if not gradebook.exists():
        return 0
    try:
        with sqlite3.connect(gradebook) as db:
            return db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
    except sqlite3.OperationalError:  # the grader has created the file but not yet its tables
        return 0


__all__ = ["graded_so_far", "key_module", "key_notebook", "replace_function"]  # what test modules import from here
