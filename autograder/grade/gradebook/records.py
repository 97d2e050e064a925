"""What goes into the gradebook and what comes out: small frozen records, never the database's rows.

They hold plain values (text, numbers, times, decoded JSON), so a second backend gives the same
records; the class's own types (the roster, late outcomes) are built from them in
classroom/classbook.py, which may import this layer, not the other way round.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from autograder.late_policy import LatePolicy

TestKey = tuple[str, str]  # (problem id, test name)


def moment(text: Optional[str]) -> Optional[dt.datetime]:
    """A time the gradebook stores as ISO 8601 text, or None."""
    return dt.datetime.fromisoformat(text) if text else None


class Counting(enum.Enum):
    """Which of a student's attempts counts (the manifest's `serve.counts`)."""

    LATEST = "latest"
    BEST = "best"


@dataclass(frozen=True)
class GradingContext:
    """What intake knew about the graded file, kept with the grading."""

    source: str = ""  # where in SUBMISSIONS, as shown
    submitted_at: str | None = None  # ISO 8601
    time_source: str = ""  # "Gradescope metadata", "zip entry time", "file mtime", ...
    late_marked: bool = False  # the LMS marks the hand-in LATE, whatever its time says


@dataclass(frozen=True)
class Grading:
    """One grading of one student, as kept for the history."""

    id: int
    student: str
    digest: str
    graded_at: float
    bundle: str
    status: str
    score: float
    max_score: float
    source: str
    submitted_at: Optional[str]  # ISO 8601, as intake wrote it
    time_source: str
    late_marked: bool
    tests: dict[TestKey, tuple[float, float, bool]]  # (score, max, passed)

    @property
    def handed_in(self) -> Optional[dt.datetime]:
        return moment(self.submitted_at)


@dataclass(frozen=True)
class HandIn:
    """When a student's latest grading was handed in, and how that is known."""

    submitted_at: Optional[dt.datetime]
    time_source: str
    late_marked: bool


@dataclass(frozen=True)
class LatestGrading:
    """A student's latest grading, for the item analysis."""

    id: int
    student: str
    status: str
    bundle: str
    answers: dict[str, Any]  # problem -> the answer as handed in ({} when unreadable)


@dataclass(frozen=True)
class ScoreTable:
    """Test scores of the latest gradings that ran (status `graded`): one row per grading, in id order."""

    gradings: tuple[LatestGrading, ...]  # those rows
    columns: tuple[tuple[str, str, str], ...]  # (problem, test, visibility) per column
    maxima: np.ndarray  # columns
    scores: np.ndarray  # gradings x columns: points earned (0 where a grading had no such test)
    excluded: int  # latest gradings that did not run


class MistakeHit(NamedTuple):
    """A test of a latest grading that ran whose failure matched a named mistake (a class has tens of thousands:
    a named tuple is made from the row at C speed, where a dataclass would cost more than the query)."""

    grading: int
    problem: str
    misconception: str  # "upstream/mistake" when it is a mistake of a problem built on
    points_lost: float


@dataclass(frozen=True)
class StoredSubmission:
    """A student's latest grading, as the exports read it."""

    student: str
    status: str
    score: float
    max_score: float
    result: dict[str, Any]  # the SubmissionResult as JSON data


@dataclass(frozen=True)
class RosterEntry:
    """A roster line as a run used it; `extension` as the roster wrote it, `extra` its other columns."""

    id: str
    name: str
    email: str
    lms_id: str
    section: str
    extension: str
    extra: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class LateEntry:
    """A student's late outcome as the last run worked it out (classroom/deadlines.py's LateOutcome)."""

    student: str
    due: Optional[dt.datetime]
    submitted_at: Optional[dt.datetime]
    time_source: str
    late_seconds: float
    raw: float
    penalty: float
    final: float
    max_score: float
    rule: str
    extension: str


@dataclass(frozen=True)
class CountedLate:
    """A student's counted grading, when it was handed in, and the late outcome kept with it (None: a grading of
    before the grading service kept one; grade/service.py works it out then)."""

    grading: int
    student: str
    score: float
    max_score: float
    hand_in: HandIn
    late: Optional[LateEntry]


@dataclass(frozen=True)
class LateRules:
    """The assignment's due date and late policy as the bundle holds them, for the history."""

    due: Optional[str] = None
    late: Optional[LatePolicy] = None


class AttemptState(enum.Enum):
    """An attempt's life: accepted and waiting, taken by a grader (who renews its claim), graded once."""

    QUEUED = "queued"
    GRADING = "grading"
    GRADED = "graded"


@dataclass(frozen=True)
class NewAttempt:
    """A file `qkv serve` accepted, to be stored before the student is answered."""

    id: str  # unguessable: the service's pages and files are named by it
    student: str
    received_at: float  # seconds since the epoch, the server's clock
    filename: str  # cleaned: a plain name ending .py or .ipynb
    digest: str
    body: bytes


@dataclass(frozen=True)
class Attempt:
    """An attempt as the service shows it; the score fields are set once it is graded."""

    id: str
    student: str
    received_at: float
    filename: str
    digest: str
    state: AttemptState
    grading: Optional[int] = None
    status: Optional[str] = None
    score: Optional[float] = None
    max_score: Optional[float] = None
    final: Optional[float] = None
    counted: bool = False
    seed: Optional[int] = None  # its seed of fresh numbers (grade/written_policy.py); None: the assignment's
    shown: Optional[float] = None  # the score its student is shown before hand-in closes; None: `score`

    @property
    def received(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.received_at, dt.timezone.utc)
