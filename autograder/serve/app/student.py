"""A student's pages: the served assignments, one assignment (its dates, attempts and the upload form), an
attempt while it waits and once graded, its feedback, and the release to download.

The feedback page shows the late outcome the grading service kept with the grading (grade/service.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import io
import os
import time
import zipfile
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Optional

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from autograder.classroom.classbook import outcome_of
from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.accounts import Role, Session
from autograder.grade.gradebook.records import Attempt, AttemptState, Counting
from autograder.grade.written_policy import attempt_seed, fresh_numbers, hides, masked, shown_max
from autograder.kinds import kind_of
from autograder.report.feedback import feedback_html
from autograder.serve.app.site import html, signed_in
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.course import ServedAssignment, closed_for_all
from autograder.serve.guard import SESSION_COOKIE
from autograder.serve.handin import Accepted
from autograder.serve.pages import Refusal, attempt_view

RELEASE_BYTES = 50_000_000  # a release zipped for download: far above any built release
# the only script the pages load (the CSP allows the service's own files alone): a pending result fills in by itself
REFRESH_SCRIPT = (Path(__file__).parent.parent / "templates" / "refresh.js").read_bytes()


def own_attempt(state: ServiceState, session: Session, a: ServedAssignment, attempt_id: str) -> Attempt:
    attempt = state.books[a.name].attempt(attempt_id)
    if attempt is None or not (session.account.role.sees_class or attempt.student == session.account.person):
        raise Refusal(404, "no such attempt", "Not found")
    return attempt


def feedback_page(a: ServedAssignment, book: Gradebook, roster: Optional[Roster], attempt: Attempt,
                  as_student: bool = False) -> str:
    """The attempt's feedback, with the late outcome the grading service kept with its grading; `as_student`: as
    its student may see it before hand-in closes, by the written-answer policy (grade/written_policy.py), without
    the late outcome too while fixed items are hidden (its raw score would tell how they did)."""
    staff = not as_student
    graded = book.grading_result(attempt.grading) if attempt.grading else None
    if graded is None or attempt.grading is None:
        return ""
    result, isolation = graded
    closed = closed_for_all(a, roster, dt.datetime.now(dt.timezone.utc))
    hidden = not staff and hides(a.bundle.written_attempts, a.bundle, closed)
    entry = book.grading_late(attempt.grading) if a.bundle.due and not hidden else None
    return feedback_html(result if staff else masked(a.bundle.written_attempts, a.bundle, result, closed),
                         a.bundle.title, a.bundle.due, isolation, outcome_of(entry) if entry else None,
                         a.bundle, reveal=closed, back=f"/a/{a.name}/attempts/{attempt.id}")


def as_shown(a: ServedAssignment, attempt: Attempt, closed: bool) -> Attempt:
    """An attempt as its student sees it: while fixed written items are hidden (grade/written_policy.py), its score
    without them, and neither the score after the late policy nor, when the best attempt counts, which counts (each
    would tell how the hidden answers did)."""
    policy = a.bundle.written_attempts
    if not hides(policy, a.bundle, closed) or attempt.score is None:
        return attempt
    return replace(attempt, score=attempt.score if attempt.shown is None else attempt.shown,
                   max_score=shown_max(policy, a.bundle), final=None,
                   counted=attempt.counted and a.counting is Counting.LATEST)


def fresh_problems(a: ServedAssignment, student: str, made: int) -> list[tuple[str, Markup]]:
    """(title, prompt) of each problem with fresh numbers, with the numbers of the student's next attempt."""
    from autograder.exam.markup import readable_html  # markdown-it: only for a page that shows a problem

    seed = attempt_seed(a.bundle.seed, student, made)
    shown = []
    for written in a.bundle.written:
        problem = written.problem
        if fresh_numbers(problem):
            kind = kind_of(problem)
            variant = kind.variant(problem, seed, a.bundle.variants, student)
            shown.append((problem.title, Markup(readable_html(kind.prompt_text(problem, variant)))))
    return shown


class Opening(Enum):
    """Whether an assignment takes uploads now, by the signed-in student's own dates (staff: the class's)."""

    OPEN = "open"
    LATE = "open, late"  # past the due date, before the last date: what is handed in now loses points
    CLOSED = "closed"


@dataclass(frozen=True)
class Listed:
    """One served assignment on the course's home: its dates (the signed-in student's own), whether it takes
    uploads, and how far the class (for staff) or the student has got."""

    a: ServedAssignment
    due: Optional[dt.datetime]
    last: Optional[dt.datetime]
    state: Opening
    handed_in: int  # students with an attempt (staff), or the student's own attempts
    students: int  # on the roster (staff)
    waiting: int


def listed(state: ServiceState, a: ServedAssignment, session: Session, now: dt.datetime) -> Listed:
    staff = session.account.role.sees_class
    due, last = (a.policy.due, a.policy.last) if staff else a.dates_of(session.account.person, state.roster)
    word = (Opening.CLOSED if last is not None and now > last else Opening.LATE if due is not None and now > due
            else Opening.OPEN)
    book = state.books[a.name]
    if staff:
        totals = book.attempt_totals()
        return Listed(a, due, last, word, len(totals), len(state.roster.students) if state.roster else 0,
                      sum(waiting for _, waiting in totals.values()))
    return Listed(a, due, last, word, len(book.attempts_of(session.account.person)), 0, 0)


@signed_in(state_of)
def home(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    now = dt.datetime.now(dt.timezone.utc)
    return html("home.html.j2", listed=[listed(state, a, session, now) for a in state.assignments.values()],
                staff=session.account.role.sees_class, session=session,
                practice=state.practice is not None, exams=state.exams is not None)


def assignment_page(request: Request, session: Session, refusal: str = "", status: int = 200) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    if session.account.role.sees_class:
        return RedirectResponse(f"/a/{a.name}/class", status_code=303)
    student = session.account.person
    due, last = a.dates_of(student, state.roster)
    over = closed_for_all(a, state.roster, dt.datetime.now(dt.timezone.utc))
    attempts = [as_shown(a, t, over) for t in state.books[a.name].attempts_of(student)]
    closed = (f"The last date for handing in was {last.isoformat()}."
              if last is not None and time.time() > last.timestamp() else "")
    return html("assignment.html.j2", status, a=a, session=session, due=due, last=last,
                extended=due is not None and a.policy.due is not None and due != a.policy.due,
                late_rule=a.policy.late_terms() if a.bundle.late else "", whose="Your attempts", made=len(attempts),
                left=max(0, a.settings.attempts - len(attempts)), attempts=attempts, refusal=refusal,
                closed=closed, written_rule=a.bundle.written_attempts.sentence() if a.bundle.written else "",
                fresh=[] if closed else fresh_problems(a, student, len(attempts)))


@signed_in(state_of)
def assignment(request: Request, session: Session, form: Any) -> Response:
    return assignment_page(request, session)


@signed_in(state_of)
def upload(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    if session.account.role is not Role.STUDENT:
        raise Refusal(403, "only students hand in; staff see attempts on the class page", "Refused")
    file = form.get("file")
    if file is None or isinstance(file, str):
        return assignment_page(request, session, "choose a file to hand in", 400)
    body = file.file.read(a.settings.upload_kb * 1024 + 1)
    outcome = state.receive(a, session.account.person, file.filename or "", body, time.time(), file.size)
    if not isinstance(outcome, Accepted):
        return assignment_page(request, session, outcome.reason, outcome.status)
    return RedirectResponse(f"/a/{a.name}/attempts/{outcome.attempt_id}", status_code=303)


@signed_in(state_of)
def attempt_page(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    attempt = own_attempt(state, session, a, request.path_params["attempt"])
    if not session.account.role.sees_class:
        attempt = as_shown(a, attempt, closed_for_all(a, state.roster, dt.datetime.now(dt.timezone.utc)))
    view = attempt_view(attempt, time.time())
    # the whole result (tens of kB of JSON) is read only for the one line a grading that failed shows: the
    # page is looked at again and again while an attempt waits, and once more when it is graded
    graded = state.books[a.name].grading_result(attempt.grading) if (
        view.shows_failure and attempt.grading is not None) else None
    return html("attempt.html.j2", a=a, attempt=attempt, session=session, staff=session.account.role.sees_class,
                message=graded[0].message if graded else "", refresh=view.refresh,
                wait=f"/a/{a.name}/attempts/{attempt.id}/result")


HOLD_S = 20.0  # the longest a look at a waiting attempt is held: then the page answers "still waiting"
CHECK_S = 1.0  # how often a held look reads the attempt itself: a grading stored by another web process is not told


async def held_attempt_page(request: Request) -> Response:
    """The attempt's page, held while the attempt waits: answered once its grading is stored (this process's grader
    says so at once; another's is seen within CHECK_S) or after HOLD_S. A waiting page's script looks here
    (the page's data-wait), so a result is seen as soon as it is stored, from one request, where a page looked at
    again on a timer was fetched 7 times in its first 3 s. Who may see the attempt is checked before anything is held,
    as the page itself checks it: another student's attempt answers at once as the page does (404)."""
    state = state_of(request)
    session = await run_in_threadpool(state.accounts.session, request.cookies.get(SESSION_COOKIE, ""), time.time())
    name, attempt_id = request.path_params["name"], request.path_params["attempt"]
    book = state.books.get(name)
    if session is not None and book is not None and name in state.assignments:
        try:
            await run_in_threadpool(own_attempt, state, session, state.assignments[name], attempt_id)
        except Refusal:
            pass  # the page says so, below
        else:
            deadline = time.monotonic() + HOLD_S
            with state.results.watching(attempt_id) as told:
                # watched before the first read: a grading stored after that read is told, not missed
                while (left := deadline - time.monotonic()) > 0:
                    attempt = await run_in_threadpool(book.attempt, attempt_id)
                    if attempt is None or attempt.state is AttemptState.GRADED:
                        break
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(told.wait(), min(CHECK_S, left))
    return await attempt_page(request)


@signed_in(state_of)
def feedback(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    attempt = own_attempt(state, session, a, request.path_params["attempt"])
    if attempt.grading is None:
        raise Refusal(404, "this attempt is still being graded", "Not yet")
    return HTMLResponse(feedback_page(a, state.books[a.name], state.roster, attempt,
                                      as_student=not session.account.role.sees_class))


@signed_in(state_of)
def release(request: Request, session: Session, form: Any) -> Response:
    a = state_of(request).assignment(request.path_params["name"])
    return Response(zipped(a.release_dir, a.name), media_type="application/zip",
                    headers={"content-disposition": f'attachment; filename="{a.name}-release.zip"'})


async def script(request: Request) -> Response:
    return Response(REFRESH_SCRIPT, media_type="text/javascript; charset=utf-8")


def zipped(folder: str | os.PathLike[str], name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, _, files in os.walk(folder):
            for file in sorted(files):
                path = os.path.join(root, file)
                archive.write(path, os.path.join(name, os.path.relpath(path, folder)))
                if buffer.tell() > RELEASE_BYTES:
                    raise Refusal(500, "the release is too large to download here; ask your instructor")
    return buffer.getvalue()
