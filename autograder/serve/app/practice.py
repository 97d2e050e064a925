"""Practice in the service (/practice, when course.yaml has a `practice:` section; serve/practice.py does the work).

A student: the practice page (each topic's mastery, "what I need most", the problem to resume), a new variant asked
for by a form, the variant's page (its question; once answered its verdicts, the misconception named and the worked
solution of that variant; a code problem's: its prompt, signature and public examples, a box for the code, then the
try waiting for the sandbox and its tests' verdicts with the misconceptions named) and the progress page. Staff: the class's mastery per topic and the misconceptions most
held. A variant is found through the signed-in student: another's id is "no such practice problem", as a made-up one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from autograder.exam.markup import readable_html
from autograder.grade.gradebook.accounts import Role, Session
from autograder.grade.gradebook.practice import PracticeVariant
from autograder.kinds import Problem, kind_of
from autograder.kinds.implement import stub_function
from autograder.practice.answers import Judged, Unreadable, judge, key_of, question_markdown, questions, skipped
from autograder.practice.rule import CLEARED_AFTER
from autograder.serve.app.site import html, signed_in
from autograder.serve.app.student import CHECK_S, HOLD_S
from autograder.serve.guard import SESSION_COOKIE
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.pages import Refusal
from autograder.serve.practice import PracticeSpace, moment
from autograder.serve.practice_code import CODE_CHARS

SKIP = "skip"


def space_of(state: ServiceState) -> PracticeSpace:
    if state.practice is None:
        raise Refusal(404, "this course offers no practice", "Not found")
    return state.practice


def _student(session: Session) -> str:
    if session.account.role is not Role.STUDENT:
        raise Refusal(403, "practice is for students; staff see the class on /practice/class", "Refused")
    return session.account.person


def _summary(space: PracticeSpace, student: str) -> dict[str, Any]:
    memory, tries = space.memory(student)
    now = moment(time.time())
    due = [pid for pid, _ in memory.due(now) if pid in space.pool]
    return dict(tries=tries, topics=memory.topic_mastery(space.problems), held=memory.held, due=due,
                cleared_after=CLEARED_AFTER, memory=memory)


@signed_in(state_of)
def practice_home(request: Request, session: Session, form: Any) -> Response:
    space = space_of(state_of(request))
    if session.account.role.sees_class:
        return RedirectResponse("/practice/class", status_code=303)
    student = _student(session)
    return html("practice.html.j2", session=session, waiting=space.store.waiting(student), **_summary(space, student))


@signed_in(state_of)
def next_variant(request: Request, session: Session, form: Any) -> Response:
    space = space_of(state_of(request))
    topic = str(form.get("topic", ""))[:200] or None
    variant = space.give(_student(session), topic, time.time())
    return RedirectResponse(f"/practice/v/{variant}", status_code=303)


def _variant_page(request: Request, session: Session, typed: dict[str, str], refusal: str = "",
                  status: int = 200) -> Response:
    space = space_of(state_of(request))
    variant, problem = space.variant(request.path_params["variant"], _student(session))
    if kind_of(problem).code:
        return _code_page(space, session, variant, problem)
    context: dict[str, Any] = dict(session=session, variant=variant, problem=problem,
                                   question=readable_html(question_markdown(problem, variant.seed)),
                                   labels=[q.label for q in questions(problem, variant.seed)], typed=typed,
                                   refusal=refusal)
    if variant.answered is not None:
        key = key_of(problem, variant.seed)
        judged = _judged_again(problem, variant)
        memory, _ = space.memory(variant.student)
        context.update(judged=judged, key=key, solution=readable_html(key.solution),
                       mastery=memory.of(problem.id).mastery, topic=problem.topic.split("/")[0])
    return html("practice_variant.html.j2", status, **context)


def _code_page(space: PracticeSpace, session: Session, variant: PracticeVariant, problem: Problem) -> Response:
    """A code problem's page: the form until code is handed in, then the try (waiting: the page looks again by
    itself, templates/refresh.js) and, once graded, its verdicts."""
    code = space.store.code_try(variant.id, variant.student)
    home = space.code[problem.id]
    graded = next(p for p in home.bundle.code if p.id == problem.id)
    context: dict[str, Any] = dict(
        session=session, variant=variant, problem=problem, code=code, most=CODE_CHARS, track=home.bundle.track,
        # the release's prompt: the implement kind's reads no draws (a code problem has no per-student numbers)
        question=readable_html(kind_of(problem).release_prompt(problem, None)),  # type: ignore[arg-type]
        stub=stub_function(problem),
        public=[t.name for t in graded.tests if t.visibility == "public"], topic=problem.topic.split("/")[0],
        refresh=code is not None and code.feedback is None, wait=f"/practice/v/{variant.id}/result")
    if code is not None and code.feedback is not None:
        context["mastery"] = space.memory(variant.student)[0].of(problem.id).mastery
    return html("practice_code.html.j2", **context)


async def held_code_page(request: Request) -> Response:
    """A code try's page, held while the try waits for the sandbox, as an attempt's held look is
    (serve/app/student.py's held_attempt_page): answered once its grading is stored (this process's practice grader
    says so at once, another's is seen within CHECK_S) or after HOLD_S. Whose try it is is checked first, as the page
    checks it: another student's answers at once as the page does (404)."""
    state = state_of(request)
    session = await run_in_threadpool(state.accounts.session, request.cookies.get(SESSION_COOKIE, ""), time.time())
    variant_id = request.path_params["variant"]
    if session is not None and state.practice is not None and session.account.role is Role.STUDENT:
        store, student = state.practice.store, session.account.person
        deadline = time.monotonic() + HOLD_S
        with state.results.watching(variant_id) as told:
            # watched before the first read: a grading stored after that read is told, not missed
            while (left := deadline - time.monotonic()) > 0:
                code = await run_in_threadpool(store.code_try, variant_id, student)
                if code is None or code.feedback is not None:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(told.wait(), min(CHECK_S, left))
    return await variant_page(request)


def _judged_again(problem: Problem, variant: PracticeVariant) -> Judged:
    """The stored answers' verdicts; a problem changed since (the bank rebuilt) so that they no longer read shows
    the stored share alone, never an error."""
    if variant.answers is None:
        return skipped()
    try:
        return judge(problem, variant.seed, variant.answers)
    except Unreadable:
        return Judged((), variant.score or 0.0)


@signed_in(state_of)
def variant_page(request: Request, session: Session, form: Any) -> Response:
    return _variant_page(request, session, {})


@signed_in(state_of)
def answer(request: Request, session: Session, form: Any) -> Response:
    space = space_of(state_of(request))
    variant, problem = space.variant(request.path_params["variant"], _student(session))
    if kind_of(problem).code:
        if variant.answered is None:
            space.hand_in_code(variant, str(form.get("code", "")), time.time())
        return RedirectResponse(f"/practice/v/{variant.id}", status_code=303)
    if variant.answered is None:
        typed = {q.label: str(form.get(f"part-{n}", "")) for n, q in enumerate(questions(problem, variant.seed))}
        try:
            judged = skipped() if form.get("action") == SKIP else judge(problem, variant.seed, typed)
        except Unreadable as why:
            return _variant_page(request, session, typed, str(why), 400)
        space.keep(variant, judged, time.time())
    return RedirectResponse(f"/practice/v/{variant.id}", status_code=303)


@signed_in(state_of)
def progress(request: Request, session: Session, form: Any) -> Response:
    space = space_of(state_of(request))
    student = _student(session)
    summary = _summary(space, student)
    memory = summary["memory"]
    problems = [(p, memory.of(p.id)) for p in space.problems if memory.of(p.id).tries]
    return html("practice_progress.html.j2", session=session, problems=problems,
                recent=list(reversed(space.store.tries(student)))[:20], **summary)


@signed_in(state_of, staff=True)
def class_view(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    space = space_of(state)
    view = space.class_view([s.id for s in state.roster.students] if state.roster else None)
    return html("practice_class.html.j2", session=session, view=view)
