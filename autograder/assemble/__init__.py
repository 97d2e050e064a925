"""Stage 2, build (`qkv build`): an assignment manifest and the bank in, a release folder out.

The package is named assemble, not build: many tools skip a folder named build as
build output (.gitignore templates, linters' and coverage tools' default excludes).

`dist/NAME/` holds `student/` (what students get), `nbgrader/` (a course folder
for real nbgrader), `autograder/` (the grading bundle) and `key/` (the answer key
as a submission), both for instructors only, and `gradescope.zip`. Writers are pure functions returning {path: bytes}; this
module does the only I/O, writing to a temporary folder that replaces the
output folder in one rename, so a failed build leaves nothing half-written.
What holds references, expected outputs or answers (`PRIVATE`) is its owner's only,
folders 0700 and files 0600 whatever the umask; `dist/NAME/` and `student/` follow the umask.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder import extras
from autograder.bank.load import Bank
from autograder.course.bank import load_course_bank_strict
from autograder.course.find import Course, find_course
from autograder.bank.validate import check_problem
from autograder.assemble.gradescope import gradescope_zip
from autograder.assemble.grading import grading_bundle
from autograder.assemble.manifest import Assignment, find_manifest, resolve_assignment
from autograder.assemble.nbgrader_source import nbgrader_files
from autograder.assemble.solution_key import key_files
from autograder.assemble.student import student_files
from autograder.bundle import bundle_files, written_problem_files
from autograder.errors import QkvError


# the parts of dist/NAME/ that give answers away: the bundle, the nbgrader source (solution cells), the key, and
# the Gradescope zip (the bundle again)
PRIVATE = ("autograder", "nbgrader", "key", "gradescope.zip")
EXECUTABLE = ("run_autograder", "setup.sh")


@dataclass(frozen=True)
class BuildResult:
    assignment: Assignment
    out: Path
    files: dict[str, int]  # relative path -> size in bytes


def release_files(assignment: Assignment) -> dict[str, bytes]:
    bundle = grading_bundle(assignment)
    written = {path: data for w in bundle.written
               for path, data in written_problem_files(w.id, assignment.problem_files[w.id]).items()}
    grading = bundle_files(bundle, written)
    files = {f"autograder/{p}": b for p, b in grading.items()}
    files.update({f"student/{p}": b for p, b in student_files(assignment, bundle).items()})
    files.update({f"nbgrader/{p}": b for p, b in nbgrader_files(assignment, bundle).items()})
    files.update({f"key/{p}": b for p, b in key_files(assignment).items()})
    files["gradescope.zip"] = gradescope_zip(assignment, grading)
    return files


def _mode(rel: str, folder: bool) -> int | None:
    """The mode a path of the release gets, or None for the umask's."""
    executable = folder or rel.endswith(EXECUTABLE)
    if rel.split("/")[0] in PRIVATE:
        return 0o700 if executable else 0o600
    return 0o755 if executable and not folder else None


def write_atomically(out: Path, files: dict[str, bytes]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    # the release is written inside mkdtemp's 0700 folder, so nothing of it can be read before its modes are set;
    # made by mkdir, dist/NAME/ itself gets the umask's mode, as any folder does
    hidden = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging = hidden / "release"
    try:
        staging.mkdir()
        for rel, data in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for path in staging.rglob("*"):
            mode = _mode(path.relative_to(staging).as_posix(), path.is_dir())
            if mode is not None:
                path.chmod(mode)
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.rename(out, old)
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


def build(name: str, out: Path | None = None, bank: Bank | None = None, assignments_root: Path | None = None,
          course: Course | None = None) -> BuildResult:
    """Build assignment `name` of `course` (default: the course found from here, course/find.py)."""
    course = course or find_course()
    bank = bank or load_course_bank_strict(course)
    assignment = resolve_assignment(find_manifest(name, assignments_root or course.assignments), bank,
                                    course.config.grading)
    if assignment.track == "torch":
        extras.require("torch", str(assignment.source))
    out = out or course.output("dist", assignment.name)
    if out.exists() and not out.is_dir():
        raise QkvError(str(out), "output path exists and is not a folder")
    # the checks of `qkv validate`, so that a broken problem is named here instead of failing deep in a writer
    for item in assignment.problems:
        findings = check_problem(item.problem)
        if findings:
            raise QkvError(str(assignment.problem_files[item.problem.id]), f"{findings[0]} (qkv validate lists all)")
    files = release_files(assignment)
    try:
        write_atomically(out, files)
    except OSError as err:
        where = f" ({err.filename})" if err.filename else ""
        raise QkvError(str(out), f"cannot write the release: {err.strerror or err}{where}") from None
    return BuildResult(assignment, out, {p: len(b) for p, b in sorted(files.items())})
