"""One upload, checked and stored as an attempt, or refused in one sentence: the browser's form and
`qkv_check.py --submit` both come here.

The checks, in order: the student's last date (the late policy's `last`, moved by their extension),
the upload's size, its file name, intake's own guards on the bytes (encoding, notebook bounds: a file
that could not be graded is refused, not counted), then the attempt limits, which the gradebook
counts in the same transaction that stores the attempt.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from autograder.classroom.roster import Roster
from autograder.grade.gradebook import Gradebook, NewAttempt
from autograder.grade.intake import submission_from_bytes
from autograder.serve.course import ServedAssignment
from autograder.serve.guard import clean_filename


@dataclass(frozen=True)
class Accepted:
    attempt_id: str


@dataclass(frozen=True)
class Refused:
    status: int  # the HTTP status that says it
    reason: str


def hand_in(assignment: ServedAssignment, book: Gradebook, roster: Optional[Roster], student: str,
            filename: str, body: bytes, now: float, attempt_id: Optional[str] = None,
            size: Optional[int] = None) -> Union[Accepted, Refused]:
    """`attempt_id`: one the caller derives, so that handing the same thing in twice stores it once (the hub's
    exchange after a restart); a new random one by default. `size`: the upload's whole size when `body` holds only
    its first bytes (past the limit nothing more is kept, but the refusal states the size that was sent)."""
    _, last = assignment.dates_of(student, roster)
    if last is not None and dt.datetime.fromtimestamp(now, dt.timezone.utc) > last:
        return Refused(403, f"the last date for handing in {assignment.name} was {last.isoformat()}; "
                            "nothing handed in now can count")
    limit = assignment.settings.upload_kb * 1024
    sent = max(len(body), size or 0)
    if sent > limit:
        return Refused(413, f"the file is {sent:,} bytes; the most this assignment takes is {limit:,}")
    name, why = clean_filename(filename)
    if name is None:
        return Refused(400, why)
    submission = submission_from_bytes(student, Path(name), body)
    if submission.program is None:
        return Refused(400, f"{submission.message}; it was not counted as an attempt")
    attempt_id = attempt_id or secrets.token_urlsafe(16)
    refused = book.accept(NewAttempt(attempt_id, student, now, name, hashlib.sha256(body).hexdigest(), body),
                          assignment.settings.attempts, assignment.settings.attempts_per_hour)
    if refused:
        return Refused(429, refused)
    return Accepted(attempt_id)
