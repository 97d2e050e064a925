"""Deadlines: the manifest's due date and late policy, a student's extension and submission time in,
a `LateOutcome` (raw score, penalty, final score and the rule that applied) out. Pure functions.

The rules, in order (docs/class.md):
0. the LMS's own LATE marker is never overruled by a time: a hand-in it marks late counts as submitted
   after the due date (a second after it, when its time says otherwise or is unknown);
1. no due date, or no known submission time: no penalty;
2. the student's own due date is the extension's date, or the due date plus its hours (an extension
   never makes it earlier); the last date moves by as much;
3. on or before the student's due date: on time;
4. after the last date (`late.last`): zero;
5. within `grace_minutes` after the due date: on time (within the grace);
6. otherwise each started hour or day (`per`) since the due date costs `penalty_percent` of the
   assignment's points, at most `cap_percent`, and never more than the raw score.
A date without a time means the end of that day; a date or time without a zone is in the due date's zone
(UTC when the due date has none).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping, Optional, overload

from autograder.classroom.roster import Extension
from autograder.late_policy import LatePolicy

UNIT = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}


@dataclass(frozen=True)
class Deadline:
    """The assignment's due date as a moment, with the late policy that applies after it (the bundle's `due` and
    `late`): what the rules below read. The policy's fields and defaults are late_policy.py's alone."""

    due: Optional[dt.datetime] = None
    rules: LatePolicy = LatePolicy()

    @property
    def zone(self) -> dt.tzinfo:
        """The due date's zone, in which a date or time that names none is read (UTC when the due date has none)."""
        return self.due.tzinfo if self.due and self.due.tzinfo else dt.timezone.utc

    @cached_property
    def last(self) -> Optional[dt.datetime]:
        """The last date (`late.last`) as a moment, in the due date's zone when it names none."""
        return as_moment(self.rules.last, self.zone)

    def late_terms(self) -> str:
        """The late rule without its dates, for a page that shows a student's own due and last dates beside it
        (an extension moves both, so the manifest's dates in the rule would contradict them)."""
        rules = self.rules
        parts = [f"{rules.grace_minutes:g} minutes' grace"] if rules.grace_minutes else []
        if rules.penalty_percent:
            parts.append(f"-{rules.penalty_percent:g}% of the points per {rules.per} late"
                         + (f", at most -{rules.cap_percent:g}%" if rules.cap_percent < 100 else ""))
        if self.last:
            parts.append("zero after the last date")
        return "; ".join(parts) or "no penalty"


@dataclass(frozen=True)
class LateOutcome:
    raw: float
    penalty: float
    final: float
    max_score: float
    rule: str
    due: Optional[dt.datetime]  # the student's own
    submitted_at: Optional[dt.datetime]
    time_source: str = ""
    late_seconds: float = 0.0
    extension: str = ""


@overload
def as_moment(value: dt.datetime | dt.date, zone: dt.tzinfo) -> dt.datetime: ...


@overload
def as_moment(value: dt.datetime | dt.date | str | None, zone: dt.tzinfo) -> Optional[dt.datetime]: ...


def as_moment(value: dt.datetime | dt.date | str | None, zone: dt.tzinfo) -> Optional[dt.datetime]:
    """A due date as an aware moment: a bare date is the end of that day, a naive time is in `zone`."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        value = dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
    if not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time(23, 59, 59))
    return value if value.tzinfo else value.replace(tzinfo=zone)


def policy_from(due: str | None, late: LatePolicy | Mapping[str, Any] | None) -> Deadline:
    """The bundle's `due` and `late` as a Deadline (`late` as the bundle holds it, or as its JSON data)."""
    rules = late if isinstance(late, LatePolicy) else LatePolicy.model_validate(dict(late or {}))
    return Deadline(as_moment(due, dt.timezone.utc), rules)


def student_due(policy: Deadline, extension: Optional[Extension]) -> tuple[Optional[dt.datetime], Optional[dt.datetime]]:
    """(the student's due date, the student's last date)."""
    if policy.due is None:
        return None, policy.last
    due = policy.due
    if extension is not None:
        if extension.hours is not None:
            due = policy.due + dt.timedelta(hours=extension.hours)
        elif extension.due is not None:
            due = max(policy.due, as_moment(extension.due, policy.zone))
    shift = due - policy.due
    try:
        return due, (policy.last + shift if policy.last else None)
    except OverflowError:  # an extension to 9999-12-31: no last date left to keep
        return due, None


def _round(x: float) -> float:
    return round(x, 4)


def apply_policy(policy: Deadline, raw: float, max_score: float, submitted_at: Optional[dt.datetime],
                 extension: Optional[Extension] = None, time_source: str = "", lms_late: bool = False) -> LateOutcome:
    due, last = student_due(policy, extension)
    ext = str(extension) if extension else ""
    if lms_late and policy.due is not None and (submitted_at is None or submitted_at <= policy.due):
        submitted_at = policy.due + dt.timedelta(seconds=1)
        time_source = "the LMS marks it LATE" + (f" ({time_source} said on time)" if time_source else "")

    def outcome(penalty: float, rule: str, late_seconds: float = 0.0) -> LateOutcome:
        penalty = _round(min(max(penalty, 0.0), raw))
        return LateOutcome(raw, penalty, _round(raw - penalty), max_score, rule, due, submitted_at, time_source,
                           late_seconds, ext)

    if due is None:
        return outcome(0.0, "no due date")
    if submitted_at is None:
        return outcome(0.0, "no submission time known: no penalty")
    late = (submitted_at - due).total_seconds()
    suffix = " (with the extension)" if extension else ""
    if late <= 0:
        return outcome(0.0, "on time" + suffix)
    if last is not None and submitted_at > last:
        return outcome(raw, f"after the last date {last.isoformat(timespec='minutes')}: zero", late)
    rules = policy.rules
    if late <= rules.grace_minutes * 60:
        return outcome(0.0, f"within the {rules.grace_minutes:g}-minute grace" + suffix, late)
    if not rules.penalty_percent:
        return outcome(0.0, "late, no penalty in the policy", late)
    units = math.ceil(late / UNIT[rules.per].total_seconds())
    percent = units * rules.penalty_percent
    capped = percent >= rules.cap_percent
    percent = min(percent, rules.cap_percent)
    unit = rules.per + ("s" if units != 1 else "")
    rule = f"{units} {unit} late: -{percent:g}% of {max_score:g} points" + (" (the cap)" if capped else "") + suffix
    return outcome(max_score * percent / 100.0, rule, late)
