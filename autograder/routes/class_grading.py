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

A run, in steps: `check_intake` (refusals before any gradebook exists), `select_work` (bind the
gradebook to the build, choose what to grade), `grade_submissions` (the route; each result recorded
and its pages written as it comes back), `after_grading` (late outcomes, the class stored beside the
grades, changes), then the class's files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
import tempfile
import zipfile
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Optional

from autograder.bundle import GradingBundle, bundle_fingerprint, read_bundle
from autograder.classroom import classbook, history
from autograder.classroom.collect import ClassIntake, IntakeRow, collect
from autograder.classroom.deadlines import Deadline, LateOutcome, as_moment
from autograder.classroom.roster import Roster
from autograder.course.find import find_course
from autograder.errors import QkvError
from autograder.grade.cluster_security import TlsFiles
from autograder.grade.gradebook import GRADEBOOK_FILE, Gradebook, GradingContext
from autograder.grade.intake import IntakeNote, Submission
from autograder.grade.route import Route, open_route
from autograder.grade.service import GradingService, HandedIn, Recorded
from autograder.grade.timings import Timings
from autograder.private import write_private
from autograder.report.csv import write_gradebook_csv
from autograder.report.feedback import write_feedback
from autograder.report.results_json import write_results_json
from autograder.report.spreadsheet import csv_text
from autograder.results import SubmissionResult
from autograder.sandbox import SandboxError


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
    timings: Optional[Timings] = None,
) -> GradeRun:
    """Grade every new or changed submission of `submissions_dir`; `progress(done, total, student)` is called after each.

    `timeout` overrides the bundle's load and per-problem seconds; `isolation` its policy
    (sandbox/isolation.py); `cluster` (tls://HOST:PORT, tcp://HOST:PORT, local:N or local-tls:N) grades on Dask
    workers, and `tls` holds the client certificates of a tls:// one (default: Dask's config).
    `submissions_dir` may be an LMS's zip of the class; `roster` matches hand-ins to its ids, and `strict`
    refuses to grade while intake has a conflict, an off-roster or unmatched hand-in, or a refused member;
    `only` grades again just those students; `timings` is told where the CPU went (grade/timings.py).
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
                             protect=secrets, tls=tls, timings=timings, start_soon=True)
        zone = Deadline(as_moment(bundle.due, dt.timezone.utc)).zone  # of zip entry times
        clock = timings or Timings()
        clock.started()
        with ExitStack() as early:
            if cluster is None:  # this machine's workers start while the class is read; a cluster waits for it
                routing = nullcontext(early.enter_context(routing))
            with clock.stage("intake"):
                handed = collect(submissions_dir, bundle.module, bundle.name, roster, workdir, zone)
            return _grade(bundle, bundle_dir, submissions_dir, out, routing, handed, regrade, progress, strict,
                          only, clock)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@dataclass(frozen=True)
class Work:
    """What this run grades: the submissions to grade (new, changed, or asked for) and how many were left as graded."""

    todo: list[Submission]
    skipped: int
    notes: list[str]


@dataclass(frozen=True)
class Graded:
    """What this run graded, by student (their pages are written already), and the isolation it ran under."""

    recorded: dict[str, Recorded]
    isolation: str


@dataclass(frozen=True)
class Settled:
    """After grading: every stored result with its isolation, each student's late outcome, who gained or lost."""

    rows: list[tuple[SubmissionResult, str]]
    late: dict[str, LateOutcome]
    changes: list[history.Change]


def _grade(bundle: GradingBundle, bundle_dir: Path, submissions_dir: Path, out: Path,
           routing: AbstractContextManager[Route], handed: ClassIntake, regrade: bool,
           progress: Optional[Callable[[int, int, str], None]], strict: bool,
           only: Optional[Collection[str]], clock: Timings) -> GradeRun:
    check_intake(handed, submissions_dir, out, strict, only)
    with Gradebook(out / GRADEBOOK_FILE) as gradebook:
        with clock.stage("intake"):
            work = select_work(gradebook, bundle, bundle_dir, out, handed, regrade, only)
        service = GradingService(bundle, gradebook, handed.roster, timings=clock)
        graded = grade_submissions(service, out, routing, handed, work.todo, progress)
        with clock.stage("class"):
            settled = after_grading(service, handed, graded)
    with clock.stage("class"):
        if settled.changes:
            write_private(out / "changes.csv", history.changes_csv(settled.changes).encode())
        export_reports(out, bundle, settled.rows, set(graded.recorded), settled.late)
    notes_of_intake = tuple(IntakeNote(r.entry, r.message) for r in handed.rows if r.status == "skipped")
    return GradeRun(bundle, out, [r for r, _ in settled.rows], graded.isolation, len(work.todo), work.skipped,
                    work.notes, notes_of_intake, handed.rows, settled.late, settled.changes)


def check_intake(handed: ClassIntake, submissions_dir: Path, out: Path, strict: bool,
                 only: Optional[Collection[str]]) -> None:
    """Refuse, before any gradebook exists, a class with nothing to grade, `strict` with hand-ins to resolve
    (intake.csv says which), and `only` naming a student who handed nothing in."""
    if not handed.submissions:
        first = next((f"{r.entry}: {r.message}" for r in handed.rows if r.status != "missing"), "")
        raise QkvError(str(submissions_dir), "no .py or .ipynb submission found to grade"
                       + (f" ({len(handed.rows)} intake row(s), e.g. {first})" if first else ""))
    if strict and handed.blocking:
        write_private(out / "intake.csv", intake_csv(handed.rows).encode())
        row = handed.blocking[0]
        raise QkvError(str(submissions_dir), f"--strict: {len(handed.blocking)} hand-in(s) to resolve first (see "
                       f"{out / 'intake.csv'}), e.g. {row.entry or row.student}: {row.status}, {row.message}")
    if only is not None:
        unknown = sorted(set(only) - {s.student for s in handed.submissions})
        if unknown:
            raise QkvError("--regrade", f"no submission of {', '.join(unknown[:5])} in {submissions_dir}")


def select_work(gradebook: Gradebook, bundle: GradingBundle, bundle_dir: Path, out: Path, handed: ClassIntake,
                regrade: bool, only: Optional[Collection[str]]) -> Work:
    """Bind the gradebook to this build (a rebuilt one grades everyone again), write intake.csv, and choose
    the submissions to grade: `only` those students, everyone with `regrade`, else the new and changed."""
    notes: list[str] = []
    fingerprint = bundle_fingerprint(bundle_dir)
    mismatch = gradebook.check_assignment(bundle.name, fingerprint)
    if mismatch and "belongs to" in mismatch:
        raise QkvError(str(out), f"{mismatch}; choose another --out")
    if mismatch:
        notes.append(f"{mismatch}: every submission is graded again")
        gradebook.rebind(fingerprint)
        regrade, only = True, None
    write_private(out / "intake.csv", intake_csv(handed.rows).encode())
    done = gradebook.graded_digests()
    if only is not None:
        todo = [s for s in handed.submissions if s.student in set(only)]
    else:
        todo = [s for s in handed.submissions if regrade or done.get(s.student) != s.digest]
    return Work(todo, len(handed.submissions) - len(todo), notes)


def grade_submissions(service: GradingService, out: Path, routing: AbstractContextManager[Route],
                      handed: ClassIntake, todo: list[Submission],
                      progress: Optional[Callable[[int, int, str], None]]) -> Graded:
    """Grade `todo` through the grading service, writing each student's pages as their grading is kept."""
    bundle, clock = service.bundle, service.clock
    graded: dict[str, Recorded] = {}

    def handed_in(submission: Submission) -> HandedIn:
        when, source = handed.times.get(submission.student, (None, ""))
        return HandedIn(submission, GradingContext(handed.sources.get(submission.student, ""),
                                                   when.isoformat() if when else None, source,
                                                   submission.student in handed.late_marked))

    try:
        with routing as route:
            # the files with no program first, as before: they are kept while the workers start
            ordered = sorted(todo, key=lambda s: s.program is not None)
            for recorded in service.grade(route, (handed_in(s) for s in ordered)):
                with clock.stage("pages"):
                    # pages are written while the sandbox workers grade the next submissions, not after
                    write_student_reports(out, bundle, recorded.result, recorded.isolation,
                                          recorded.late if bundle.due else None)
                graded[recorded.result.student] = recorded
                if progress:
                    progress(len(graded), len(todo), recorded.result.student)
            return Graded(graded, route.isolation)
    except SandboxError as err:
        raise QkvError("sandbox", f"{err}; {len(graded)} submission(s) graded before it are kept, "
                                  "and running the same command again grades the rest") from None


def after_grading(service: GradingService, handed: ClassIntake, graded: Graded) -> Settled:
    """Every student's late outcome (as kept with their counted grading), the class stored beside the grades,
    and who gained or lost points against their grading before."""
    results = {student: r.result for student, r in graded.recorded.items()}
    book, bundle = service.book, service.bundle
    rows = book.results(known=results)
    late = service.settled(graded.recorded.values())
    classbook.store_class(book, handed.roster, late, bundle.title, bundle.due, bundle.late)
    return Settled(rows, late, history.changes(book, results))
