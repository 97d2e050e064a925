"""The JSON routes the release's `qkv_check.py --submit` uses: hand in with a token (the one hand-in path the
form takes too, ServiceState.receive) and look at an attempt."""

from __future__ import annotations

import datetime as dt
import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from autograder.grade.gradebook.accounts import Account, Role
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.app.student import as_shown
from autograder.serve.course import ServedAssignment, closed_for_all
from autograder.serve.guard import client_address
from autograder.serve.handin import Accepted


async def attempts(request: Request) -> Response:
    state = state_of(request)
    a = state.assignments.get(request.path_params["name"])
    if a is None:
        return JSONResponse({"error": "no such assignment"}, status_code=404)
    token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    outcome = await (state.hub.sign_in(state, client_address(request), token)
                     if state.hub is not None and state.hub.owns(token) else
                     state.sign_ins.sign_in(client_address(request), token))
    account = outcome.account
    if account is None:
        return JSONResponse({"error": outcome.error}, status_code=outcome.status)
    if request.method == "GET":
        return await run_in_threadpool(status, state, a, account, request.path_params.get("attempt", ""))
    if account.role is not Role.STUDENT:
        return JSONResponse({"error": "only students hand in"}, status_code=403)
    body, size, limit = bytearray(), 0, a.settings.upload_kb * 1024
    async for chunk in request.stream():  # the guard bounds the whole body; past the limit it is only counted
        size += len(chunk)
        if len(body) <= limit:
            body += chunk[:limit + 1 - len(body)]
    handed = await run_in_threadpool(state.receive, a, account.person, request.query_params.get("filename", ""),
                                     bytes(body), time.time(), size)
    if not isinstance(handed, Accepted):
        return JSONResponse({"error": handed.reason}, status_code=handed.status)
    return JSONResponse({"attempt": handed.attempt_id, "page": f"/a/{a.name}/attempts/{handed.attempt_id}"},
                        status_code=202)


def status(state: ServiceState, a: ServedAssignment, account: Account, attempt_id: str) -> Response:
    attempt = state.books[a.name].attempt(attempt_id)
    if attempt is None or (attempt.student != account.person and not account.role.sees_class):
        return JSONResponse({"error": "no such attempt"}, status_code=404)
    if not account.role.sees_class:
        attempt = as_shown(a, attempt, closed_for_all(a, state.roster, dt.datetime.now(dt.timezone.utc)))
    return JSONResponse({"attempt": attempt.id, "state": attempt.state.value, "score": attempt.score,
                         "max_score": attempt.max_score, "final": attempt.final, "counted": attempt.counted,
                         "page": f"/a/{a.name}/attempts/{attempt.id}"})
