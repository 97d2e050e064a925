"""`qkv grade`: a grading bundle and a folder of submissions in, a resumable SQLite gradebook and reports out.

Composes the stages: intake (files to `Submission`s, with a report of what was
not graded), a grading route (a local sandbox pool, or Dask workers), the
gradebook (one transaction per submission), and the reports (gradebook.csv,
and per student results.json and feedback.html, written as each one is graded).
A run killed at any point resumes where it stopped: unchanged, already graded
submissions are skipped unless `regrade`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from autograder.bundle import GradingBundle, read_bundle
from autograder.course.find import find_course
from autograder.errors import QkvError
from autograder.grade.cluster_security import TlsFiles
from autograder.grade.gradebook import Gradebook
from autograder.grade.intake import IntakeNote, Submission, intake
from autograder.grade.route import open_route
from autograder.grade.score import grade_submission
from autograder.report.csv import write_gradebook_csv
from autograder.report.feedback import write_feedback
from autograder.report.results_json import write_results_json
from autograder.results import SubmissionResult
from autograder.sandbox import SandboxError

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
    intake: tuple[IntakeNote, ...] = ()


def bundle_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("assignment.json", "arrays.npz"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def write_student_reports(out: Path, bundle: GradingBundle, result: SubmissionResult, isolation: str) -> None:
    folder = out / "feedback" / result.student
    write_results_json(folder / "results.json", result, isolation)
    write_feedback(folder / "feedback.html", result, bundle.title, bundle.due, isolation)


def export_reports(out: Path, bundle: GradingBundle, rows: list[tuple[SubmissionResult, str]],
                   already_written: frozenset[str] | set[str] = frozenset()) -> None:
    """The class CSV, and each student's pages unless this run wrote them as it graded."""
    results = [r for r, _ in rows]
    write_gradebook_csv(out / "gradebook.csv", results, bundle.problem_order,
                        isolation={r.student: iso for r, iso in rows})
    for result, isolation in rows:
        if result.student not in already_written:
            write_student_reports(out, bundle, result, isolation)


def grade_class(
    bundle_dir: Path,
    submissions_dir: Path,
    out: Path,
    jobs: Optional[int] = None,
    timeout: Optional[float] = None,
    regrade: bool = False,
    isolation: Optional[str] = None,
    progress: Optional[Callable[[int, int, str], None]] = None,
    cluster: Optional[str] = None,
    tls: TlsFiles = TlsFiles(),
) -> GradeRun:
    """Grade every new or changed submission of `submissions_dir`; `progress(done, total, student)` is called after each.

    `timeout` overrides the bundle's load and per-problem seconds; `isolation` its policy
    (sandbox/isolation.py); `cluster` (tls://HOST:PORT, tcp://HOST:PORT, local:N or local-tls:N) grades on Dask
    workers, and `tls` holds the client certificates of a tls:// one (default: Dask's config).
    """
    if not submissions_dir.is_dir():
        what = "is a file, not a folder of submissions" if submissions_dir.exists() else "no such folder of submissions"
        raise QkvError(str(submissions_dir), what)
    bundle = read_bundle(bundle_dir)
    limits = bundle.limits
    if timeout is not None:
        limits = dataclasses.replace(limits, load_seconds=timeout, problem_seconds=timeout)
    # checked before the gradebook exists, so bad options leave no file behind; starts nothing yet
    course = find_course()
    secrets = (bundle_dir, submissions_dir, out) + (() if course.bundled else (course.root,))
    routing = open_route(bundle, bundle_dir, jobs, limits, isolation or bundle.isolation, cluster, protect=secrets,
                         tls=tls)
    notes: list[str] = []
    with Gradebook(out / GRADEBOOK_FILE) as gradebook:
        mismatch = gradebook.check_assignment(bundle.name, bundle_fingerprint(bundle_dir))
        if mismatch and "belongs to" in mismatch:
            raise QkvError(str(out), f"{mismatch}; choose another --out")
        if mismatch:
            notes.append(f"{mismatch}: every submission is graded again")
            gradebook.rebind(bundle_fingerprint(bundle_dir))
            regrade = True
        report = intake(submissions_dir, bundle.module)
        done = gradebook.graded_digests()
        todo = [s for s in report.submissions if regrade or done.get(s.student) != s.digest]
        skipped = len(report.submissions) - len(todo)
        runnable = [s for s in todo if s.program is not None]
        total = len(todo)

        graded_now: dict[str, SubmissionResult] = {}  # their pages are written already

        def record(submission: Submission, result: SubmissionResult, iso: str) -> None:
            gradebook.record(result, iso)
            # pages are written while the sandbox workers grade the next submissions, not after
            write_student_reports(out, bundle, result, iso)
            graded_now[result.student] = result
            if progress:
                progress(len(graded_now), total, submission.student)

        try:
            with routing as route:
                for submission in todo:
                    if submission.program is None:
                        record(submission, grade_submission(bundle, submission, None), route.isolation)
                for submission, result, iso in route.grade(runnable):
                    record(submission, result, iso)
                used_isolation = route.isolation
        except SandboxError as err:
            raise QkvError("sandbox", f"{err}; {len(graded_now)} submission(s) graded before it are kept, "
                                      "and running the same command again grades the rest") from None
        rows = gradebook.results(known=graded_now)
    export_reports(out, bundle, rows, set(graded_now))
    return GradeRun(bundle, out, [r for r, _ in rows], used_isolation, total, skipped, notes, report.notes)
