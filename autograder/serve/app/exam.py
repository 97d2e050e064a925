"""Timed mock exams in the service (/exams, when course.yaml has an `exams:` section; serve/exams.py keeps the rules).

A student: the exams offered (window, their time), a start form, their paper (their own numbers, the time left by
the server's clock, the answers they saved), an item's answers saved by a form (kept before the reply; after the end
refused in one line) and handing in early; once the marks may be shown, their verdicts, keys and worked solutions.
Staff: each exam's live progress, and its scores once the window has closed. A sitting is found through the signed-in
student: another's id is "no such exam paper", as a made-up one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from autograder.exam.markup import readable_html
from autograder.grade.gradebook.accounts import Role, Session
from autograder.grade.gradebook.exams import Sitting
from autograder.report.spreadsheet import csv_text
from autograder.practice.answers import Unreadable, key_of, question_markdown, questions, readable
from autograder.serve.app.site import html, signed_in
from autograder.serve.app.state import ServiceState, state_of
from autograder.serve.exams import ExamRooms, MockExam, when
from autograder.serve.pages import Refusal

HAND_IN = "hand-in"
# the paper's countdown, a file of its own as the service's policy allows no inline script (serve/guard.py's CSP)
COUNTDOWN_SCRIPT = (Path(__file__).parent.parent / "templates" / "countdown.js").read_bytes()


def rooms_of(state: ServiceState) -> ExamRooms:
    if state.exams is None:
        raise Refusal(404, "this course offers no exam", "Not found")
    return state.exams


def _student(session: Session) -> str:
    if session.account.role is not Role.STUDENT:
        raise Refusal(403, "exams are sat by students; staff see each exam's progress on /exams", "Refused")
    return session.account.person


async def countdown_script(request: Request) -> Response:
    return Response(COUNTDOWN_SCRIPT, media_type="text/javascript; charset=utf-8")


@signed_in(state_of)
def exams_home(request: Request, session: Session, form: Any) -> Response:
    rooms = rooms_of(state_of(request))
    staff = session.account.role.sees_class
    listed = [(exam, None if staff else rooms.store.of(exam.name, session.account.person),
               None if staff else rooms.minutes(exam, session.account.person)) for exam in rooms.exams.values()]
    return html("exams.html.j2", session=session, listed=listed, staff=staff, now=rooms.clock(), when=when)


@signed_in(state_of)
def start(request: Request, session: Session, form: Any) -> Response:
    rooms = rooms_of(state_of(request))
    sitting = rooms.start(rooms.exam(request.path_params["name"]), _student(session), rooms.clock())
    return RedirectResponse(f"/exams/s/{sitting.id}", status_code=303)


def _paper(request: Request, session: Session, refusal: str = "", typed: tuple[int, dict[str, str]] | None = None,
           status: int = 200) -> Response:
    rooms = rooms_of(state_of(request))
    sitting, exam = rooms.sitting(request.path_params["sitting"], _student(session))
    now = rooms.clock()
    saved = rooms.store.answers(sitting.id)
    if typed is not None:
        saved[typed[0]] = typed[1]
    seed, student = exam.settings.seed, sitting.student
    items = [dict(number=n, problem=p, question=readable_html(question_markdown(p, seed, student)),
                  labels=[q.label for q in questions(p, seed, student)], saved=saved.get(n, {}))
             for n, p in enumerate(exam.problems, 1)]
    context: dict[str, Any] = dict(session=session, exam=exam, sitting=sitting, items=items, refusal=refusal,
                                   running=not sitting.over(now), left=max(0, int(sitting.ends - now)), when=when,
                                   marked=None)
    if sitting.over(now) and exam.marks_shown(sitting, now):
        marked = rooms.mark(exam, sitting)
        for item, mark in zip(items, marked):
            key = key_of(mark.problem, seed, student)
            item.update(mark=mark, key=key, solution=readable_html(key.solution))
        context["marked"] = sum(m.points for m in marked)
    return html("exam_paper.html.j2", status, **context)


@signed_in(state_of)
def paper(request: Request, session: Session, form: Any) -> Response:
    return _paper(request, session)


def _late(sitting: Sitting) -> Refusal:
    ended = "you handed it in" if sitting.handed_in is not None else "time was up"
    return Refusal(409, f"this exam ended at {when(sitting.ended())} ({ended}): the answer was not saved", "Too late")


@signed_in(state_of)
def save(request: Request, session: Session, form: Any) -> Response:
    rooms = rooms_of(state_of(request))
    sitting, exam = rooms.sitting(request.path_params["sitting"], _student(session))
    now = rooms.clock()
    if sitting.over(now):
        raise _late(sitting)
    if form.get("action") == HAND_IN:
        if not rooms.store.hand_in(sitting.id, sitting.student, now):
            raise _late(sitting)
        return RedirectResponse(f"/exams/s/{sitting.id}", status_code=303)
    try:
        number = int(str(form.get("item", "")))
    except ValueError:
        number = 0
    if not 1 <= number <= len(exam.problems):
        raise Refusal(400, "no such item on this paper", "Not saved")
    asked = questions(exam.problems[number - 1], exam.settings.seed, sitting.student)
    typed = {q.label: str(form.get(f"part-{n}", "")).strip() for n, q in enumerate(asked)}
    try:
        for question in asked:
            if typed[question.label]:
                readable(question, typed[question.label])
    except Unreadable as why:
        return _paper(request, session, f"item {number}: {why}; not saved", (number, typed), 400)
    if not rooms.store.save(sitting.id, sitting.student, number, typed, now):
        raise _late(sitting)
    return RedirectResponse(f"/exams/s/{sitting.id}#item-{number}", status_code=303)


@signed_in(state_of, staff=True)
def class_view(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    rooms = rooms_of(state)
    exam: MockExam = rooms.exam(request.path_params["name"])
    now = rooms.clock()
    students = [s.id for s in state.roster.students] if state.roster else []
    closed = now >= exam.closes
    return html("exam_class.html.j2", session=session, exam=exam, rows=rooms.progress(exam, students, now),
                closed=closed, when=when, analysis=rooms.analysis(exam) if closed else None)


@signed_in(state_of, staff=True)
def scores_csv(request: Request, session: Session, form: Any) -> Response:
    """The scores, one row a sitting (each item's points, the total), once the window has closed."""
    rooms = rooms_of(state_of(request))
    exam = rooms.exam(request.path_params["name"])
    if rooms.clock() < exam.closes:
        raise Refusal(409, f"the scores are given when the window closes, at {when(exam.closes)}", "Not yet")
    # through the one CSV rule: a student id or a problem id may start like a spreadsheet formula
    rows: list[list[str]] = [["student", "started", "ended", *(f"{n}. {p.id}" for n, p in enumerate(exam.problems, 1)),
                              "total", "points"]]
    for sitting, marks in rooms.marked(exam):
        rows.append([sitting.student, when(sitting.started), when(sitting.ended()),
                     *(f"{m.points:g}" for m in marks), f"{sum(m.points for m in marks):g}", f"{exam.points:g}"])
    return Response(csv_text(rows), media_type="text/csv; charset=utf-8", headers={
        "content-disposition": f'attachment; filename="{exam.name}-scores.csv"', "cache-control": "no-store"})
