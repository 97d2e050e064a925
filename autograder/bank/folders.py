"""Problem folders: a folder holding `problem.yaml` and its own Python (reference, misconceptions, hand
calculations) in; the problem with its local references made importable out.

Everything about a problem lives in one folder, as PrairieLearn keeps its questions:

    question_bank/my-softmax/
        problem.yaml        # `references: {numpy: reference.softmax}`: names a function of reference.py
        reference.py
        misconceptions.py
        notes.md

The folder is registered as the package `qkv_course.p<digest>_<id>` (the digest of
its path, so two courses with a problem of the same id never share modules), and
every dotted reference in problem.yaml whose first name is a module of the folder
is rewritten to that package. Nothing is installed; `resolve` then finds the code.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import types
from pathlib import Path
from typing import Any

from autograder.kinds.resolve import COURSE_PACKAGE as ROOT_PACKAGE

PROBLEM_FILE = "problem.yaml"
_DOTTED = re.compile(r"^([A-Za-z_]\w*)(\.[A-Za-z_]\w*)+$")


def is_problem_folder(path: Path) -> bool:
    return path.is_dir() and (path / PROBLEM_FILE).is_file()


def package_name(folder: Path) -> str:
    folder = folder.resolve()
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:10]
    return f"{ROOT_PACKAGE}.p{digest}_{re.sub(r'[^a-z0-9]', '_', folder.name.lower())}"


def register(folder: Path) -> str:
    """Make the folder's modules importable under its package name; gives that name."""
    name = package_name(folder)
    if ROOT_PACKAGE not in sys.modules:
        root = types.ModuleType(ROOT_PACKAGE, "qkv: the problem folders of courses, importable by their code")
        root.__path__ = []
        sys.modules[ROOT_PACKAGE] = root
    # Loading a bank reads the folder afresh: modules of an earlier load may be stale (a long-lived process,
    # an instructor editing reference.py), so they are dropped and the finders forget what they listed.
    for stale in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[stale]
    importlib.invalidate_caches()
    package = types.ModuleType(name, f"the problem folder {folder}")
    package.__path__ = [str(folder.resolve())]
    package.__package__ = name
    sys.modules[name] = package
    return name


def local_modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem.isidentifier()}


def localize(data: Any, folder: Path) -> Any:
    """`data` (a problem's YAML mapping) with references to the folder's own modules made importable."""
    modules = local_modules(folder)
    if not modules:
        return data
    package = register(folder)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            match = _DOTTED.match(value)
            if match and match.group(1) in modules:
                return f"{package}.{value}"
        return value

    return walk(data)


def module_files(folder: Path) -> dict[str, bytes]:
    """The folder's own files a grading bundle carries: problem.yaml and its Python."""
    files = {PROBLEM_FILE: (folder / PROBLEM_FILE).read_bytes()}
    files.update({p.name: p.read_bytes() for p in sorted(folder.glob("*.py"))})
    return files
