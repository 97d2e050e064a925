"""Signing in with a token (the sign-in page and its form) and signing out."""

from __future__ import annotations

import secrets
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from autograder.grade.gradebook.accounts import Session
from autograder.serve.app.site import cross_site, html, local_path, session_response, signed_in
from autograder.serve.app.state import state_of
from autograder.serve.guard import SESSION_COOKIE, SIGNIN_COOKIE, client_address, same_token


async def signin_page(request: Request) -> Response:
    csrf = secrets.token_urlsafe(24)
    response = html("signin.html.j2", csrf=csrf, token=request.query_params.get("token", "")[:200],
                    next=local_path(request.query_params.get("next", "/")), error=None, session=None)
    response.set_cookie(SIGNIN_COOKIE, csrf, max_age=3600, httponly=True, samesite="lax",
                        secure=state_of(request).secure_cookies)
    return response


async def signin(request: Request) -> Response:
    state = state_of(request)
    if cross_site(request):  # a page elsewhere cannot sign a student in to someone else's account
        return html("message.html.j2", 403, heading="Refused", message="a form sent from another site",
                    session=None, back="/signin")
    form = await request.form(max_files=0, max_fields=5)
    token, csrf = str(form.get("token", ""))[:200], form.get("csrf")
    next_path = local_path(str(form.get("next", "/")))
    if not same_token(csrf, request.cookies.get(SIGNIN_COOKIE, "")):
        return html("message.html.j2", 403, heading="Refused", session=None, back="/signin",
                    message="the sign-in form's security token is missing or stale: open the sign-in page again")
    outcome = await state.sign_ins.sign_in(client_address(request), token)
    if outcome.account is None:
        return html("signin.html.j2", outcome.status, csrf=csrf, token="", next=next_path, error=outcome.error,
                    session=None)
    response = await run_in_threadpool(session_response, state, outcome.account, next_path)
    response.delete_cookie(SIGNIN_COOKIE)
    return response


@signed_in(state_of)
def signout(request: Request, session: Session, form: Any) -> Response:
    state_of(request).accounts.close_session(request.cookies.get(SESSION_COOKIE, ""))
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
