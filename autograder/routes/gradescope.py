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

The written-answer policy for repeated attempts (grade/written_policy.py, the manifest's `written_attempts:`) is
applied as the service applies it. Gradescope keeps each earlier submission's results.json and hands them to the
autograder in submission_metadata.json's `previous_submissions`: every results.json keeps the fixed written items'
answers in its `extra_data`, so that under `first` or `penalty` a submission's fixed items are scored over the
student's submissions before it. Under `hidden` (the default) nothing Gradescope shows before hand-in closes says
whether a fixed item is right: the top-level output, which students see at once, is written from the masked result,
and the fixed items' tests are `after_published` (Gradescope's `after_due_date` goes by each student's own due date,
extensions included; grades are published once hand-in closes for everyone). While tests are hidden, Gradescope
shows a student no total score; the score it keeps, for the instructor's gradebook, is the whole one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Optional

from autograder.bundle import GradingBundle, read_bundle
from autograder.errors import QkvError
from autograder.grade.execute import run_submission
from autograder.grade.intake import Submission, discover, read_submission, safe_student_id
from autograder.grade.score import grade_submission, score_written
from autograder.grade.written_policy import applied, fixed_items, hides, masked
from autograder.private import write_private
from autograder.report.results_json import results_json
from autograder.results import SubmissionResult
from autograder.sandbox import SandboxError, SandboxPool

# Gradescope writes the metadata, earlier submissions' results with it: generous, and bounded all the same
METADATA_LIMIT = 64 * 1024 * 1024
ANSWERS = "written_answers"  # results.json's extra_data: the fixed items' answers, read back by later submissions
ANSWER_LIMIT = 4096  # characters of one answer kept (as JSON); a longer one is kept as NOT_KEPT
NOT_KEPT = "(an answer too long to keep)"  # kept in its place: read back, it is an answer, and a wrong one
HELD = "after_published"  # Gradescope's visibility of a fixed item's test while the policy hides it


def read_metadata(root: Path) -> dict[str, Any]:
    """submission_metadata.json, or {} when it is missing, damaged or larger than METADATA_LIMIT."""
    try:
        with open(root / "submission_metadata.json", "rb") as handle:
            data = handle.read(METADATA_LIMIT + 1)
        loaded = json.loads(data) if len(data) <= METADATA_LIMIT else None
    except (OSError, ValueError, RecursionError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def student_id(metadata: dict[str, Any]) -> str:
    try:
        user = metadata["users"][0]
        return safe_student_id(str(user.get("sid") or user.get("email") or "student"))
    except (KeyError, IndexError, TypeError, AttributeError):
        return "student"


def _moment(value: Any) -> Optional[dt.datetime]:
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def earlier_answers(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixed items' answers of the student's submissions before this one, oldest first, as each one's
    results.json kept them (`previous_submissions`; one graded before this route kept them counts as none). When a
    submission is graded again, those Gradescope lists from after it (by `created_at`) are not before it."""
    created = _moment(metadata.get("created_at"))
    previous = metadata.get("previous_submissions")
    found: list[tuple[Optional[dt.datetime], dict[str, Any]]] = []
    for entry in previous if isinstance(previous, list) else []:
        results = entry.get("results") if isinstance(entry, dict) else None
        extra = results.get("extra_data") if isinstance(results, dict) else None
        answers = extra.get(ANSWERS) if isinstance(extra, dict) else None
        if not isinstance(answers, dict):
            continue
        when = _moment(entry.get("submission_time"))
        if created is not None and when is not None and when >= created:
            continue
        found.append((when, answers))
    if all(when is not None for when, _ in found):  # else in Gradescope's own order
        found.sort(key=lambda item: item[0])  # type: ignore[arg-type, return-value]
    return [answers for _, answers in found]


def kept_answers(bundle: GradingBundle, result: SubmissionResult) -> dict[str, Any]:
    """The fixed items' answers, for later submissions to read back (a long or odd one as NOT_KEPT)."""
    kept: dict[str, Any] = {}
    for written in fixed_items(bundle):
        if written.id not in result.answers:
            continue
        answer = result.answers[written.id]
        try:
            fits = len(json.dumps(answer, allow_nan=False)) <= ANSWER_LIMIT
        except (TypeError, ValueError, RecursionError):
            fits = False
        kept[written.id] = answer if fits else NOT_KEPT
    return kept


def gradescope_results(bundle: GradingBundle, result: SubmissionResult, isolation: str,
                       metadata: dict[str, Any]) -> dict:
    """results.json of a graded submission, its fixed written items scored and shown by the written-answer policy
    (grade/written_policy.py) over the student's earlier submissions."""
    policy = bundle.written_attempts
    student = result.student
    result = applied(policy, bundle, result, earlier_answers(metadata),
                     lambda written, answer: score_written(written, answer, bundle, student))
    document = results_json(result, isolation, bundle, shown=masked(policy, bundle, result, closed=False))
    fixed = [w for w in fixed_items(bundle) if w.points]
    if fixed and hides(policy, bundle, closed=False):
        ids = {w.id for w in fixed}
        owners = [p.problem_id for p in result.problems for _ in p.tests]
        for entry, owner in zip(document["tests"], owners):
            if owner in ids:
                entry["visibility"] = HELD
        points = sum(w.points for w in fixed)
        document["output"] += (f"\nwritten answers kept, marked once grades are published after hand-in closes: "
                               f"{', '.join(w.id for w in fixed)} ({points:g} points); until then no total score "
                               "is shown")
    document["extra_data"][ANSWERS] = kept_answers(bundle, result)
    return document


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
    metadata = read_metadata(root)
    student = student_id(metadata)
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
    return gradescope_results(bundle, grade_submission(bundle, submission, run), isolation, metadata)


def main() -> None:
    root = Path(os.environ.get("QKV_GRADESCOPE_ROOT", "/autograder"))
    results = grade_gradescope(root, Path(__file__).resolve().parents[2])
    write_private(root / "results" / "results.json", (json.dumps(results, indent=1) + "\n").encode())
    print(f"score {results['score']:g}: {results['output']}", file=sys.stderr)


if __name__ == "__main__":
    main()
