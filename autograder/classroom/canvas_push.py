"""A live push of grades to Canvas: the gradebook's final scores and comments in, Canvas's submissions API out
(through the `canvasapi` library), or with `dry_run` only the list of changes.

Endpoints (Canvas REST API, docs: canvas.instructure.com/doc/api/submissions.html): GET
`courses/:id`, `courses/:id/assignments/:id` and its `submissions` (the grades Canvas has now), and
POST `courses/:id/assignments/:id/submissions/update_grades` with `grade_data[user id][posted_grade]`
and `[text_comment]` (one asynchronous job; Canvas answers with a Progress). Students are Canvas user
ids (the roster's `canvas_user_id`); a student whose Canvas grade is already the final score is left alone.
The token is read by the caller from the environment, never from the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from autograder.classroom.grade_formats import GradeLine
from autograder.errors import QkvError


@dataclass(frozen=True)
class GradeChange:
    student: str
    user_id: int
    before: Optional[float]  # what Canvas has now (None: no grade)
    after: float
    comment: str


@dataclass(frozen=True)
class PushResult:
    changes: tuple[GradeChange, ...]
    unchanged: int
    not_in_canvas: tuple[str, ...]  # graded students with no canvas_user_id, or one Canvas does not list
    progress: Optional[str] = None  # the Canvas job's id, when pushed


def _canvas_error(where: str, err: Exception) -> QkvError:
    return QkvError(where, f"Canvas answered {type(err).__name__}: {str(err)[:200] or 'no message'}")


def plan(lines: list[GradeLine], current: dict[int, Optional[float]]) -> tuple[list[GradeChange], int, list[str]]:
    """What would change: graded students whose Canvas score differs from their final score."""
    changes, unchanged, missing = [], 0, []
    for line in lines:
        if line.final is None:
            continue
        if not line.lms_id.isdigit() or int(line.lms_id) not in current:
            missing.append(line.student)
            continue
        before = current[int(line.lms_id)]
        if before is not None and abs(before - line.final) < 1e-6:
            unchanged += 1
            continue
        changes.append(GradeChange(line.student, int(line.lms_id), before, round(line.final, 2), line.comment))
    return changes, unchanged, missing


def push(lines: list[GradeLine], url: str, token: str, course_id: int, assignment_id: int, dry_run: bool,
         comments: bool = True) -> PushResult:
    import warnings

    import requests
    from canvasapi import Canvas
    from canvasapi.exceptions import CanvasException

    where = f"{url.rstrip('/')}/courses/{course_id}/assignments/{assignment_id}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # canvasapi warns of http:// and trailing slashes; the URL is the user's
            assignment = Canvas(url, token).get_course(course_id).get_assignment(assignment_id)
            current = {int(s.user_id): (None if s.score is None else float(s.score)) for s in assignment.get_submissions()}
    except CanvasException as err:
        raise _canvas_error(where, err) from None
    except (requests.RequestException, ValueError) as err:
        raise QkvError(where, f"cannot reach Canvas: {str(err)[:200]}") from None
    changes, unchanged, missing = plan(lines, current)
    if dry_run or not changes:
        return PushResult(tuple(changes), unchanged, tuple(missing))
    grade_data = {str(c.user_id): {"posted_grade": f"{c.after:g}", **({"text_comment": c.comment} if comments else {})}
                  for c in changes}
    try:
        progress = assignment.submissions_bulk_update(grade_data=grade_data)
    except CanvasException as err:
        raise _canvas_error(where, err) from None
    except requests.RequestException as err:
        raise QkvError(where, f"cannot reach Canvas: {str(err)[:200]}") from None
    return PushResult(tuple(changes), unchanged, tuple(missing), str(getattr(progress, "id", "")))
