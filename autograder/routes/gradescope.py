"""Gradescope entry point: `/autograder/submission/` and the bundled grading data in, `/autograder/results/results.json` out.

Runs inside the zip that `qkv build` writes (`run_autograder` calls
`python3 -m autograder.grade.gradescope`). The student id for per-student
variants comes from Gradescope's submission_metadata.json (sid, else email).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from autograder.bundle import read_bundle
from autograder.grade.intake import Submission, discover, read_submission, safe_student_id
from autograder.grade.execute import run_submission
from autograder.grade.score import grade_submission
from autograder.report.files import write_atomic
from autograder.report.results_json import results_json
from autograder.sandbox import Limits, SandboxPool


def _student_id(root: Path) -> str:
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
        user = metadata["users"][0]
        return safe_student_id(str(user.get("sid") or user.get("email") or "student"))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "student"


def grade_gradescope(root: Path, bundle_dir: Path) -> dict:
    bundle = read_bundle(bundle_dir)
    student = _student_id(root)
    candidates = [path for _, path in discover(root / "submission") if path is not None]
    if candidates:
        submission = read_submission(student, candidates[0])
    else:
        submission = Submission(student, root / "submission", "", None, "missing",
                                "no .py or .ipynb file was submitted")
    run = None
    if submission.source is not None:
        with SandboxPool(bundle.track, jobs=1, limits=Limits()) as pool:
            run = run_submission(pool, bundle, submission.source)
    results = results_json(grade_submission(bundle, submission, run))
    write_atomic(root / "results" / "results.json", (json.dumps(results, indent=1) + "\n").encode())
    return results


def main() -> None:
    root = Path(os.environ.get("QKV_GRADESCOPE_ROOT", "/autograder"))
    results = grade_gradescope(root, Path(__file__).resolve().parents[2] / "bundle")
    print(f"score {results['score']:g}: {results['output']}", file=sys.stderr)


if __name__ == "__main__":
    main()
