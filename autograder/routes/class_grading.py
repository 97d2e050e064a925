"""`qkv grade`: a grading bundle and a folder of submissions in, a resumable SQLite gradebook and reports out.

Composes the stages: intake (files to `Submission`s, with a report of what was
not graded), a grading route (a local sandbox pool, or Dask workers), the
gradebook (one transaction per submission), and the reports (gradebook.csv,
and per student results.json and feedback.html, written as each one is graded).
A run killed at any point resumes where it stopped: unchanged, already graded
submissions are skipped unless `regrade`.

The class around it (autograder/classroom/): SUBMISSIONS may be an LMS's whole-class zip; with a
roster, each hand-in is matched to a roster id and everything else is an intake row (intake.csv,
`strict` refuses to grade past them); the late policy gives each student's penalty; every
grading is kept in the gradebook's history, and changes.csv says who gained or lost points.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Optional

from autograder.bundle import GradingBundle, read_bundle
from autograder.classroom import classbook, history
from autograder.classroom.collect import ClassIntake, IntakeRow, collect
from autograder.classroom.deadlines import LateOutcome, apply_policy, policy_from
from autograder.classroom.roster import Roster
from autograder.course.find import find_course
from autograder.errors import QkvError
from autograder.grade.cluster_security import TlsFiles
from autograder.grade.gradebook import Gradebook, GradingContext
from autograder.grade.intake import IntakeNote, Submission
from autograder.grade.route import open_route
from autograder.grade.score import grade_submission
from autograder.report.csv import write_gradebook_csv
from autograder.report.feedback import write_feedback
from autograder.report.files import write_atomic
from autograder.report.results_json import write_results_json
from autograder.report.spreadsheet import csv_text
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
    rows: tuple[IntakeRow, ...] = ()  # the intake report: every hand-in, refusal and missing student (intake.csv)
    late: dict[str, LateOutcome] = field(default_factory=dict)
    changes: list[history.Change] = field(default_factory=list)  # who gained or lost points on a regrade


def bundle_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("assignment.json", "arrays.npz"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def write_student_reports(out: Path, bundle: GradingBundle, result: SubmissionResult, isolation: str,
                          late: Optional[LateOutcome] = None) -> None:
    folder = out / "feedback" / result.student
    write_results_json(folder / "results.json", result, isolation, bundle)
    write_feedback(folder / "feedback.html", result, bundle.title, bundle.due, isolation, late, bundle)


def export_reports(out: Path, bundle: GradingBundle, rows: list[tuple[SubmissionResult, str]],
                   already_written: frozenset[str] | set[str] = frozenset(),
                   late: Optional[dict[str, LateOutcome]] = None) -> None:
    """The class CSV, and each student's pages unless this run wrote them as it graded."""
    results = [r for r, _ in rows]
    write_gradebook_csv(out / "gradebook.csv", results, bundle.problem_order,
                        isolation={r.student: iso for r, iso in rows}, late=late if bundle.due else None)
    for result, isolation in rows:
        if result.student not in already_written:
            write_student_reports(out, bundle, result, isolation, (late or {}).get(result.student))


INTAKE_COLUMNS = ("entry", "status", "student", "layout", "identified_by", "submitted_at", "time_source",
                  "late_marker", "message")


def intake_csv(rows: tuple[IntakeRow, ...]) -> str:
    return csv_text([INTAKE_COLUMNS, *([row.entry, row.status, row.student, row.layout, row.identified_by,
                                        row.submitted_at, row.time_source, "LATE" if row.late_marker else "",
                                        row.message] for row in rows)])


def _late_outcomes(bundle: GradingBundle, rows: list[tuple[SubmissionResult, str]], handed: ClassIntake,
                   roster: Optional[Roster], stored_times: dict[str, tuple[Any, str]]) -> dict[str, LateOutcome]:
    """Each graded student's penalty under the late policy, from this hand-in's time (or the last grading's)."""
    policy = policy_from(bundle.due, bundle.late)
    out = {}
    for result, _ in rows:
        when, source = handed.times.get(result.student) or stored_times.get(result.student, (None, ""))
        student = roster.by_id(result.student) if roster else None
        out[result.student] = apply_policy(policy, result.score, result.max_score, when,
                                           student.extension if student and student.id == result.student else None,
                                           source, result.student in handed.late_marked)
    return out


def check_submissions(path: Path) -> None:
    if path.is_dir():
        return
    if not path.exists():
        raise QkvError(str(path), "no such folder of submissions")
    if not zipfile.is_zipfile(path):
        raise QkvError(str(path), "is a file, not a folder of submissions (nor a zip of the class)")


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
    roster: Optional[Roster] = None,
    strict: bool = False,
    only: Optional[Collection[str]] = None,
) -> GradeRun:
    """Grade every new or changed submission of `submissions_dir`; `progress(done, total, student)` is called after each.

    `timeout` overrides the bundle's load and per-problem seconds; `isolation` its policy
    (sandbox/isolation.py); `cluster` (tls://HOST:PORT, tcp://HOST:PORT, local:N or local-tls:N) grades on Dask
    workers, and `tls` holds the client certificates of a tls:// one (default: Dask's config).
    `submissions_dir` may be an LMS's zip of the class; `roster` matches hand-ins to its ids, and `strict`
    refuses to grade while intake has a conflict, an off-roster or unmatched hand-in, or a refused member;
    `only` grades again just those students.
    """
    check_submissions(submissions_dir)
    bundle = read_bundle(bundle_dir)
    limits = bundle.limits
    if timeout is not None:
        limits = dataclasses.replace(limits, load_seconds=timeout, problem_seconds=timeout)
    # checked before the gradebook exists, so bad options leave no file behind; starts nothing yet
    workdir = Path(tempfile.mkdtemp(prefix="qkv-intake-"))  # an unpacked class zip: private, removed after
    try:
        course = find_course()
        secrets = (bundle_dir, submissions_dir, out, workdir) + (() if course.bundled else (course.root,))
        routing = open_route(bundle, bundle_dir, jobs, limits, isolation or bundle.isolation, cluster,
                             protect=secrets, tls=tls)
        zone = policy_from(bundle.due, None).due.tzinfo if bundle.due else dt.timezone.utc  # of zip entry times
        handed = collect(submissions_dir, bundle.module, bundle.name, roster, workdir, zone)
        return _grade(bundle, bundle_dir, submissions_dir, out, routing, handed, regrade, progress, strict, only)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _grade(bundle: GradingBundle, bundle_dir: Path, submissions_dir: Path, out: Path, routing, handed: ClassIntake,
           regrade: bool, progress: Optional[Callable[[int, int, str], None]], strict: bool,
           only: Optional[Collection[str]]) -> GradeRun:
    roster = handed.roster
    if not handed.submissions:
        first = next((f"{r.entry}: {r.message}" for r in handed.rows if r.status != "missing"), "")
        raise QkvError(str(submissions_dir), "no .py or .ipynb submission found to grade"
                       + (f" ({len(handed.rows)} intake row(s), e.g. {first})" if first else ""))
    if strict and handed.blocking:
        write_atomic(out / "intake.csv", intake_csv(handed.rows).encode())
        first = handed.blocking[0]
        raise QkvError(str(submissions_dir), f"--strict: {len(handed.blocking)} hand-in(s) to resolve first (see "
                       f"{out / 'intake.csv'}), e.g. {first.entry or first.student}: {first.status}, {first.message}")
    if only is not None:
        unknown = sorted(set(only) - {s.student for s in handed.submissions})
        if unknown:
            raise QkvError("--regrade", f"no submission of {', '.join(unknown[:5])} in {submissions_dir}")
    notes: list[str] = []
    with Gradebook(out / GRADEBOOK_FILE) as gradebook:
        mismatch = gradebook.check_assignment(bundle.name, bundle_fingerprint(bundle_dir))
        if mismatch and "belongs to" in mismatch:
            raise QkvError(str(out), f"{mismatch}; choose another --out")
        if mismatch:
            notes.append(f"{mismatch}: every submission is graded again")
            gradebook.rebind(bundle_fingerprint(bundle_dir))
            regrade, only = True, None
        write_atomic(out / "intake.csv", intake_csv(handed.rows).encode())
        done = gradebook.graded_digests()
        if only is not None:
            todo = [s for s in handed.submissions if s.student in set(only)]
        else:
            todo = [s for s in handed.submissions if regrade or done.get(s.student) != s.digest]
        skipped = len(handed.submissions) - len(todo)
        policy = policy_from(bundle.due, bundle.late)
        runnable = [s for s in todo if s.program is not None]
        total = len(todo)

        graded_now: dict[str, SubmissionResult] = {}  # their pages are written already

        def record(submission: Submission, result: SubmissionResult, iso: str) -> None:
            when, source = handed.times.get(submission.student, (None, ""))
            gradebook.record(result, iso, GradingContext(handed.sources.get(submission.student, ""),
                                                         when.isoformat() if when else None, source))
            student = roster.by_id(result.student) if roster else None
            late = apply_policy(policy, result.score, result.max_score, when, student.extension if student else None,
                                source, result.student in handed.late_marked) if bundle.due else None
            # pages are written while the sandbox workers grade the next submissions, not after
            write_student_reports(out, bundle, result, iso, late)
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
        stored_times = {student: (_moment(at), source) for student, at, source in gradebook.db.execute(
            "SELECT student, submitted_at, time_source FROM gradings WHERE id IN "
            "(SELECT MAX(id) FROM gradings GROUP BY student)")}
        late = _late_outcomes(bundle, rows, handed, roster, stored_times)
        classbook.store_class(gradebook.db, roster, late, bundle.title)
        changed = history.changes(gradebook.db, graded_now)
    if changed:
        write_atomic(out / "changes.csv", history.changes_csv(changed).encode())
    export_reports(out, bundle, rows, set(graded_now), late)
    notes_of_intake = tuple(IntakeNote(r.entry, r.message) for r in handed.rows if r.status == "skipped")
    return GradeRun(bundle, out, [r for r, _ in rows], used_isolation, total, skipped, notes, notes_of_intake,
                    handed.rows, late, changed)


def _moment(text: Optional[str]) -> Optional[dt.datetime]:
    return dt.datetime.fromisoformat(text) if text else None
