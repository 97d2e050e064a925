"""The endpoints an LMS calls, when course.yaml makes the service an LTI tool: OIDC login initiation, the launch,
an instructor's deep-linking pick and the tool's public key set. Each reads the tool (`ServiceState.lti`) and the
service from its app; what a launch checks and whom it signs in is serve/lti/launch.py's.
"""

from __future__ import annotations

import time

from pylti1p3.exception import LtiException, OIDCException
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from autograder.serve.app.site import refusal_page
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.guard import client_address
from autograder.serve.lti.adapter import CookieJar, Login, LtiRequest, Sessions
from autograder.serve.lti.deep_link import PICK_PATH, picked
from autograder.serve.lti.keys import jwks
from autograder.serve.lti.launch import JWKS_PATH, LAUNCH_PATH, LOGIN_PATH, LtiTool, login_allowed, on_tool, signed_in
from autograder.serve.pages import Refusal

PARAM_CHARS = 8000  # an id_token is a few kilobytes; anything far longer is not one


def routes() -> list[Route]:
    return [Route(LOGIN_PATH, login, methods=["GET", "POST"]), Route(LAUNCH_PATH, launch, methods=["POST"]),
            Route(PICK_PATH, pick, methods=["POST"]), Route(JWKS_PATH, key_set, methods=["GET"])]


def tool_of(request: Request) -> tuple[ServiceState, LtiTool]:
    state = state_of(request)
    if state.lti is None:  # web.py serves these routes only with a tool
        raise RuntimeError("an LTI endpoint in a service that is no LTI tool")
    return state, state.lti


async def params(request: Request) -> dict[str, str]:
    given = dict(request.query_params)
    if request.method == "POST":
        form = await request.form(max_files=0, max_fields=30)
        given.update({k: v for k, v in form.items() if isinstance(v, str)})
    too_long = sorted(k for k, v in given.items() if len(v) > PARAM_CHARS)
    if too_long:  # refused, not cut: a token cut short would fail later with a reason that misleads
        raise Refusal(400, f"the request's {too_long[0][:40]!r} is longer than {PARAM_CHARS:,} characters, "
                           "more than an LMS sends", "Launch refused")
    return given


async def login(request: Request) -> Response:
    state, tool = tool_of(request)
    if not await run_in_threadpool(login_allowed, state.accounts, client_address(request), time.time()):
        return refusal_page(429, "too many LMS sign-ins from this address: wait 15 minutes and try again",
                            "Launch refused")
    try:
        lti_request = LtiRequest(await params(request), request.cookies, state.secure_cookies)
    except Refusal as refusal:
        return refusal_page(refusal.status, refusal.message, refusal.heading)
    target = lti_request.get_param("target_link_uri")
    if not on_tool(target, tool.settings.tool_url):
        return refusal_page(400, "the LMS asked to open an address that is not this service's: "
                                 f"{target[:200]!r}", "Launch refused")
    cookies = CookieJar(lti_request)
    try:
        return await run_in_threadpool(
            lambda: Login(lti_request, tool.tool_config(), Sessions(tool.values), cookies, tool.values)
            .redirect(tool.launch_url))
    except (LtiException, OIDCException) as err:
        return refusal_page(403, f"the LMS's sign-in request was refused: {err}", "Launch refused")


async def launch(request: Request) -> Response:
    state, tool = tool_of(request)
    try:
        lti_request = LtiRequest(await params(request), request.cookies, state.secure_cookies)
        return await run_in_threadpool(signed_in, tool, state, lti_request)
    except Refusal as refusal:
        return refusal_page(refusal.status, refusal.message, refusal.heading)


async def pick(request: Request) -> Response:
    state, tool = tool_of(request)
    try:
        form = await params(request)
        return await run_in_threadpool(picked, tool, tool.values, form.get("pick", ""),
                                       form.get("assignment", ""), state.assignments)
    except Refusal as refusal:
        return refusal_page(refusal.status, refusal.message, refusal.heading)


async def key_set(request: Request) -> Response:
    _, tool = tool_of(request)
    return JSONResponse(jwks(tool.public_pem))
