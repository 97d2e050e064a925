"""The service's pages: Jinja2 templates (autoescaped) in templates/, and the words for times and scores."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from jinja2 import Environment, FileSystemLoader, select_autoescape

from autograder.classroom.grade_formats import GRADE_FORMATS
from autograder.grade.gradebook.records import Attempt, AttemptState
from autograder.page_style import page_style

_ENV = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                   autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
_ENV.globals["page_style"] = page_style()
_ENV.globals["export_formats"] = tuple(GRADE_FORMATS.values())  # the class page links each registered export


def when(moment: Optional[dt.datetime | float]) -> str:
    """A moment as the pages write it: in UTC always, so an attempt's time and a due date the manifest gave in
    another zone read on one clock."""
    if moment is None:
        return "none"
    if isinstance(moment, (int, float)):
        moment = dt.datetime.fromtimestamp(moment, dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def points(value: Optional[float]) -> str:
    return "" if value is None else f"{value:g}"


_ENV.filters["when"] = when
_ENV.filters["points"] = points


FIRST_LOOK_S = 0.25  # an attempt graded at once (one alone takes some 0.05 s) shows a quarter second after its upload
LONGEST_LOOK_S = 3.0  # a queue's attempts are looked at no more often than this


def next_look_s(waited_s: float) -> float:
    """Seconds until a pending attempt's page looks again (its `data-refresh`, which templates/refresh.js and the
    service's benchmark obey), given how long the attempt has waited: half that, so a score stays unseen for at most
    half the time it took to grade, between FIRST_LOOK_S and LONGEST_LOOK_S. A waiting attempt's page is loaded 7
    times in its first 3 s (the first view and 6 looks), then once every 3 s (some 0.6 ms of the server's CPU each)."""
    return min(LONGEST_LOOK_S, max(FIRST_LOOK_S, waited_s / 2))


@dataclass(frozen=True)
class AttemptView:
    """What an attempt's page needs besides the attempt: when to look again while it waits (None once graded), and
    whether it shows the one line a failed grading gives (which means reading that grading's whole result)."""

    refresh: Optional[float]
    shows_failure: bool


def attempt_view(attempt: Attempt, now: float) -> AttemptView:
    """By the attempt's state, as the template shows it: an attempt queued again (a regrade, a rebuilt course)
    waits, though it keeps its last grading, and shows none of that grading until it is graded anew."""
    if attempt.state is not AttemptState.GRADED:
        return AttemptView(next_look_s(now - attempt.received_at), False)
    return AttemptView(None, attempt.grading is not None and attempt.status != "graded")


def page(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(**context)


class Refusal(Exception):
    """A request the service says no to, with the status and the one sentence the page shows."""

    def __init__(self, status: int, message: str, heading: str = "Not possible"):
        super().__init__(message)
        self.status, self.message, self.heading = status, message, heading
