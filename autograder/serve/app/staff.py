"""The course staff's pages: the class table, one student's attempts, the item analysis; for instructors also
regrading, the copying signals and the LMS import files (serve/instructor.py works each of them out)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from autograder.grade.gradebook.accounts import Role, Session
from autograder.serve import instructor
from autograder.serve.app.site import html, signed_in
from autograder.serve.app.state import state_of


@signed_in(state_of, staff=True)
def class_page(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    grader = state.graders.get(a.name)
    return html("class.html.j2", a=a, session=session, view=instructor.class_view(a, state.books[a.name], state.roster),
                late_rule=a.policy.late_terms() if a.bundle.late else "", waiting=state.books[a.name].waiting(), note=state.notes.get(a.name),
                failure=grader.failure if grader else None, instructor=session.account.role is Role.INSTRUCTOR,
                lms_class_list=instructor.lms_class_list(state.lti, a.name))


@signed_in(state_of, staff=True)
def student_page(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    student = request.path_params["student"]
    found = state.roster.by_id(student) if state.roster else None
    due, last = a.dates_of(student, state.roster)
    return html("student.html.j2", a=a, session=session, student=student, name=found.name if found else "",
                due=due, last=last, attempts=state.books[a.name].attempts_of(student), whose=f"{student}'s attempts",
                instructor=session.account.role is Role.INSTRUCTOR)


@signed_in(state_of, staff=True)
def stats(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    return HTMLResponse(instructor.stats_page(a, state.books[a.name]))


@signed_in(state_of, instructor_only=True)
def regrade(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    student = str(form.get("student", "")) or None
    count = state.books[a.name].regrade_attempts(student)
    state.notes[a.name] = f"{count} attempt(s) queued to be graded again"
    state.wake(a.name)
    return RedirectResponse(f"/a/{a.name}/class" + (f"/{student}" if student else ""), status_code=303)


@signed_in(state_of, instructor_only=True)
def copying(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    return HTMLResponse(instructor.copying_page(a, state.books[a.name]))


@signed_in(state_of, instructor_only=True)
def export(request: Request, session: Session, form: Any) -> Response:
    state = state_of(request)
    a = state.assignment(request.path_params["name"])
    name, data = instructor.export(a, state.books[a.name], state.roster, request.path_params["format"])
    return Response(data, media_type="text/csv; charset=utf-8",
                    headers={"content-disposition": f'attachment; filename="{name}"'})
