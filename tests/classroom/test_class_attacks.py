"""Attacks on the class's intake (issue 19's round): a classmate's hand-in superseded, an LMS id overruled by
STUDENT_ID, names that read two ways, deadlines moved by what the student controls, one student's zip refusing
the class. One test per mechanism, each on a fixture of tests/fixtures/classroom/attacks.py; they run as root
and again as the unprivileged user (tests/test_as_user.py).
"""

from __future__ import annotations

import datetime as dt

import pytest

from autograder.classroom.collect import BLOCKING, collect
from autograder.classroom.deadlines import apply_policy, policy_from
from autograder.classroom.roster import parse_roster, parse_extension
from fixtures.classroom import attacks as ax
from fixtures.classroom import layouts as fx

PLUS8 = dt.timezone(dt.timedelta(hours=8))
ROSTER = parse_roster(fx.ROSTER, "roster.csv")


def run(path, tmp_path, roster=ROSTER):
    work = tmp_path / "work"
    work.mkdir()
    return collect(path, "attention_numpy", "attention-numpy", roster, work, PLUS8)


def rows_of(intake, student):
    return [r for r in intake.rows if r.student == student]


def counted(intake) -> dict[str, str]:
    """student -> the entry that counts"""
    return dict(intake.sources)


# ------------------------------------------------------------------ identity and sabotage


def test_an_extra_zip_claiming_a_classmate_never_supersedes_her_hand_in(tmp_path):
    intake = run(ax.claims_classmate_zip(tmp_path / "class.zip"), tmp_path)
    assert counted(intake)["s001"] == "doejane_1001_501_attention_numpy.py"
    assert [r.status for r in rows_of(intake, "s001")] == ["graded"]
    extra = next(r for r in intake.rows if r.entry.startswith("libob_1002_503_extra/"))
    # the LMS says it is Bob's: it is his, and the disagreement is a conflict --strict sees
    assert (extra.layout, extra.student, extra.status) == ("canvas", "s002", "conflict")
    assert "STUDENT_ID 's001' says s001" in extra.message and "not graded" in extra.message
    assert counted(intake)["s002"] == "libob_1002_502_attention_numpy.py"
    assert extra in intake.blocking


def test_an_upload_named_just_dot_py_keeps_its_canvas_id(tmp_path):
    intake = run(ax.bare_py_upload_zip(tmp_path / "class.zip"), tmp_path)
    bare = next(r for r in intake.rows if r.entry == "libob_1002_504_.py")
    assert (bare.layout, bare.student, bare.identified_by) == ("canvas", "s002", "Canvas user id '1002'")
    assert bare.status == "conflict" and counted(intake)["s001"] == "doejane_1001_501_attention_numpy.py"


def test_an_lms_id_on_no_roster_row_cannot_claim_a_classmate(tmp_path):
    roster = parse_roster(ax.ROSTER_WITHOUT_BOBS_LMS_ID, "roster.csv")
    intake = run(ax.unknown_account_claims_classmate_zip(tmp_path / "class.zip"), tmp_path, roster)
    claim = next(r for r in intake.rows if r.entry == "libob_1002_505_attention_numpy.py")
    assert (claim.status, claim.student) == ("conflict", "")
    assert "Canvas user id '1002' is on no roster row" in claim.message and "'1001'" in claim.message
    assert claim.status in BLOCKING
    assert counted(intake) == {"s001": "doejane_1001_501_attention_numpy.py"}


def test_a_moodle_full_name_holding_a_classmates_participant_id_stays_its_own(tmp_path):
    roster = parse_roster(ax.MOODLE_ROSTER, "roster.csv")
    intake = run(ax.moodle_name_holds_classmates_id_zip(tmp_path / "class.zip"), tmp_path, roster)
    assert counted(intake)["s001"] == "Jane Doe_88001_assignsubmission_file_/attention_numpy.py"
    bob = next(r for r in intake.rows if r.entry.startswith("Bob_88001"))
    assert (bob.student, bob.identified_by) == ("s002", "Moodle participant id '88002'")


def test_a_moodle_file_name_that_reads_two_ways_is_a_conflict_not_graded(tmp_path):
    roster = parse_roster(ax.MOODLE_ROSTER, "roster.csv")
    intake = run(ax.moodle_flat_file_reads_two_ways_zip(tmp_path / "class.zip"), tmp_path, roster)
    odd = next(r for r in intake.rows if r.entry.startswith("Bob Li_88002"))
    assert (odd.status, odd.student) == ("conflict", "") and "names two students" in odd.message
    assert counted(intake) == {"s001": "Jane Doe_88001_assignsubmission_file_attention_numpy.py"}


def test_github_usernames_that_share_a_prefix_are_each_their_own(tmp_path):
    roster = parse_roster(ax.GITHUB_ROSTER, "roster.csv")
    intake = run(ax.github_shared_prefix(tmp_path / "repos"), tmp_path, roster)
    assert counted(intake) == {"s101": "hw1-alex-kim/attention_numpy.py", "s102": "hw1-alex-lee/attention_numpy.py"}
    assert [r.status for r in rows_of(intake, "s103")] == ["missing"]


def test_a_repository_zipped_into_a_canvas_upload_is_that_students_hand_in(tmp_path):
    intake = run(ax.repo_in_canvas_upload_zip(tmp_path / "class.zip"), tmp_path)
    assert counted(intake) == {"s001": "doejane_1001_506_repo/attention_numpy.py"}
    row = next(r for r in intake.rows if r.student == "s001")
    assert (row.layout, row.status) == ("canvas", "graded")
    assert not list((tmp_path / "work").rglob("config"))  # a student's .git is never written


def test_an_upper_case_suffix_is_graded(tmp_path):
    intake = run(ax.upper_case_suffix_zip(tmp_path / "class.zip"), tmp_path)
    assert counted(intake) == {"s001": "doejane_1001_507_ATTENTION_NUMPY.PY"}
    assert intake.submissions[0].program is not None


@pytest.mark.slow
def test_a_folder_with_more_entries_than_a_students_loses_no_student(tmp_path):
    intake = run(ax.crowded_folder(tmp_path / "subs"), tmp_path)
    assert set(counted(intake)) == {"s002", "s003"}
    assert [r.status for r in rows_of(intake, "s001")] == ["missing"]


# ------------------------------------------------------------------ one student never blocks the class


@pytest.mark.parametrize("build", [ax.project_with_data_zip, ax.project_with_venv_zip])
def test_a_students_large_project_zip_is_their_own_row_not_the_class(tmp_path, build):
    intake = run(build(tmp_path / "class.zip"), tmp_path)
    assert set(counted(intake)) == {"s001", "s002"}
    assert counted(intake)["s001"].endswith("_project/attention_numpy.py")
    passed_over = [r for r in intake.rows if r.status == "skipped" and r.entry.endswith("_project.zip")]
    assert len(passed_over) == 1 and "not extracted" in passed_over[0].message  # one row, not one per file


def test_a_bomb_member_refuses_that_member_not_the_class(tmp_path):
    intake = run(ax.bomb_member_zip(tmp_path / "class.zip"), tmp_path)
    assert counted(intake) == {"s001": "doejane_1001_501_attention_numpy.py"}
    bomb = next(r for r in intake.rows if r.status == "rejected")
    assert bomb.entry.endswith("libob_1002_512_attention_numpy.py") and "(the limit is 200)" in bomb.message


# ------------------------------------------------------------------ deadlines

POLICY = policy_from("2026-12-18T23:59:00+08:00", {"penalty_percent": 10, "per": "day", "cap_percent": 100})


def test_the_time_inside_a_students_zip_never_wins_over_the_lms(tmp_path):
    intake = run(ax.touched_inner_zip(tmp_path / "class.zip"), tmp_path)
    when, source = intake.times["s002"]
    assert when == dt.datetime(2026, 12, 22, 10, 0, tzinfo=PLUS8)
    assert source == "zip entry time of the student's zip"
    late = apply_policy(POLICY, 50.0, 100.0, when, None, source, "s002" in intake.late_marked)
    assert late.penalty == 40.0  # 4 started days late at 10% of 100 points


def test_the_lms_late_marker_is_never_overruled_by_a_time(tmp_path):
    intake = run(ax.late_marker_on_time_stamp_zip(tmp_path / "class.zip"), tmp_path)
    when, source = intake.times["s002"]
    assert when < POLICY.due and "s002" in intake.late_marked
    late = apply_policy(POLICY, 50.0, 100.0, when, None, source, True)
    assert late.penalty == 10.0 and "the LMS marks it LATE" in late.time_source
    assert apply_policy(POLICY, 50.0, 100.0, when, parse_extension("48"), source, True).penalty == 0.0


def test_a_damaged_dos_date_is_no_time_not_the_time_of_unpacking(tmp_path):
    intake = run(ax.damaged_dos_date_zip(tmp_path / "class.zip"), tmp_path)
    when, source = intake.times["s002"]
    assert when is None and "damaged" in source
    assert apply_policy(POLICY, 50.0, 100.0, when, None, source).penalty == 0.0
    bob = next(r for r in intake.rows if r.student == "s002")
    assert bob.submitted_at == "" and "damaged" in bob.time_source


def test_github_classroom_time_is_the_commit_not_the_clone(tmp_path):
    intake = run(fx.github_classroom(tmp_path / "repos"), tmp_path)
    when, source = intake.times["s001"]
    assert when == dt.datetime(2026, 12, 18, 20, 0, tzinfo=PLUS8) and source.startswith("commit time of HEAD")
    assert apply_policy(POLICY, 50.0, 100.0, when, None, source).penalty == 0.0


@pytest.mark.parametrize("extension", ["9999-12-31", "9999-12-31T23:59:59+14:00", "0001-01-01"])
def test_an_extension_at_the_ends_of_the_calendar_is_a_rule_not_a_crash(extension):
    policy = policy_from("2026-12-18T23:59:00+08:00", {"penalty_percent": 10, "last": "2026-12-25"})
    late = apply_policy(policy, 50.0, 100.0, dt.datetime(2026, 12, 20, tzinfo=PLUS8), parse_extension(extension))
    assert late.rule.startswith("on time" if extension.startswith("9999") else "2 days late")
