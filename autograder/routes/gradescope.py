"""Gradescope entry point: `/autograder/submission/` and the bundled grading data in, `/autograder/results/results.json` out.

Runs inside the zip that `qkv build` writes (`run_autograder` calls
`python -m autograder.routes.gradescope` with the venv that `setup.sh` made).
Imports only what grading needs (no rich, jinja2 or matplotlib). The student id
for per-student variants comes from Gradescope's submission_metadata.json (sid,
else email).

Before any student code runs, the grader's own files are made readable by root
only (the engine, the references and the bundle under `source/`, and the
submission's metadata), so that where bubblewrap cannot start, as in Gradescope's
Docker image, student code running as a uid of its own still reads nothing of
them (the `uid` isolation). When even that cannot be had, the grading policy
decides: `require` refuses, with a results.json that says why; `allow-rlimits`
grades with a warning. results.json always states the isolation it ran under.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from autograder.bundle import read_bundle
from autograder.errors import QkvError
from autograder.grade.execute import run_submission
from autograder.grade.intake import Submission, discover, read_submission, safe_student_id
from autograder.grade.score import grade_submission
from autograder.private import write_private
from autograder.report.results_json import results_json
from autograder.sandbox import SandboxError, SandboxPool


def student_id(root: Path) -> str:
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
        user = metadata["users"][0]
        return safe_student_id(str(user.get("sid") or user.get("email") or "student"))
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return "student"


def lock_down(paths: list[Path]) -> None:
    """Owner-only modes on the grader's files (when we are root: the owner is root)."""
    if os.geteuid() != 0:
        return
    for top in paths:
        if not top.exists() or top.is_symlink():
            continue
        os.chmod(top, 0o700 if top.is_dir() else 0o600)
        if not top.is_dir():
            continue
        for folder, dirs, files in os.walk(top):
            for name in dirs:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    mode = os.lstat(path).st_mode
                    os.chmod(path, 0o700 if mode & stat.S_IXUSR else 0o600)


def refused(message: str, isolation: str = "none") -> dict:
    return {"score": 0.0, "output": f"not graded: {message}", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"isolation": isolation}}


def grade_gradescope(root: Path, source: Path) -> dict:
    bundle_dir = source / "bundle"
    secrets = [source, root / "submission_metadata.json"]
    lock_down(secrets)
    try:
        bundle = read_bundle(bundle_dir)
    except QkvError as err:
        return refused(f"the autograder is damaged ({err}); rebuild it with qkv build")
    student = student_id(root)
    found, _ = discover(root / "submission", bundle.module)
    candidates = [path for _, path, _ in found if path is not None]
    if candidates:
        submission = read_submission(student, candidates[0])
    else:
        submission = Submission(student, root / "submission", "", None, "missing", "no .py or .ipynb file was submitted")
    isolation = "none"
    run = None
    if submission.program is not None:
        try:
            pool = SandboxPool(bundle.track, jobs=1, limits=bundle.limits, isolation=bundle.isolation, protect=secrets)
        except SandboxError as err:
            return refused(str(err))
        isolation = pool.isolation
        with pool:
            run = run_submission(pool, bundle, submission.program)
    return results_json(grade_submission(bundle, submission, run), isolation, bundle)


def main() -> None:
    root = Path(os.environ.get("QKV_GRADESCOPE_ROOT", "/autograder"))
    results = grade_gradescope(root, Path(__file__).resolve().parents[2])
    write_private(root / "results" / "results.json", (json.dumps(results, indent=1) + "\n").encode())
    print(f"score {results['score']:g}: {results['output']}", file=sys.stderr)


if __name__ == "__main__":
    main()
