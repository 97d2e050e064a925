"""The service's routes: sign-in, a student's assignment, attempts and feedback, the class for staff, and the
JSON routes `qkv_check.py --submit` uses.

Every route that shows an attempt or a student finds it through the signed-in account: a student's
own attempts only (another's id is "no such attempt", the same answer as an id that does not exist),
staff any. The work of each route (the database, scrypt, rendering) runs in a worker thread, so the
event loop only moves bytes.
"""

from __future__ import annotations

import io
import os
import secrets
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from autograder.classroom.roster import Roster
from autograder.errors import QkvError
from autograder.grade.gradebook import Gradebook
from autograder.grade.gradebook.accounts import Account, AccountBook, Role, Session
from autograder.serve import instructor
from autograder.serve.course import ServedAssignment
from autograder.serve.grader import Grader
from autograder.serve.guard import (SESSION_COOKIE, SESSION_SECONDS, SIGNIN_COOKIE, Guard, client_address, same_token,
                                    upload_limit)
from autograder.serve.handin import Accepted, hand_in
from autograder.serve.pages import Refusal, attempt_view, page
from autograder.serve.signin import SignIns

RELEASE_BYTES = 50_000_000  # a release zipped for download: far above any built release
# the only script the pages load (the CSP allows the service's own files alone): a pending result fills in by itself
REFRESH_SCRIPT = (Path(__file__).parent / "templates" / "refresh.js").read_bytes()


@dataclass
class ServiceState:
    assignments: dict[str, ServedAssignment]
    books: dict[str, Gradebook]
    accounts: AccountBook
    roster: Optional[Roster]
    graders: dict[str, Grader] = field(default_factory=dict)
    secure_cookies: bool = False
    notes: dict[str, str] = field(default_factory=dict)
    lti: Optional[Any] = None  # an lti.launch.LtiTool when course.yaml has an `lti:` section
    hub: Optional[Any] = None  # a hub.signin.Hub when course.yaml has a `jupyterhub:` section


def refusal_page(status: int, message: str, heading: str = "Refused", back: str = "/") -> HTMLResponse:
    return HTMLResponse(page("message.html.j2", heading=heading, message=message, session=None, back=back),
                        status_code=status)


def session_response(state: ServiceState, account: Account, next_path: str, framed: bool = False) -> Response:
    """A new session for `account` and the redirect to `next_path`, as the token sign-in and an LMS launch give.
    `framed`: the LMS shows the service in a frame of its own site, where only a SameSite=None cookie (which
    must then be Secure) is sent; without HTTPS it stays Lax (docs/lti.md)."""
    cookie, _ = state.accounts.open_session(account, time.time(), SESSION_SECONDS)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_SECONDS, httponly=True,
                        samesite="none" if framed and state.secure_cookies else "lax", secure=state.secure_cookies,
                        path="/")
    return response


def make_app(state: ServiceState) -> Any:
    most_upload = max((a.settings.upload_kb * 1024 for a in state.assignments.values()), default=0)
    sign_ins = SignIns(state.accounts)

    def html(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(page(template, **context), status_code=status)

    def session_of(request: Request) -> Optional[Session]:
        return state.accounts.session(request.cookies.get(SESSION_COOKIE, ""), time.time())

    def assignment_of(name: str) -> ServedAssignment:
        found = state.assignments.get(name)
        if found is None:
            raise Refusal(404, f"no assignment called {name!r} is served here", "Not found")
        return found

    def own_attempt(session: Session, a: ServedAssignment, attempt_id: str):
        attempt = state.books[a.name].attempt(attempt_id)
        if attempt is None or not (session.account.role.sees_class or attempt.student == session.account.person):
            raise Refusal(404, "no such attempt", "Not found")
        return attempt

    def cross_site(request: Request) -> bool:
        origin = request.headers.get("origin")
        return bool(origin) and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", "")

    def check_form(request: Request, form: Any, session: Session) -> None:
        if cross_site(request):
            raise Refusal(403, "a form sent from another site", "Refused")
        if not same_token(form.get("csrf"), session.csrf):
            raise Refusal(403, "the form's security token is missing or stale: reload the page and try again",
                          "Refused")

    def signed_in(work: Callable[..., Response], staff: bool = False, instructor_only: bool = False):
        """A route for a signed-in account (else to the sign-in page), run in a worker thread."""
        async def endpoint(request: Request) -> Response:
            session = await run_in_threadpool(session_of, request)
            if session is None:
                if request.url.path.startswith("/api/"):
                    return JSONResponse({"error": "sign in first"}, status_code=401)
                return RedirectResponse(f"/signin?next={request.url.path}", status_code=303)
            role = session.account.role
            if (staff and not role.sees_class) or (instructor_only and role is not Role.INSTRUCTOR):
                return html("message.html.j2", 403, heading="Refused", message="this page is for the course's staff",
                            session=session)
            form = await request.form(max_files=1, max_fields=20, max_part_size=most_upload + 1) \
                if request.method == "POST" else None
            try:
                if form is not None:
                    check_form(request, form, session)
                return await run_in_threadpool(work, request, session, form)
            except Refusal as refusal:
                return html("message.html.j2", refusal.status, heading=refusal.heading, message=refusal.message,
                            session=session, back="/")
            except QkvError as err:  # what the CLI would say in one line, e.g. no graded submission to analyse yet
                return html("message.html.j2", 409, heading="Not possible yet", message=str(err), session=session,
                            back="/")
            finally:
                if form is not None:
                    await form.close()
        return endpoint

    # ------------------------------------------------------------------ signing in

    async def signin_page(request: Request) -> Response:
        csrf = secrets.token_urlsafe(24)
        response = html("signin.html.j2", csrf=csrf, token=request.query_params.get("token", "")[:200],
                        next=_local_path(request.query_params.get("next", "/")), error=None, session=None)
        response.set_cookie(SIGNIN_COOKIE, csrf, max_age=3600, httponly=True, samesite="lax",
                            secure=state.secure_cookies)
        return response

    async def signin(request: Request) -> Response:
        if cross_site(request):  # a page elsewhere cannot sign a student in to someone else's account
            return html("message.html.j2", 403, heading="Refused", message="a form sent from another site",
                        session=None, back="/signin")
        form = await request.form(max_files=0, max_fields=5)
        token, csrf = str(form.get("token", ""))[:200], form.get("csrf")
        next_path = _local_path(str(form.get("next", "/")))
        if not same_token(csrf, request.cookies.get(SIGNIN_COOKIE, "")):
            return html("message.html.j2", 403, heading="Refused", session=None, back="/signin",
                        message="the sign-in form's security token is missing or stale: open the sign-in page again")
        outcome = await sign_ins.sign_in(client_address(request), token)
        if outcome.account is None:
            return html("signin.html.j2", outcome.status, csrf=csrf, token="", next=next_path, error=outcome.error,
                        session=None)
        response = await run_in_threadpool(session_response, state, outcome.account, next_path)
        response.delete_cookie(SIGNIN_COOKIE)
        return response

    def signout(request: Request, session: Session, form: Any) -> Response:
        state.accounts.close_session(request.cookies.get(SESSION_COOKIE, ""))
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # ------------------------------------------------------------------ students

    def home(request: Request, session: Session, form: Any) -> Response:
        return html("home.html.j2", assignments=list(state.assignments.values()), session=session)

    def assignment_page(request: Request, session: Session, form: Any, refusal: str = "",
                        status: int = 200) -> Response:
        a = assignment_of(request.path_params["name"])
        if session.account.role.sees_class:
            return RedirectResponse(f"/a/{a.name}/class", status_code=303)
        student = session.account.person
        due, last = a.dates_of(student, state.roster)
        book = state.books[a.name]
        attempts = book.attempts_of(student)
        closed = (f"The last date for handing in was {last.isoformat()}."
                  if last is not None and time.time() > last.timestamp() else "")
        return html("assignment.html.j2", status, a=a, session=session, due=due, last=last,
                    extended=due is not None and a.policy.due is not None and due != a.policy.due,
                    late_rule=a.policy.describe() if a.bundle.late else "", made=len(attempts),
                    left=max(0, a.settings.attempts - len(attempts)), attempts=attempts, refusal=refusal,
                    closed=closed)

    def upload(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        if session.account.role is not Role.STUDENT:
            raise Refusal(403, "only students hand in; staff see attempts on the class page", "Refused")
        file = form.get("file")
        if file is None or isinstance(file, str):
            return assignment_page(request, session, form, "choose a file to hand in", 400)
        body = file.file.read(a.settings.upload_kb * 1024 + 1)
        outcome = hand_in(a, state.books[a.name], state.roster, session.account.person, file.filename or "", body,
                          time.time())
        if not isinstance(outcome, Accepted):
            return assignment_page(request, session, form, outcome.reason, outcome.status)
        state.graders[a.name].wake() if a.name in state.graders else None
        return RedirectResponse(f"/a/{a.name}/attempts/{outcome.attempt_id}", status_code=303)

    def attempt_page(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        attempt = own_attempt(session, a, request.path_params["attempt"])
        view = attempt_view(attempt, time.time())
        # the whole result (tens of kB of JSON) is read only for the one line a grading that failed shows: the
        # page is looked at again and again while an attempt waits, and once more when it is graded
        graded = state.books[a.name].grading_result(attempt.grading) if view.shows_failure else None
        return html("attempt.html.j2", a=a, attempt=attempt, session=session, staff=session.account.role.sees_class,
                    message=graded[0].message if graded else "", refresh=view.refresh)

    def feedback(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        attempt = own_attempt(session, a, request.path_params["attempt"])
        if attempt.grading is None:
            raise Refusal(404, "this attempt is still being graded", "Not yet")
        return HTMLResponse(instructor.feedback_page(a, state.books[a.name], state.roster, attempt))

    def release(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        return Response(_zipped(a.release_dir, a.name), media_type="application/zip",
                        headers={"content-disposition": f'attachment; filename="{a.name}-release.zip"'})

    async def script(request: Request) -> Response:
        return Response(REFRESH_SCRIPT, media_type="text/javascript; charset=utf-8")

    # ------------------------------------------------------------------ the release's --submit

    async def api_attempts(request: Request) -> Response:
        a = state.assignments.get(request.path_params["name"])
        if a is None:
            return JSONResponse({"error": "no such assignment"}, status_code=404)
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        outcome = await (state.hub.sign_in(state, client_address(request), token)
                         if state.hub is not None and state.hub.owns(token) else
                         sign_ins.sign_in(client_address(request), token))
        account = outcome.account
        if account is None:
            return JSONResponse({"error": outcome.error}, status_code=outcome.status)
        if request.method == "GET":
            return await run_in_threadpool(_api_status, a, account, request.path_params.get("attempt", ""))
        if account.role is not Role.STUDENT:
            return JSONResponse({"error": "only students hand in"}, status_code=403)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > a.settings.upload_kb * 1024:
                break
        outcome = await run_in_threadpool(hand_in, a, state.books[a.name], state.roster, account.person,
                                          request.query_params.get("filename", ""), bytes(body), time.time())
        if not isinstance(outcome, Accepted):
            return JSONResponse({"error": outcome.reason}, status_code=outcome.status)
        if a.name in state.graders:
            state.graders[a.name].wake()
        return JSONResponse({"attempt": outcome.attempt_id, "page": f"/a/{a.name}/attempts/{outcome.attempt_id}"},
                            status_code=202)

    def _api_status(a: ServedAssignment, account: Account, attempt_id: str) -> Response:
        attempt = state.books[a.name].attempt(attempt_id)
        if attempt is None or (attempt.student != account.person and not account.role.sees_class):
            return JSONResponse({"error": "no such attempt"}, status_code=404)
        return JSONResponse({"attempt": attempt.id, "state": attempt.state.value, "score": attempt.score,
                             "max_score": attempt.max_score, "final": attempt.final, "counted": attempt.counted,
                             "page": f"/a/{a.name}/attempts/{attempt.id}"})

    # ------------------------------------------------------------------ staff

    def class_page(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        grader = state.graders.get(a.name)
        return html("class.html.j2", a=a, session=session, rows=instructor.class_rows(a, state.books[a.name],
                                                                                      state.roster),
                    waiting=state.books[a.name].waiting(), note=state.notes.get(a.name),
                    failure=grader.failure if grader else None, instructor=session.account.role is Role.INSTRUCTOR,
                    lms_class_list=instructor.lms_class_list(state.lti, a.name))

    def student_page(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        student = request.path_params["student"]
        found = state.roster.by_id(student) if state.roster else None
        due, last = a.dates_of(student, state.roster)
        return html("student.html.j2", a=a, session=session, student=student, name=found.name if found else "",
                    due=due, last=last, attempts=state.books[a.name].attempts_of(student),
                    instructor=session.account.role is Role.INSTRUCTOR)

    def regrade(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        student = str(form.get("student", "")) or None
        count = state.books[a.name].regrade_attempts(student)
        state.notes[a.name] = f"{count} attempt(s) queued to be graded again"
        if a.name in state.graders:
            state.graders[a.name].wake()
        return RedirectResponse(f"/a/{a.name}/class" + (f"/{student}" if student else ""), status_code=303)

    def stats(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        return HTMLResponse(instructor.stats_page(a, state.books[a.name]))

    def copying(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        return HTMLResponse(instructor.copying_page(a, state.books[a.name]))

    def export(request: Request, session: Session, form: Any) -> Response:
        a = assignment_of(request.path_params["name"])
        name, data = instructor.export(a, state.books[a.name], state.roster, request.path_params["format"])
        return Response(data, media_type="text/csv; charset=utf-8",
                        headers={"content-disposition": f'attachment; filename="{name}"'})

    routes = [
        Route("/refresh.js", script, methods=["GET"]),
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signed_in(signout), methods=["POST"]),
        Route("/", signed_in(home)),
        Route("/a/{name}", signed_in(assignment_page)),
        Route("/a/{name}/release.zip", signed_in(release)),
        Route("/a/{name}/attempts", signed_in(upload), methods=["POST"]),
        Route("/a/{name}/attempts/{attempt}", signed_in(attempt_page)),
        Route("/a/{name}/attempts/{attempt}/feedback", signed_in(feedback)),
        Route("/a/{name}/class", signed_in(class_page, staff=True)),
        Route("/a/{name}/class/{student}", signed_in(student_page, staff=True)),
        Route("/a/{name}/stats", signed_in(stats, staff=True)),
        Route("/a/{name}/copying", signed_in(copying, instructor_only=True)),
        Route("/a/{name}/export/{format}", signed_in(export, instructor_only=True)),
        Route("/a/{name}/regrade", signed_in(regrade, instructor_only=True), methods=["POST"]),
        Route("/api/a/{name}/attempts", api_attempts, methods=["POST"]),
        Route("/api/a/{name}/attempts/{attempt}", api_attempts, methods=["GET"]),
    ]
    if state.lti is not None:
        routes += state.lti.routes(state)
    if state.hub is not None:  # its /signin first: the hub signs people in (hub/signin.py)
        routes = state.hub.routes(state) + routes
    app = Guard(Starlette(routes=routes), lambda path: upload_limit(path, most_upload),
                frame_ancestors=state.lti.origins if state.lti is not None else ())
    return state.hub.mounted(app) if state.hub is not None else app


def _local_path(value: str) -> str:
    """A path on this server to go on to after signing in; anything else (another site, a scheme) is '/'."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value[:300]


def _zipped(folder: os.PathLike, name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, _, files in os.walk(folder):
            for file in sorted(files):
                path = os.path.join(root, file)
                archive.write(path, os.path.join(name, os.path.relpath(path, folder)))
                if buffer.tell() > RELEASE_BYTES:
                    raise Refusal(500, "the release is too large to download here; ask your instructor")
    return buffer.getvalue()


__all__ = ["ServiceState", "make_app", "refusal_page", "session_response"]
