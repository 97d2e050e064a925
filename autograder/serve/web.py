"""The service's web app: the endpoints of serve/app/ (by audience: account, student, staff, api, practice, exam,
lti) put together behind the guard (serve/guard.py), with the shared state on the app and a lifespan that starts
the graders and then the loops beside them (ServiceState.background) as the app starts, and stops them as it
stops: the loops first, so nothing hands a grader more work, then the graders, each finishing what it had claimed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route
from starlette.types import ASGIApp

from autograder.serve.app import account, api, exam, lti, practice, staff, student
from autograder.serve.app.state import Background, ServiceState
from autograder.serve.guard import Guard, upload_limit

REFRESH_SCRIPT = student.REFRESH_SCRIPT


def routes(state: ServiceState) -> list[Route]:
    found = [
        Route("/refresh.js", student.script, methods=["GET"]),
        Route("/signin", account.signin_page, methods=["GET"]),
        Route("/signin", account.signin, methods=["POST"]),
        Route("/signout", account.signout, methods=["POST"]),
        Route("/", student.home),
        Route("/a/{name}", student.assignment),
        Route("/a/{name}/release.zip", student.release),
        Route("/a/{name}/attempts", student.upload, methods=["POST"]),
        Route("/a/{name}/attempts/{attempt}", student.attempt_page),
        Route("/a/{name}/attempts/{attempt}/result", student.held_attempt_page),
        Route("/a/{name}/attempts/{attempt}/feedback", student.feedback),
        Route("/a/{name}/class", staff.class_page),
        Route("/a/{name}/class/{student}", staff.student_page),
        Route("/a/{name}/stats", staff.stats),
        Route("/a/{name}/copying", staff.copying),
        Route("/a/{name}/export/{format}", staff.export),
        Route("/a/{name}/regrade", staff.regrade, methods=["POST"]),
        Route("/api/a/{name}/attempts", api.attempts, methods=["POST"]),
        Route("/api/a/{name}/attempts/{attempt}", api.attempts, methods=["GET"]),
    ]
    found += practice_routes() if state.practice is not None else []
    found += exam_routes() if state.exams is not None else []
    found += lti.routes() if state.lti is not None else []
    # the hub's /signin first: in a hub the hub signs people in (hub/signin.py)
    return (state.hub.routes(state) if state.hub is not None else []) + found


def practice_routes() -> list[Route]:
    return [
        Route("/practice", practice.practice_home),
        Route("/practice/next", practice.next_variant, methods=["POST"]),
        Route("/practice/v/{variant}", practice.variant_page),
        Route("/practice/v/{variant}", practice.answer, methods=["POST"]),
        Route("/practice/v/{variant}/result", practice.held_code_page),
        Route("/practice/progress", practice.progress),
        Route("/practice/class", practice.class_view),
    ]


def exam_routes() -> list[Route]:
    return [
        Route("/countdown.js", exam.countdown_script, methods=["GET"]),
        Route("/exams", exam.exams_home),
        Route("/exams/{name}/start", exam.start, methods=["POST"]),
        Route("/exams/{name}/class", exam.class_view),
        Route("/exams/{name}/scores.csv", exam.scores_csv),
        Route("/exams/s/{sitting}", exam.paper),
        Route("/exams/s/{sitting}", exam.save, methods=["POST"]),
    ]


def make_app(state: ServiceState) -> ASGIApp:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        started: list[Background] = []
        try:
            for grader in state.graders.values():
                grader.start()
            for loop in state.background:
                loop.start()
                started.append(loop)
            yield
        finally:
            await run_in_threadpool(_stop, started, state)

    app = Starlette(routes=routes(state), lifespan=lifespan)
    app.state.service = state
    most_upload = state.most_upload
    guarded = Guard(app, lambda path: upload_limit(path, most_upload),
                    frame_ancestors=state.lti.origins if state.lti is not None else ())
    return state.hub.mounted(guarded) if state.hub is not None else guarded


def _stop(started: list[Background], state: ServiceState) -> None:
    for loop in reversed(started):
        loop.stop()
    stop_graders(state)


def stop_graders(state: ServiceState) -> None:
    """All asked at once, so each finishes what it claimed beside the others; then each waited for."""
    for grader in state.graders.values():
        grader.ask_to_stop()
    for grader in state.graders.values():
        grader.stop()


__all__ = ["REFRESH_SCRIPT", "ServiceState", "make_app", "stop_graders"]
