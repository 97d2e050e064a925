"""Late policy: each case of the manifest's policy and the roster's extensions, as a table of raw, penalty and
final score with the rule that applied; and the policy's place in the manifest and the bundle."""

from __future__ import annotations

import datetime as dt

import pytest

from autograder.assemble.manifest import parse_manifest
from autograder.classroom.deadlines import apply_policy, policy_from
from autograder.late_policy import LatePolicy
from autograder.classroom.roster import Extension
from autograder.errors import QkvError

Z = dt.timezone(dt.timedelta(hours=8))
POLICY = policy_from("2026-12-18T23:59:00+08:00", {"grace_minutes": 15, "penalty_percent": 10, "per": "day",
                                                  "cap_percent": 50, "last": "2026-12-25T23:59:00+08:00"})


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 12, day, hour, minute, tzinfo=Z)


@pytest.mark.parametrize("case, raw, submitted, extension, penalty, final, rule", [
    ("on time", 70, at(18, 20), None, 0, 70, "on time"),
    ("on the minute", 70, at(18, 23, 59), None, 0, 70, "on time"),
    ("within grace", 70, at(19, 0, 10), None, 0, 70, "within the 15-minute grace"),
    ("just past grace", 70, at(19, 0, 15) + dt.timedelta(seconds=1), None, 8, 62, "1 day late: -10% of 80 points"),
    ("1.5 days late", 70, at(20, 11, 59), None, 16, 54, "2 days late: -20% of 80 points"),
    ("past the cap", 70, at(24, 23), None, 40, 30, "6 days late: -50% of 80 points (the cap)"),
    ("after the last date", 70, at(26, 0, 30), None, 70, 0, "after the last date 2026-12-25T23:59+08:00: zero"),
    ("with an extension", 70, at(20, 11, 59), Extension(hours=48), 0, 70, "on time (with the extension)"),
    ("late past an extension", 70, at(20, 1), Extension(hours=24), 8, 62,
     "1 day late: -10% of 80 points (with the extension)"),
    ("an extension to a date", 70, at(22, 12), Extension(due=dt.date(2026, 12, 21)), 8, 62,
     "1 day late: -10% of 80 points (with the extension)"),
    ("an extension moves the last date", 70, at(27, 12), Extension(hours=48), 40, 30,
     "7 days late: -50% of 80 points (the cap) (with the extension)"),  # not zero: the last date moved too
    ("an earlier 'extension' never shortens", 70, at(18, 22), Extension(due=dt.date(2026, 12, 1)), 0, 70,
     "on time (with the extension)"),
    ("never more than the raw score", 5, at(24, 23), None, 5, 0, "6 days late: -50% of 80 points (the cap)"),
    ("no submission time", 70, None, None, 0, 70, "no submission time known: no penalty"),
])
def test_late_policy_table(case, raw, submitted, extension, penalty, final, rule):
    outcome = apply_policy(POLICY, raw, 80, submitted, extension)
    assert (outcome.raw, outcome.penalty, outcome.final, outcome.rule) == (raw, penalty, final, rule), case


def test_per_hour_and_no_due_date():
    hourly = policy_from("2026-12-18T23:59:00+08:00", {"penalty_percent": 5, "per": "hour"})
    outcome = apply_policy(hourly, 40, 40, at(19, 1, 29))  # 90 minutes: two started hours
    assert (outcome.penalty, outcome.rule) == (4, "2 hours late: -10% of 40 points")
    assert apply_policy(policy_from(None, None), 40, 40, at(30, 0)).rule == "no due date"


def test_dates_and_naive_times_read_in_the_due_dates_zone():
    policy = policy_from("2026-12-18", {"last": "2026-12-20T12:00"})
    assert policy.due == dt.datetime(2026, 12, 18, 23, 59, 59, tzinfo=dt.timezone.utc)  # a date: its end
    zoned = policy_from("2026-12-18T23:59:00+08:00", {"last": "2026-12-20T12:00"})
    assert zoned.last == dt.datetime(2026, 12, 20, 12, tzinfo=Z)
    outcome = apply_policy(zoned, 10, 10, at(19, 10), Extension(due=dt.datetime(2026, 12, 19, 12, 0)))
    assert outcome.due == dt.datetime(2026, 12, 19, 12, tzinfo=Z) and outcome.rule.startswith("on time")


def write(tmp_path, text: str):
    path = tmp_path / "a.yaml"
    path.write_text("title: Late test\ntrack: numpy\nseed: 1\nproblems: [softmax-rows]\n" + text)
    return path


def test_the_manifest_checks_its_late_policy(tmp_path):
    manifest = parse_manifest(write(tmp_path, "due: 2026-12-18T23:59:00+08:00\n"
                                              "late: {grace_minutes: 5, penalty_percent: 2.5, per: hour}\n"))
    assert manifest.late.penalty_percent == 2.5 and manifest.late.cap_percent == 100
    for text, said in (("late: {penalty_percent: 10}\n", "a late policy needs a due date"),
                       ("due: 2026-12-18\nlate: {last: 2026-12-01}\n", "the last date is before the due date"),
                       ("due: 2026-12-18\nlate: {penalty_percent: 120}\n", "late.penalty_percent"),
                       ("due: 2026-12-18\nlate: {per: week}\n", "late.per"),
                       ("due: 2026-12-18\nlate: {penalty: 10}\n", "late.penalty")):
        with pytest.raises(QkvError, match=said):
            parse_manifest(write(tmp_path, text))


def test_the_bundle_carries_the_late_policy(built_numpy):
    from autograder.bundle import read_bundle

    bundle = read_bundle(built_numpy.out / "autograder")
    assert bundle.late == LatePolicy(grace_minutes=15, penalty_percent=10, per="day", cap_percent=50,
                                     last=dt.datetime(2026, 12, 25, 23, 59, tzinfo=Z))
    assert bundle.late.to_json() == {"grace_minutes": 15.0, "penalty_percent": 10.0, "per": "day", "cap_percent": 50.0,
                                     "last": "2026-12-25T23:59:00+08:00"}  # as assignment.json holds it
    assert policy_from(bundle.due, bundle.late).last == dt.datetime(2026, 12, 25, 23, 59, tzinfo=Z)


def test_one_late_policy_type_with_its_defaults_in_one_place():
    """The manifest, the bundle and the gradebook share late_policy.py's LatePolicy; a bare date written as text
    (a quoted YAML date, or the bundle's JSON) is the end of that day, as a YAML date is, never midnight."""
    from autograder.assemble import manifest
    from autograder.bundle import GradingBundle
    from autograder.grade.gradebook.records import LateRules

    assert manifest.LatePolicy is LatePolicy
    assert GradingBundle.__dataclass_fields__["late"].type == "LatePolicy | None"
    assert LateRules.__dataclass_fields__["late"].type == "Optional[LatePolicy]"
    assert policy_from("2026-12-18", None).rules == LatePolicy() == LatePolicy.model_validate(LatePolicy().to_json())
    as_text = policy_from("2026-12-18", {"last": "2026-12-20"})
    assert as_text.rules.last == dt.date(2026, 12, 20)
    assert as_text.last == dt.datetime(2026, 12, 20, 23, 59, 59, tzinfo=dt.timezone.utc)
