"""Stage 4, grade: a grading bundle and a folder of submissions in, a resumable SQLite gradebook and reports out.

intake.py reads submissions (never runs them); a route runs and scores them:
`LocalRoute` (a SandboxPool here, score.py comparing in this trusted process) or,
with `cluster`, cluster.py's Dask workers (each with the same sandbox and
scoring); gradebook.py stores one transaction per submission, here, whichever
the route; autograder.report exports CSV, results.json and feedback.html.
A run killed at any point resumes where it stopped: unchanged, already graded
submissions are skipped unless `regrade`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from autograder.bundle import GradingBundle, read_bundle
from autograder.errors import QkvError
from autograder.grade.gradebook import Gradebook
from autograder.grade.intake import Submission, intake
from autograder.grade.execute import run_many
from autograder.grade.score import SubmissionResult, grade_submission
from autograder.report.csv import write_gradebook_csv
from autograder.report.feedback import write_feedback
from autograder.report.results_json import write_results_json
from autograder.sandbox import Limits, SandboxError, SandboxPool

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


def write_student_reports(out: Path, bundle: GradingBundle, result: SubmissionResult, isolation: str) -> None:
    folder = out / "feedback" / result.student
    write_results_json(folder / "results.json", result)
    write_feedback(folder / "feedback.html", result, bundle.title, bundle.due, isolation)


def export_reports(out: Path, bundle: GradingBundle, rows: list[tuple[SubmissionResult, str]],
                   already_written: set[str] = frozenset()) -> None:
    """The class CSV, and each student's pages unless this run wrote them as it graded."""
    results = [r for r, _ in rows]
    write_gradebook_csv(out / "gradebook.csv", results, bundle.problem_order,
                        isolation={r.student: iso for r, iso in rows})
    for result, isolation in rows:
        if result.student not in already_written:
            write_student_reports(out, bundle, result, isolation)


class Route(Protocol):
    """How runnable submissions become results: `LocalRoute` here, or `cluster.ClusterRoute` on Dask workers."""

    isolation: str  # how student code is isolated (the weakest, if sandboxes differ)

    def grade(self, submissions: Sequence[Submission]) -> Iterator[tuple[Submission, SubmissionResult, str]]:
        """Yield (submission, result, the isolation it ran under) as each one completes."""
        ...


class LocalRoute:
    """Runs submissions in a warm SandboxPool on this machine and scores them in this process."""

    def __init__(self, bundle: GradingBundle, pool: SandboxPool) -> None:
        self.bundle = bundle
        self.pool = pool
        self.isolation = pool.isolation

    def grade(self, submissions: Sequence[Submission]) -> Iterator[tuple[Submission, SubmissionResult, str]]:
        by_student = {s.student: s for s in submissions}
        for student, run in run_many(self.pool, self.bundle, ((s.student, s.source) for s in submissions)):
            submission = by_student[student]
            yield submission, grade_submission(self.bundle, submission, run), self.isolation


def local_route(bundle: GradingBundle, jobs: int | None, limits: Limits, isolation: str) -> AbstractContextManager[LocalRoute]:
    try:  # made now, not on entry: it starts nothing, but refuses an isolation this machine cannot give
        pool = SandboxPool(bundle.track, jobs=jobs, limits=limits, isolation=isolation)
    except SandboxError as err:
        raise QkvError("--isolation", str(err)) from None
    return _pool_route(bundle, pool)


@contextmanager
def _pool_route(bundle: GradingBundle, pool: SandboxPool) -> Iterator[LocalRoute]:
    with pool:
        yield LocalRoute(bundle, pool)


def open_route(bundle: GradingBundle, bundle_dir: Path, jobs: int | None, limits: Limits, isolation: str,
               cluster: str | None) -> AbstractContextManager[Route]:
    if cluster is None:
        return local_route(bundle, jobs, limits, isolation)
    if jobs is not None:
        raise QkvError("--jobs", "with --cluster, each Dask worker grades as many submissions at once as it has "
                                 "threads (dask worker --nthreads); drop --jobs")
    from autograder.grade.cluster import cluster_route, parse_cluster_address  # dask loads only when asked for

    return cluster_route(parse_cluster_address(cluster), bundle, bundle_dir, limits, isolation)


def grade_class(
    bundle_dir: Path,
    submissions_dir: Path,
    out: Path,
    jobs: int | None = None,
    timeout: float = 10.0,
    regrade: bool = False,
    isolation: str = "auto",
    progress: Callable[[int, int, str], None] | None = None,
    cluster: str | None = None,
) -> GradeRun:
    """Grade every new or changed submission of `submissions_dir`; `progress(done, total, student)` is called after each.

    `cluster` (tcp://HOST:PORT or local:N) grades on Dask workers instead of a local pool."""
    if not submissions_dir.is_dir():
        what = "is a file, not a folder of submissions" if submissions_dir.exists() else "no such folder of submissions"
        raise QkvError(str(submissions_dir), what)
    bundle = read_bundle(bundle_dir)
    limits = Limits(load_seconds=timeout, problem_seconds=timeout)
    # checked before the gradebook exists, so bad options leave no file behind; starts nothing yet
    routing = open_route(bundle, bundle_dir, jobs, limits, isolation, cluster)
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
                    if submission.source is None:
                        record(submission, grade_submission(bundle, submission, None), route.isolation)
                for submission, result, iso in route.grade(runnable):
                    record(submission, result, iso)
                used_isolation = route.isolation
        except SandboxError as err:
            raise QkvError("sandbox", f"{err}; {len(graded_now)} submission(s) graded before it are kept, "
                                      "and running the same command again grades the rest") from None
        rows = gradebook.results(known=graded_now)
    export_reports(out, bundle, rows, set(graded_now))
    return GradeRun(bundle, out, [r for r, _ in rows], used_isolation, total, skipped, notes)
