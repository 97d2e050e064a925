"""The doors every page goes through: the account a request is signed in as (else the sign-in page), a form's
CSRF check, a new session's cookie, refusals as pages, and the one hand-in path of the form and the API.

Every page that shows an attempt or a student finds it through the signed-in account: a student's own
attempts only (another's id is "no such attempt", the same answer as an id that does not exist), staff any.
The work of each page (the database, scrypt, rendering) runs in a worker thread, so the event loop only
moves bytes. `Site` is what the LTI tool's launch needs of the service as well (serve/lti/launch.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from autograder.classroom.roster import Roster
from autograder.errors import QkvError
from autograder.grade.gradebook.accounts import Account, AccountBook, Role, Session
from autograder.serve.course import ServedAssignment
from autograder.serve.guard import FORM_BYTES, SESSION_COOKIE, SESSION_SECONDS, same_token
from autograder.serve.pages import Refusal, page


@dataclass
class Site:
    """The served assignments, the accounts and the roster: what signing in (by token or by an LMS) needs."""

    assignments: dict[str, ServedAssignment]
    accounts: AccountBook
    roster: Optional[Roster]
    secure_cookies: bool = False

    @property
    def most_upload(self) -> int:
        """The largest file any served assignment takes, in bytes."""
        return max((a.settings.upload_kb * 1024 for a in self.assignments.values()), default=0)

    def assignment(self, name: str) -> ServedAssignment:
        found = self.assignments.get(name)
        if found is None:
            raise Refusal(404, f"no assignment called {name!r} is served here", "Not found")
        return found


def html(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(page(template, **context), status_code=status)


def refusal_page(status: int, message: str, heading: str = "Refused", back: str = "/") -> HTMLResponse:
    return html("message.html.j2", status, heading=heading, message=message, session=None, back=back)


def session_response(site: Site, account: Account, next_path: str, framed: bool = False) -> Response:
    """A new session for `account` and the redirect to `next_path`, as the token sign-in and an LMS launch give.
    `framed`: the LMS shows the service in a frame of its own site, where only a SameSite=None cookie (which
    must then be Secure) is sent; without HTTPS it stays Lax (docs/lti.md)."""
    cookie, _ = site.accounts.open_session(account, time.time(), SESSION_SECONDS)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_SECONDS, httponly=True,
                        samesite="none" if framed and site.secure_cookies else "lax", secure=site.secure_cookies,
                        path="/")
    return response


def cross_site(request: Request) -> bool:
    origin = request.headers.get("origin")
    return bool(origin) and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", "")


def check_form(request: Request, form: Any, session: Session) -> None:
    if cross_site(request):
        raise Refusal(403, "a form sent from another site", "Refused")
    if not same_token(form.get("csrf"), session.csrf):
        raise Refusal(403, "the form's security token is missing or stale: reload the page and try again",
                      "Refused")


def local_path(value: str) -> str:
    """A path on this server to go on to after signing in; anything else (another site, a scheme) is '/'."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value[:300]


Work = Callable[[Request, Session, Any], Response]


def signed_in(site_of: Callable[[Request], Site], staff: bool = False,
              instructor_only: bool = False) -> Callable[[Work], Callable[[Request], Awaitable[Response]]]:
    """A page for a signed-in account (else to the sign-in page), its work run in a worker thread; `staff`: for
    the course's staff, `instructor_only`: for its instructors."""
    def door(work: Work) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            site = site_of(request)
            session = await run_in_threadpool(site.accounts.session, request.cookies.get(SESSION_COOKIE, ""),
                                              time.time())
            if session is None:
                if request.url.path.startswith("/api/"):
                    return JSONResponse({"error": "sign in first"}, status_code=401)
                return RedirectResponse(f"/signin?next={request.url.path}", status_code=303)
            role = session.account.role
            if (staff and not role.sees_class) or (instructor_only and role is not Role.INSTRUCTOR):
                return html("message.html.j2", 403, heading="Refused", message="this page is for the course's staff",
                            session=session)
            most = max(site.most_upload, FORM_BYTES) + 1  # a file, else a form's field (a typed answer)
            form = await request.form(max_files=1, max_fields=20, max_part_size=most) \
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
        endpoint.__name__ = work.__name__
        return endpoint
    return door


__all__ = ["Site", "check_form", "cross_site", "html", "local_path", "refusal_page", "session_response", "signed_in"]
