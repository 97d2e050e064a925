"""Scores to the LMS (Assignment and Grade Services): each counted attempt's final score, after the late penalty,
posted to the assignment's own line item with the link to its feedback page: the `lineitem` a launch of its link
named (the column the instructor made in the LMS), else, for a link that has none (a deep-linked resource without a
column), the one this tool made for it, found by its tag before one is made, so never a second. Every address is
held to the platform's sites before the access token goes to it (adapter.held).

The outbox is the gradebook's (ScoreOutbox): a thread fills it from the counted gradings and posts what is due,
one grading at a time; a failed post (the LMS away, a token refused) is tried again after a back-off that doubles
up to BACKOFF_MOST_S, so nothing is lost while the LMS is down and nothing is sent again once it took a score.
The one gap: a process killed between the LMS's answer and the row marked sent posts that score once more on
restart, with the same timestamp, which AGS platforms take as the same score.

The written-answer policy (grade/written_policy.py) holds scores back: under `hidden`, a score posted while hand-in
is open would tell a student, attempt by attempt, which fixed written items are right (the LMS shows it at once). So
until hand-in has closed for everyone (every student's last date, extensions included: serve/course.py's
closed_for_all) a score waits in the outbox, unsent, looked at again every HELD_RECHECK_S (an extension or a
roster sync may move the close); then each counted grading is posted whole, `FullyGraded`, with the
time it was graded, as any other: the LMS keeps the latest. Nothing is posted before, not even a score marked
`Pending`: AGS calls such a score partial, which some platforms show as it is (Canvas ignores it).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any, Callable, Mapping, Optional

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector

from autograder.classroom.roster import Roster
from autograder.grade.gradebook.lti import QueuedScore
from autograder.grade.written_policy import hides
from autograder.serve.course import closed_for_all
from autograder.serve.lti.adapter import held, platform_session, service_pages
from autograder.serve.lti.background import BackgroundLoop

POLL_S = 1.0
BACKOFF_FIRST_S = 2.0
BACKOFF_MOST_S = 300.0
UNLINKED_S = 60.0  # a student who never launched from the LMS: looked for again this often
HELD_RECHECK_S = 60.0  # a score the written-answer policy holds: whether hand-in has closed, looked at this often
HELD = "held until hand-in closes for everyone: the written-answer policy hides which written answers are right"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MOST_PAGES = 50  # line item pages looked through for the tool's own before one is made


def backoff(tries: int) -> float:
    return min(BACKOFF_MOST_S, BACKOFF_FIRST_S * 2 ** max(0, tries - 1))


def held_until(a: Any, roster: Optional[Roster], now: float) -> Optional[float]:
    """When to look again at a score of served assignment `a` that the written-answer policy holds back at `now`,
    or None when it may be posted."""
    closed = closed_for_all(a, roster, dt.datetime.fromtimestamp(now, dt.timezone.utc))
    return now + HELD_RECHECK_S if hides(a.bundle.written_attempts, a.bundle, closed) else None


class ScorePoster(BackgroundLoop):
    """Posts every served assignment's counted scores in a thread of its own until `stop`."""

    thread_name = "qkv-lti-scores"

    def __init__(self, tool: Any, assignments: Mapping[str, Any], books: Mapping[str, Any],
                 report: Callable[[str], None] = lambda line: None, roster: Optional[Roster] = None):
        super().__init__()
        self.tool, self.assignments, self.books, self._report = tool, assignments, books, report
        self.roster = roster  # the class's (a sync updates it in place): whose extensions keep hand-in open
        self._wake = threading.Event()
        self._connectors: dict[str, ServiceConnector] = {}  # by issuer: each keeps its access token

    def wake(self) -> None:
        self._wake.set()

    def _interrupt(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, book in self.books.items():
                try:
                    book.queue_counted(time.time())
                    for queued in book.due_scores(time.time()):
                        if self._stop.is_set():
                            return
                        self._post(name, book, queued)
                except Exception as err:  # the database away: the outbox waits in it, tried on the next round
                    self._report(f"LTI scores of {name}: {type(err).__name__}: {err}")
            self._wake.wait(POLL_S)
            self._wake.clear()

    def _post(self, name: str, book: Any, queued: QueuedScore) -> None:
        until = held_until(self.assignments[name], self.roster, time.time())
        if until is not None:
            book.score_later(queued.grading, until, HELD, tried=False)
            return
        person = self.tool.store.person(queued.student)
        if person is None or not (person.grades.get("lineitems") or self.tool.store.lineitem(name, person.issuer)):
            book.score_later(queued.grading, time.time() + UNLINKED_S,
                             "the student has not opened the assignment from the LMS yet", tried=False)
            return
        try:
            platform = self.tool.settings.platform(person.issuer)
            if platform is None:
                raise LtiException(f"course.yaml no longer lists the platform {person.issuer[:200]!r}")
            connector = self._connector(person.issuer)
            lineitem = self._lineitem(name, platform, connector, person.grades, queued.max_score)
            held(lineitem.get_id(), platform)
            AssignmentsGradesService(connector, person.grades).put_grade(self._grade(name, queued, person.sub),
                                                                         lineitem)
        except Exception as err:
            self._connectors.pop(person.issuer, None)  # its access token may be what the LMS refused
            if isinstance(err, LtiServiceException) and err.response.status_code == 404:
                self.tool.store.forget_lineitem(name, person.issuer)  # deleted at the LMS: found or made anew
            tries = queued.tries + 1
            book.score_later(queued.grading, time.time() + backoff(tries), f"{type(err).__name__}: {err}")
            self._report(f"LTI score of {name} attempt {queued.attempt} not posted (try {tries}): {err}")
            return
        book.score_sent(queued.grading, time.time())

    def _connector(self, issuer: str) -> ServiceConnector:
        if issuer not in self._connectors:
            registration = self.tool.tool_config().find_registration_by_issuer(issuer)
            self._connectors[issuer] = ServiceConnector(registration, platform_session())
        return self._connectors[issuer]

    def _lineitem(self, name: str, platform: Any, connector: ServiceConnector, claim: dict, most: float) -> LineItem:
        """The assignment's column: the launch's, else the one made for it (found by tag, else made once)."""
        known = self.tool.store.lineitem(name, platform.issuer)
        if known:
            return LineItem({"id": known})
        container = held(claim.get("lineitems"), platform)
        for page in service_pages(connector, platform, container, [LINEITEM_SCOPE], LINEITEMS_TYPE, MOST_PAGES):
            for item in page if isinstance(page, list) else []:
                if isinstance(item, dict) and item.get("tag") == name and isinstance(item.get("id"), str):
                    self.tool.store.keep_lineitem(name, platform.issuer, item["id"])
                    return LineItem({"id": item["id"]})
        made = LineItem().set_tag(name).set_resource_id(name).set_score_maximum(most).set_label(
            self.assignments[name].bundle.title)
        answer = connector.make_service_request([LINEITEM_SCOPE], container, is_post=True,
                                                data=made.get_value(), content_type=LINEITEM_TYPE,
                                                accept=LINEITEM_TYPE)
        body = answer.get("body")
        column = body.get("id") if isinstance(body, dict) else None
        if not isinstance(column, str):
            raise LtiException("the LMS made the line item but named no id for it")
        self.tool.store.keep_lineitem(name, platform.issuer, held(column, platform))
        return LineItem({"id": column})  # the score post reads the column's id only

    def _grade(self, name: str, queued: QueuedScore, sub: str) -> Grade:
        when = dt.datetime.fromtimestamp(queued.graded_at, dt.timezone.utc).isoformat(timespec="milliseconds")
        feedback = f"{self.tool.settings.tool_url}/a/{name}/attempts/{queued.attempt}/feedback"
        return (Grade().set_score_given(queued.final).set_score_maximum(queued.max_score).set_timestamp(when)
                .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_user_id(sub)
                .set_comment(feedback))
