"""Stage 4, grade: a grading bundle and a folder of submissions in, a resumable SQLite gradebook and reports out.

intake.py reads submissions (never runs them); the sandbox runs them; score.py
compares outputs in this trusted process; gradebook.py stores one transaction
per submission; autograder.report exports CSV, results.json and feedback.html.
A run killed at any point resumes where it stopped: unchanged, already graded
submissions are skipped unless `regrade`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from autograder.bundle import GradingBundle, read_bundle
from autograder.errors import QkvError
from autograder.grade.gradebook import Gradebook
from autograder.grade.intake import Submission, intake
from autograder.grade.score import SubmissionResult, grade_submission, sandbox_calls
from autograder.report.csv import write_gradebook_csv
from autograder.report.feedback import write_feedback
from autograder.report.results_json import write_results_json
from autograder.sandbox import Limits, SandboxPool

GRADEBOOK_FILE = "gradebook.sqlite"


@dataclass(frozen=True)
class GradeRun:
    bundle: GradingBundle
    out: Path
    results: list[SubmissionResult]
    isolation: str
    graded_now: int
    skipped: int
    notes: list[str]


def bundle_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("assignment.json", "arrays.npz"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def export_reports(out: Path, bundle: GradingBundle, rows: list[tuple[SubmissionResult, str]]) -> None:
    results = [r for r, _ in rows]
    write_gradebook_csv(out / "gradebook.csv", results, bundle.problem_order,
                        isolation={r.student: iso for r, iso in rows})
    for result, isolation in rows:
        folder = out / "feedback" / result.student
        write_results_json(folder / "results.json", result)
        write_feedback(folder / "feedback.html", result, bundle.title, bundle.due, isolation)


def grade_class(
    bundle_dir: Path,
    submissions_dir: Path,
    out: Path,
    jobs: int | None = None,
    timeout: float = 10.0,
    regrade: bool = False,
    isolation: str = "auto",
    progress: Callable[[int, int, str], None] | None = None,
) -> GradeRun:
    """Grade every new or changed submission of `submissions_dir`; `progress(done, total, student)` is called after each."""
    if not submissions_dir.is_dir():
        raise QkvError(str(submissions_dir), "no such folder of submissions")
    bundle = read_bundle(bundle_dir)
    notes: list[str] = []
    with Gradebook(out / GRADEBOOK_FILE) as gradebook:
        mismatch = gradebook.check_assignment(bundle.name, bundle_fingerprint(bundle_dir))
        if mismatch and "belongs to" in mismatch:
            raise QkvError(str(out), f"{mismatch}; choose another --out")
        if mismatch:
            notes.append(f"{mismatch}: every submission is graded again")
            gradebook.rebind(bundle_fingerprint(bundle_dir))
            regrade = True
        submissions = intake(submissions_dir)
        done = gradebook.graded_digests()
        todo = [s for s in submissions if regrade or done.get(s.student) != s.digest]
        skipped = len(submissions) - len(todo)
        runnable = [s for s in todo if s.source is not None]
        total = len(todo)
        finished = 0

        def record(submission: Submission, result: SubmissionResult, iso: str) -> None:
            nonlocal finished
            gradebook.record(result, iso)
            finished += 1
            if progress:
                progress(finished, total, submission.student)

        limits = Limits(load_seconds=timeout, problem_seconds=timeout)
        with SandboxPool(bundle.track, jobs=jobs, limits=limits, isolation=isolation) as pool:
            used_isolation = pool.isolation
            for submission in todo:
                if submission.source is None:
                    record(submission, grade_submission(bundle, submission, None), used_isolation)
            calls = sandbox_calls(bundle)
            by_student = {s.student: s for s in runnable}
            for student, run in pool.map((s.student, s.source, calls) for s in runnable):
                submission = by_student[student]
                record(submission, grade_submission(bundle, submission, run), used_isolation)
        rows = gradebook.results()
    export_reports(out, bundle, rows)
    return GradeRun(bundle, out, [r for r, _ in rows], used_isolation, total, skipped, notes)
