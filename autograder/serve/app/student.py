"""A student's pages: the served assignments, one assignment (its dates, attempts and the upload form), an
attempt while it waits and once graded, its feedback, and the release to download.

The feedback page shows the late outcome the grading service kept with the grading (grade/service.py).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import time
import zipfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Optional

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from autograder.classroom.classbook import outcome_of
from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.accounts import Role, Session
from autograder.grade.gradebook.records import Attempt
from autograder.report.feedback import feedback_html
from autograder.serve.app.site import html, signed_in
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.course import ServedAssignment
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


def closed_for_all(a: ServedAssignment, roster: Optional[Roster], now: dt.datetime) -> bool:
    """Whether nobody can hand in any more: every student's last date (their extension's) has passed. Only then
    do the service's feedback pages show hidden tests' details and worked solutions: a student past their own
    due date may still hand in, and a classmate with an extension still works."""
    students = [s.id for s in roster.students] if roster else []
    lasts = [a.dates_of(student, roster)[1] for student in students] or [a.dates_of("", roster)[1]]
    return all(last is not None and now > last for last in lasts)


def feedback_page(a: ServedAssignment, book: Gradebook, roster: Optional[Roster], attempt: Attempt) -> str:
    """The attempt's feedback, with the late outcome the grading service kept with its grading."""
    graded = book.grading_result(attempt.grading) if attempt.grading else None
    if graded is None or attempt.grading is None:
        return ""
    result, isolation = graded
    entry = book.grading_late(attempt.grading) if a.bundle.due else None
    return feedback_html(result, a.bundle.title, a.bundle.due, isolation, outcome_of(entry) if entry else None,
                         a.bundle, reveal=closed_for_all(a, roster, dt.datetime.now(dt.timezone.utc)),
                         back=f"/a/{a.name}/attempts/{attempt.id}")


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
                practice=state.practice is not None)


def assignment_page(request: Request, session: Session, refusal: str = "", status: int = 200) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    if session.account.role.sees_class:
        return RedirectResponse(f"/a/{a.name}/class", status_code=303)
    student = session.account.person
    due, last = a.dates_of(student, state.roster)
    attempts = state.books[a.name].attempts_of(student)
    closed = (f"The last date for handing in was {last.isoformat()}."
              if last is not None and time.time() > last.timestamp() else "")
    return html("assignment.html.j2", status, a=a, session=session, due=due, last=last,
                extended=due is not None and a.policy.due is not None and due != a.policy.due,
                late_rule=a.policy.late_terms() if a.bundle.late else "", whose="Your attempts", made=len(attempts),
                left=max(0, a.settings.attempts - len(attempts)), attempts=attempts, refusal=refusal,
                closed=closed)


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
    view = attempt_view(attempt, time.time())
    # the whole result (tens of kB of JSON) is read only for the one line a grading that failed shows: the
    # page is looked at again and again while an attempt waits, and once more when it is graded
    graded = state.books[a.name].grading_result(attempt.grading) if (
        view.shows_failure and attempt.grading is not None) else None
    return html("attempt.html.j2", a=a, attempt=attempt, session=session, staff=session.account.role.sees_class,
                message=graded[0].message if graded else "", refresh=view.refresh)


@signed_in(state_of)
def feedback(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    attempt = own_attempt(state, session, a, request.path_params["attempt"])
    if attempt.grading is None:
        raise Refusal(404, "this attempt is still being graded", "Not yet")
    return HTMLResponse(feedback_page(a, state.books[a.name], state.roster, attempt))


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
