"""The LMS's class list pulled on a schedule inside `qkv serve`: every `sync_hours` (course.yaml's `lti:`, or
`--lti-sync-hours`), each served assignment's roster sync runs as `qkv lti sync` runs it (members.pull), its
differences kept in the history; the roster is never changed.

A pull that fails (the LMS away, an answer that is not a class list, no launch from the LMS yet) is one line in
the service's log and is tried again at the next round: the service serves on. A line is written when it differs
from the assignment's last one, so an LMS away for a week, or a class list that does not change, says it once.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

from pydantic import ValidationError

from autograder.classroom.roster import Roster
from autograder.course.lti_settings import LtiSettings
from autograder.errors import QkvError
from autograder.serve.lti.background import BackgroundLoop
from autograder.serve.lti.members import pull

HOUR_S = 3600.0
# the first round comes this long after the start (or a period, if shorter): an LMS's token endpoint may fetch
# the tool's key set, which the service serves only once it listens
FIRST_S = 60.0


def sync_period(settings: Optional[LtiSettings], hours: Optional[float]) -> float:
    """Seconds between pulls (0: none): `--lti-sync-hours` when given, checked as course.yaml's `sync_hours` is
    (the same field), else that setting."""
    if hours is None:
        return settings.sync_hours * HOUR_S if settings is not None else 0.0
    if settings is None:
        raise QkvError("--lti-sync-hours", "the course has no `lti:` section in course.yaml (docs/lti.md)")
    try:
        checked = LtiSettings.model_validate({**settings.model_dump(), "sync_hours": hours})
    except ValidationError as err:
        raise QkvError("--lti-sync-hours", err.errors()[0]["msg"]) from None
    return checked.sync_hours * HOUR_S


class RosterPuller(BackgroundLoop):
    """Pulls each assignment's class list every `period_s` in a thread of its own until `stop`."""

    thread_name = "qkv-lti-roster"

    def __init__(self, tool: Any, names: Sequence[str], roster: Optional[Roster], period_s: float,
                 report: Callable[[str], None] = lambda line: None):
        super().__init__()
        self.tool, self.names, self.roster, self.period_s, self._report = tool, tuple(names), roster, period_s, report
        self._said: dict[str, str] = {}

    def _run(self) -> None:
        wait = min(FIRST_S, self.period_s)
        while not self._stop.wait(wait):
            for name in self.names:
                if self._stop.is_set():
                    return
                self._say(name, self._pull(name))
            wait = self.period_s

    def _pull(self, name: str) -> str:
        try:
            done = pull(self.tool, name, self.roster, time.time())
        except Exception as err:  # the database away as much as the LMS: the thread must outlive both
            said = str(err) if isinstance(err, QkvError) else f"{type(err).__name__}: {err}"
            return f"LTI class list of {name} not pulled (tried again in {self.period_s / HOUR_S:g} h): " \
                   f"{(said.splitlines() or [''])[0][:500]}"
        return f"LTI class list of {name} pulled: {done.diff.summary()} (kept in the history)"

    def _say(self, name: str, line: str) -> None:
        if self._said.get(name) != line:
            self._said[name] = line
            self._report(line)
