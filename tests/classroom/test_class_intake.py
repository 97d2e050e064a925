"""The class's intake: every LMS layout and every identity case gives the row it must, and hostile zips,
metadata and rosters are refused one file at a time (or, for a whole zip, with one line), never written outside.

Fixtures are built by tests/fixtures/classroom/layouts.py the way each platform names its download.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.classroom.collect import collect
from autograder.classroom.roster import Extension, IdKind, load_roster, parse_roster
from autograder.errors import QkvError
from fixtures.classroom import layouts as fx

PLUS8 = dt.timezone(dt.timedelta(hours=8))
ROSTER = parse_roster(fx.ROSTER, "roster.csv")


def run(path: Path, tmp_path: Path, roster=ROSTER):
    work = tmp_path / "work"
    work.mkdir()
    return collect(path, "attention_numpy", "attention-numpy", roster, work, PLUS8)


def by_entry(intake) -> dict[str, object]:
    return {row.entry or f"({row.student})": row for row in intake.rows}


def graded(intake) -> dict[str, Path]:
    return {s.student: s.path for s in intake.submissions}


# ------------------------------------------------------------------ layouts


def test_canvas_zip_rows(tmp_path):
    intake = run(fx.canvas_zip(tmp_path / "class.zip"), tmp_path)
    rows = by_entry(intake)
    jane = rows["doejane_1001_501_attention_numpy.py"]
    assert (jane.status, jane.student, jane.layout, jane.identified_by) == ("graded", "s001", "canvas", "Canvas user id '1001'")
    assert (jane.submitted_at, jane.time_source) == ("2026-12-18T20:00:00+08:00", "zip entry time")
    later, earlier = rows["libob_LATE_1002_503_attention_numpy-1.py"], rows["libob_LATE_1002_502_attention_numpy.py"]
    assert (later.status, later.student, later.late_marker) == ("graded", "s002", True)
    assert "the latest of 2" in later.message and "LATE" in later.message
    assert earlier.status == "superseded" and "libob_LATE_1002_503_attention_numpy-1.py counts" in earlier.message
    assert rows["stranger_1099_505_attention_numpy.py"].status == "off_roster"
    assert "Canvas user id '1099'" in rows["stranger_1099_505_attention_numpy.py"].message
    assert rows["class.zip:libob_LATE_1002_504_notes.txt"].status == "skipped"
    assert rows["(s003)"].status == "missing"
    assert set(graded(intake)) == {"s001", "s002"}
    assert graded(intake)["s002"].name == "libob_LATE_1002_503_attention_numpy-1.py"
    assert intake.times["s002"] == (dt.datetime(2026, 12, 20, 12, 0, tzinfo=PLUS8), "zip entry time")


def test_moodle_zip_rows(tmp_path):
    intake = run(fx.moodle_zip(tmp_path / "moodle.zip"), tmp_path)
    rows = by_entry(intake)
    jane = rows["Jane Doe_88001_assignsubmission_file_/attention_numpy.py"]
    # the participant id is Moodle's own, not on the roster: the full name identifies her
    assert (jane.status, jane.student, jane.identified_by) == ("graded", "s001", "Moodle full name 'Jane Doe'")
    bob = rows["Bob Li_88002_assignsubmission_file_/attention_numpy.ipynb"]
    assert (bob.status, bob.student, bob.layout) == ("graded", "s002", "moodle")
    online = rows["moodle.zip:Bob Li_88002_assignsubmission_onlinetext_/onlinetext.html"]  # not even extracted
    assert online.status == "skipped" and "not a .py, .ipynb or .zip file" in online.message
    assert rows["(s003)"].status == "missing"


def test_github_classroom_rows(tmp_path):
    intake = run(fx.github_classroom(tmp_path / "repos"), tmp_path)
    rows = by_entry(intake)
    jane = rows["attention-numpy-janedoe/attention_numpy.py"]
    assert (jane.status, jane.student, jane.identified_by) == ("graded", "s001", "GitHub username 'janedoe'")
    bob = rows["attention-numpy-bobli/attention_numpy.py"]  # his file says s001: reported, graded as him
    assert (bob.status, bob.student) == ("conflict", "s002")
    assert "STUDENT_ID 's001' says s001" in bob.message
    nobody = rows["attention-numpy-nobody/attention_numpy.py"]
    assert nobody.status == "off_roster" and "GitHub username 'nobody'" in nobody.message
    # the commit's time, not the clone's: cloning after the deadline is the normal workflow
    assert jane.submitted_at == "2026-12-18T20:00:00+08:00" and jane.time_source.startswith("commit time of HEAD")


def test_nbgrader_rows_take_the_time_of_timestamp_txt(tmp_path):
    intake = run(fx.nbgrader_submitted(tmp_path / "exchange"), tmp_path)
    rows = {r.student: r for r in intake.rows}
    assert (rows["s001"].status, rows["s001"].layout, rows["s001"].identified_by) == (
        "graded", "nbgrader", "nbgrader student 's001'")
    assert (rows["s001"].submitted_at, rows["s001"].time_source) == ("2026-12-18T15:00:00+00:00", "nbgrader timestamp.txt")
    assert rows["s002"].status == "graded" and rows["s002"].time_source == "file mtime"  # its timestamp.txt is not a time
    assert rows["s003"].status == "missing"


def test_gradescope_export_rows_and_a_group_submission(tmp_path):
    intake = run(fx.gradescope_export(tmp_path / "export"), tmp_path)
    rows = {(r.entry, r.student): r for r in intake.rows}
    jane = rows[("submission_7001/attention_numpy.py", "s001")]
    assert (jane.status, jane.identified_by, jane.time_source) == ("graded", "Gradescope SID 's001'", "Gradescope metadata")
    assert jane.submitted_at == "2026-12-18T07:10:05-08:00"
    bob = rows[("submission_7002/attention_numpy.py", "s002")]  # no SID: his email, in another case
    cy = rows[("submission_7002/attention_numpy.py", "s003")]
    assert bob.identified_by == "Gradescope email 'BOB@uni.example'" and cy.identified_by == "Gradescope SID 's003'"
    assert "group submission of 2" in bob.message
    unknown = rows[("submission_7003/attention_numpy.py", "")]
    assert unknown.status == "unmatched" and "not in submission_metadata.yml" in unknown.message
    assert graded(intake)["s002"] == graded(intake)["s003"]


@pytest.mark.parametrize("metadata, said", [
    ("submission_7001:\n  :submitters: [\n", "not valid YAML (line"),
    ("a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n"
     "g: [*f, *f, *f, *f, *f, *f, *f, *f]\n", "too deeply nested or too large"),
    ("- just\n- a list\n", "not a mapping"),
    ("x" * 5_000_100, "larger than 5,000,000 bytes"),
])
def test_damaged_gradescope_metadata_is_a_note_and_the_batch_goes_on(tmp_path, metadata, said):
    intake = run(fx.gradescope_export(tmp_path / "export", metadata), tmp_path)
    rows = by_entry(intake)
    assert said in rows["submission_metadata.yml"].message
    assert {r.status for r in intake.rows if r.entry.startswith("submission_7")} == {"unmatched"}


def test_a_plain_class_zip_is_accepted_as_submissions(tmp_path):
    archive = tmp_path / "class.zip"
    archive.write_bytes(fx.zip_of([("s001.py", fx.source("").encode(), (2026, 12, 18, 23, 0, 0)),
                                   ("folder/s002.ipynb", b"{}", (2026, 12, 18, 23, 0, 0))]))
    intake = run(archive, tmp_path)
    assert set(graded(intake)) == {"s001", "s002"}
    assert intake.times["s001"] == (dt.datetime(2026, 12, 18, 23, 0, tzinfo=PLUS8), "zip entry time")


# --------------------------------------------------------------- identity cases


@pytest.fixture
def plain_class(tmp_path):
    subs = tmp_path / "subs"
    (subs / "sub").mkdir(parents=True)
    (subs / "jane.py").write_text(fx.source("s001"))  # the name is not an id; the file says s001
    (subs / "s009.py").write_text(fx.source(""))  # off the roster
    (subs / "s002.py").write_text(fx.source(""))
    (subs / "s002.ipynb").write_text("{}")  # two hand-ins of one student: the later counts
    os.utime(subs / "s002.py", (1_800_000_000, 1_800_000_000))
    os.utime(subs / "s002.ipynb", (1_800_000_500, 1_800_000_500))
    (subs / "attention_numpy.py").write_text(fx.source(""))  # left as the stub's name, STUDENT_ID empty
    (subs / "sub" / "s003.py").write_text(fx.source(""))  # a folder of files: the file's name is the id
    return subs


def test_every_identity_case_gives_its_row(plain_class, tmp_path):
    roster = parse_roster(fx.ROSTER + "s004,Di,di@uni.example,1004,B,,\n", "roster.csv")
    intake = run(plain_class, tmp_path, roster)
    rows = by_entry(intake)
    assert (rows["jane.py"].status, rows["jane.py"].student, rows["jane.py"].identified_by) == (
        "graded", "s001", "STUDENT_ID 's001'")
    assert "file name 'jane'" in rows["jane.py"].message
    assert rows["s009.py"].status == "off_roster" and rows["s009.py"].student == ""
    assert (rows["s002.ipynb"].status, rows["s002.ipynb"].student) == ("graded", "s002")
    assert rows["s002.py"].status == "superseded" and "an earlier hand-in; s002.ipynb counts" in rows["s002.py"].message
    assert rows["attention_numpy.py"].status == "unmatched" and "STUDENT_ID is empty" in rows["attention_numpy.py"].message
    assert (rows["sub/s003.py"].status, rows["sub/s003.py"].student) == ("graded", "s003")
    assert rows["(s004)"].status == "missing"
    assert set(graded(intake)) == {"s001", "s002", "s003"}
    assert {r.status for r in intake.blocking} == {"off_roster", "unmatched"}


def test_a_name_and_a_student_id_that_disagree_are_a_conflict(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "s001.py").write_text(fx.source("s002"))
    (row,) = [r for r in run(subs, tmp_path).rows if r.entry]
    # STUDENT_ID comes before the file name: graded as s002, and the disagreement is reported
    assert (row.status, row.student, row.identified_by) == ("conflict", "s002", "STUDENT_ID 's002'")
    assert "file name 's001' says s001" in row.message


def test_without_a_roster_names_stay_the_ids_and_a_disagreeing_student_id_is_reported(plain_class, tmp_path):
    intake = run(plain_class, tmp_path, roster=None)
    rows = by_entry(intake)
    assert rows["jane.py"].student == "jane" and "STUDENT_ID says 's001'" in rows["jane.py"].message
    assert {"jane", "s009", "attention_numpy", "sub"} <= set(graded(intake))


def test_an_empty_folder_collects_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    intake = run(tmp_path / "empty", tmp_path)
    assert intake.submissions == () and {r.status for r in intake.rows} == {"missing"}


# ------------------------------------------------------------------ hostile zips


def written_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_a_zip_with_traversal_names_never_writes_outside(tmp_path):
    archive = fx.traversal_zip(tmp_path / "evil.zip")
    before = written_files(tmp_path)
    intake = run(archive, tmp_path)
    rows = by_entry(intake)
    for name, why in (("../evil.py", "'..'"), ("/tmp/absolute.py", "absolute"), ("a/../../up.py", "'..'"),
                      ("C:\\windows\\drive.py", "absolute")):
        assert rows[f"evil.zip:{name}"].status == "rejected" and why in rows[f"evil.zip:{name}"].message
    after = written_files(tmp_path) - before
    assert all(p.startswith("work") for p in after), after
    assert not Path("/tmp/absolute.py").exists() and not (tmp_path / "evil.py").exists()
    assert graded(intake).keys() == {"s001"}


def test_a_symlink_member_is_refused_and_not_made(tmp_path):
    intake = run(fx.symlink_zip(tmp_path / "links.zip"), tmp_path)
    assert by_entry(intake)["links.zip:link.py"].status == "rejected"
    assert not any(p.is_symlink() for p in (tmp_path / "work").rglob("*"))
    assert set(graded(intake)) == {"s001"}


def test_duplicate_control_long_and_non_utf8_names(tmp_path):
    intake = run(fx.duplicate_and_odd_names_zip(tmp_path / "odd.zip"), tmp_path)
    rows = [r for r in intake.rows if r.entry.startswith("odd.zip:")]
    said = {r.entry: (r.status, r.message) for r in rows}
    assert said["odd.zip:s001.py"] == ("rejected", "a second member of the same name: the first one is kept")
    assert said["odd.zip:esc\\x1b]0;pwned\\x07.py"][0] == "rejected"
    assert any("longer than 255 bytes" in m for _, m in said.values())
    assert "second copy" not in graded(intake)["s001"].read_text()
    latin = next(r for r in intake.rows if r.entry.startswith("J"))
    assert latin.status == "off_roster" and latin.entry == "J\u00fcrgen.py"  # cp437's 0x81, shown as text


def test_a_zip_with_more_members_than_any_class_is_refused_with_one_line(tmp_path):
    archive = fx.many_members_zip(tmp_path / "bomb.zip", 20_001)
    with pytest.raises(QkvError) as caught:
        run(archive, tmp_path)
    said = str(caught.value)
    assert "more than 20,000 members" in said and "\n" not in said and str(archive) in said


@pytest.mark.parametrize("build, said", [
    (fx.bomb_zip, "30,000,000 bytes; the limit is 5,000,000"),  # a member that inflates far past the limit
    (fx.lying_sizes_zip, "3,000,000,000 bytes; the limit is 5,000,000"),  # headers that declare gigabytes
])
def test_a_bomb_member_is_refused_as_its_own_row(tmp_path, build, said):
    intake = run(build(tmp_path / "bomb.zip"), tmp_path)
    refused = [r for r in intake.rows if r.status == "rejected"]
    assert refused and all(said in r.message for r in refused)
    assert not any(p.stat().st_size > 5_000_000 for p in (tmp_path / "work").rglob("*") if p.is_file())


def test_a_students_zip_is_opened_once_and_no_deeper(tmp_path):
    intake = run(fx.nested_zip(tmp_path / "nested.zip"), tmp_path)
    rows = by_entry(intake)
    assert rows["doejane_1001_601_work/attention_numpy.py"].student == "s001"
    assert "2 deep: not opened" in rows["nested.zip:doejane_1001_601_work.zip/more.zip"].message
    assert "not a zip file" in rows["nested.zip:broken.zip"].message


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(QkvError, match="is a file, not a folder of submissions"):
        run(tmp_path / "notes.txt", tmp_path)


# ------------------------------------------------------------------- rosters


def test_roster_columns_extensions_and_extra_columns():
    roster = parse_roster("\ufeffID,Name,Email,LMS_ID,Section,Extension,github,notes\n"
                          "s1,A B,a@x,11,A,36,ab,likes tea\ns2,,,,,2026-12-20,,\n"
                          "s3,,,,,2026-12-20T10:00:00Z,,\n", "r.csv")
    s1, s2, s3 = roster.students
    assert s1.extension == Extension(hours=36.0) and s1.get("notes") == "likes tea" and s1.get("github") == "ab"
    assert s2.extension == Extension(due=dt.date(2026, 12, 20))
    assert s3.extension.due == dt.datetime(2026, 12, 20, 10, tzinfo=dt.timezone.utc)
    assert roster.by_lms(IdKind.CANVAS_USER_ID, "11") is s1 and roster.by_email("A@X") is s1 and roster.by_id("S1") is s1


def test_an_extension_is_hours_or_a_new_due_date_never_both_nor_neither():
    # neither used to be accepted and then fail where it was shown (`due.isoformat()` of None); both showed the
    # date while the deadline took the hours
    assert (str(Extension(hours=36.0)), str(Extension(due=dt.date(2026, 12, 20)))) == ("+36 h", "until 2026-12-20")
    for hours, due in ((None, None), (36.0, dt.date(2026, 12, 20))):
        with pytest.raises(ValueError, match="either hours or a new due date"):
            Extension(hours=hours, due=due)


def test_each_lms_identifier_is_its_own_column_compared_with_its_own_kind_only():
    roster = parse_roster("id,email,canvas_user_id,sis_id,moodle_user_id,moodle_participant_id\n"
                          "s1,a@x,11,22,5,7\ns2,b@x,22,11,7,5\n", "r.csv")
    s1, s2 = roster.students
    assert roster.notes == ()
    assert roster.match([(IdKind.CANVAS_USER_ID, "11")]).student is s1
    assert roster.match([(IdKind.SIS_ID, "11")]).student is s2
    assert roster.match([(IdKind.MOODLE_USER_ID, "5")]).student is s1
    assert roster.match([(IdKind.MOODLE_PARTICIPANT_ID, "5")]).student is s2
    assert roster.match([(IdKind.CANVAS_USER_ID, "11"), (IdKind.SIS_ID, "22")]).student is s1
    both = roster.match([(IdKind.CANVAS_USER_ID, "11"), (IdKind.SIS_ID, "11")])  # two rows: neither
    assert both.student is None and both.ambiguous == (s1, s2)
    with pytest.raises(QkvError, match="r.csv:3: canvas_user_id '11' is also on line 2"):
        parse_roster("id,canvas_user_id\ns1,11\ns2,11\n", "r.csv")


def test_an_old_lms_id_column_is_read_with_a_note_saying_what_it_is_taken_to_be():
    roster = parse_roster("id,lms_id\ns1,1001\n", "old.csv")
    assert roster.notes == ("old.csv: column `lms_id` is the old one: each value is taken as the student's Canvas "
                            "user id (Canvas) and Moodle participant id (Moodle downloads), never as an LTI user id, "
                            "Moodle user id or SIS id; rename it canvas_user_id or moodle_participant_id "
                            "(docs/class.md)",)
    s1 = roster.students[0]
    assert (s1.id_of(IdKind.CANVAS_USER_ID), s1.id_of(IdKind.MOODLE_PARTICIPANT_ID)) == ("1001", "1001")
    assert s1.id_of(IdKind.MOODLE_USER_ID) == s1.id_of(IdKind.SIS_ID) == ""
    with pytest.raises(QkvError, match="old.csv:1: has both the old `lms_id` and canvas_user_id"):
        parse_roster("id,lms_id,canvas_user_id\ns1,1,2\n", "old.csv")


@pytest.mark.parametrize("text, said", [
    ("", "is empty"),
    ("name,email\nA,a@x\n", "roster.csv:1: no `id` column"),
    ("id,id\ns1,s1\n", "column `id` appears twice"),
    ("id,name\ns1,A\ns1,B\n", "roster.csv:3: id 's1' is also on line 2"),
    ("id,email\ns1,a@x\ns2,A@X\n", "roster.csv:3: email 'a@x' is also on line 2"),
    ("id,extension\ns1,next week\n", "roster.csv:2: extension: 'next week' is neither hours nor an ISO 8601 date"),
    ("id,extension\ns1,-3\n", "roster.csv:2: extension: '-3' hours is not between"),
    ("id,extension\ns1,nan\n", "roster.csv:2: extension: 'nan' hours is not between"),
    ("id,name\ns1,A,extra\n", "roster.csv:2: 3 fields, the header has 2"),
    ("id,name\n../etc,A\n", "roster.csv:2: id '../etc'"),
    ('id,name\ns1,"unterminated\n', "roster.csv:"),
    ("id\n", "has a header but no students"),
    ("id,name\ns1,A\x00\n", "NUL bytes"),
    ("id,name\ns1," + "x" * 5000 + "\n", "roster.csv"),
])
def test_a_broken_roster_is_one_line_naming_the_file(text, said):
    with pytest.raises(QkvError) as caught:
        parse_roster(text, "roster.csv")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_roster_files_that_cannot_be_read(tmp_path):
    (tmp_path / "latin1.csv").write_bytes("id,name\ns1,J\xfcrgen\n".encode("latin-1"))
    for path, said in ((tmp_path / "missing.csv", "no such roster file"), (tmp_path, "is not a file"),
                       (tmp_path / "latin1.csv", "is not UTF-8 text (byte 12)")):
        with pytest.raises(QkvError, match=re.escape(said)):
            load_roster(path)


# ---------------------------------------------------------------- STUDENT_ID in the file

# the rule as one regular expression over the whole text: the definition student_id_in must agree with
_STUDENT_ID_LINES = re.compile(
    r"""^[ \t]*STUDENT_ID[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*(?P<q>['"])(?P<id>[^'"\n\\]{0,100})(?P=q)""", re.M)
_blank = st.sampled_from(["", " ", "\t", "  "])
# lines that are, or nearly are, an assignment of STUDENT_ID, and others
_line = st.one_of(
    st.tuples(_blank, st.sampled_from(["STUDENT_ID", "STUDENT_IDS", "# STUDENT_ID", "x = STUDENT_ID"]), _blank,
              st.sampled_from(["", ": str", ":str", ": int"]), _blank, st.sampled_from(["=", "==", ""]), _blank,
              st.sampled_from(["'", '"', ""]), st.text(alphabet=" s01-'\"\\\r", max_size=6),
              st.sampled_from(["'", '"', ""]), st.sampled_from(["", "  # mine", "STUDENT_ID = 'z'"])).map("".join),
    st.text(alphabet="STUDENT_ID =x'\"", max_size=12))


@given(st.tuples(st.lists(_line, max_size=6), st.sampled_from(["\n", "\r\n"])).map(lambda t: t[1].join(t[0])))
@settings(max_examples=400, deadline=None, derandomize=True)
def test_student_id_is_the_last_assignment_at_a_line_start(text: str) -> None:
    from autograder.classroom.identity import student_id_in

    found = [m.group("id").strip() for m in _STUDENT_ID_LINES.finditer(text)]
    assert student_id_in(text) == (found[-1] if found else "")


def test_student_id_ignores_the_name_inside_a_line_and_takes_the_last() -> None:
    from autograder.classroom.identity import student_id_in

    text = 'x = 1  # STUDENT_ID = "no"\nSTUDENT_ID = "s001"\n  STUDENT_ID: str = "s002"\nprint("STUDENT_ID = \'z\'")\n'
    assert student_id_in(text) == "s002"
    assert student_id_in("STUDENT_ID = 'a'\nSTUDENT_ID = 'x\\y'\n") == "a"  # a backslash is no id
