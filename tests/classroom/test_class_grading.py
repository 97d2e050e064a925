"""qkv grade with a class around it: the demo's Canvas zip and roster, late penalties in the gradebook and on
each student's page, --strict, the history of gradings, --regrade of some students, and the changes table
after a hidden test is fixed. Real sandbox, real SQLite, real zips.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from autograder.archive import load_npz, npz_bytes
from autograder.classroom.roster import IdKind, load_roster
from autograder.errors import QkvError
from autograder.routes.class_grading import GRADEBOOK_FILE, grade_class
from conftest import QKV, ROOT, gradebook_rows, key_module, replace_function
from conftest import said as told
from autograder.references import misconceptions

pytestmark = pytest.mark.slow  # grades whole classes, mostly through the qkv command

CANVAS = ROOT / "examples" / "canvas"


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def canvas_class(built_numpy, tmp_path_factory):
    out = tmp_path_factory.mktemp("canvas-grades")
    run = grade_class(built_numpy.out / "autograder", CANVAS / "attention-numpy-submissions.zip", out, jobs=2,
                      timeout=3.0, roster=load_roster(CANVAS / "roster.csv"))
    return run, out


def test_the_canvas_zip_is_graded_under_roster_ids(canvas_class):
    run, out = canvas_class
    assert {r.student for r in run.results} == {f"s202600{i}" for i in range(1, 9)}
    intake = {r["entry"] or r["student"]: r for r in csv_rows(out / "intake.csv")}
    assert intake["zhangwei_1010_90010_attention_numpy.py"]["status"] == "off_roster"
    assert intake["s2026009"]["status"] == "missing"
    assert intake["novakdan_LATE_1004_90004_attention_numpy.py"]["status"] == "conflict"
    assert intake["santosgil_1007_90007_attention_numpy.py"]["status"] == "superseded"
    assert not (out / "feedback" / "zhangwei").exists() and not (out / "feedback" / "1010").exists()
    full = run.bundle.max_points
    assert next(r for r in run.results if r.student == "s2026001").score == pytest.approx(full)


def test_late_penalties_follow_the_policy_and_the_extensions(canvas_class):
    run, out = canvas_class
    late, full, raw = run.late, run.bundle.max_points, raw_scores(run)
    # the demo's policy: -20% of the points a started day, at most -50%, 15 minutes' grace
    assert (late["s2026002"].penalty, late["s2026002"].rule) == (round(0.2 * full, 4), f"2 days late: -20% of {full:g} points")
    assert late["s2026002"].final == round(raw["s2026002"] - 0.2 * full, 4)
    assert late["s2026003"].rule == "on time (with the extension)" and late["s2026003"].penalty == 0
    assert late["s2026004"].rule == "within the 15-minute grace"
    assert (late["s2026006"].penalty, late["s2026006"].final) == (round(0.5 * full, 4), round(raw["s2026006"] - 0.5 * full, 4))
    assert late["s2026006"].rule == f"6 days late: -50% of {full:g} points (the cap)"
    table = gradebook_rows(out)
    assert ((table["s2026002"]["total"], table["s2026002"]["penalty"], table["s2026002"]["final"])
            == (f"{raw['s2026002']:g}", f"{late['s2026002'].penalty:g}", f"{late['s2026002'].final:g}"))
    assert table["s2026001"]["late_rule"] == "on time"


def test_feedback_pages_show_the_students_own_due_date_and_penalty(canvas_class):
    run, out = canvas_class
    ben, full = run.late["s2026002"], run.bundle.max_points
    page = (out / "feedback" / "s2026002" / "feedback.html").read_text()
    assert "Your due date: <strong>2026-12-18T23:59+08:00</strong>" in page
    assert f"late penalty -{ben.penalty:g}" in page and f"final score <strong>{ben.final:g} / {full:g}</strong>" in page
    cho = (out / "feedback" / "s2026003" / "feedback.html").read_text()
    assert "Your due date: <strong>2026-12-20T23:59+08:00</strong> (extension +48 h)" in cho
    assert "late penalty" not in cho


def test_every_grading_is_kept_with_its_file_and_time(canvas_class):
    _, out = canvas_class
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        rows = db.execute("SELECT student, source, submitted_at, time_source, bundle FROM gradings").fetchall()
        tests = db.execute("SELECT COUNT(*) FROM grading_tests").fetchone()[0]
        per_submission = db.execute("SELECT COUNT(*) FROM test_scores").fetchone()[0]
    by_student = {r[0]: r for r in rows}
    assert by_student["s2026007"][1:4] == ("santosgil_1007_90008_attention_numpy-1.py", "2026-12-18T21:00:00+08:00",
                                          "zip entry time")
    assert len({r[4] for r in rows}) == 1 and len(rows[0][4]) == 64
    assert tests == per_submission  # every test of every grading


def test_strict_refuses_and_leaves_no_gradebook(built_numpy, tmp_path):
    out = tmp_path / "strict"
    with pytest.raises(QkvError) as caught:
        grade_class(built_numpy.out / "autograder", CANVAS / "attention-numpy-submissions.zip", out, jobs=1,
                    roster=load_roster(CANVAS / "roster.csv"), strict=True)
    assert "--strict: 2 hand-in(s) to resolve first" in str(caught.value)
    assert not (out / GRADEBOOK_FILE).exists() and (out / "intake.csv").is_file()


def test_an_empty_folder_is_an_error_not_graded_zero(built_numpy, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(QkvError, match="no .py or .ipynb submission found to grade"):
        grade_class(built_numpy.out / "autograder", tmp_path / "empty", tmp_path / "out", jobs=1)


# ------------------------------------------------------------------------- history


def broken_bundle(bundle: Path, into: Path, problem: str, test: str) -> Path:
    """A copy of the bundle whose hidden test `problem::test` expects a wrong value (the bug to be fixed)."""
    shutil.copytree(bundle, into)
    arrays = load_npz(into / "arrays.npz")
    key = f"{problem}/{test}/want/0"
    arrays[key] = np.asarray(arrays[key]) + 1.0
    (into / "arrays.npz").write_bytes(npz_bytes(arrays))
    return into


@pytest.fixture(scope="module")
def regraded(built_numpy, tmp_path_factory):
    """A class graded with a broken hidden test, then with it fixed: every grading is kept."""
    assignment = built_numpy.assignment
    softmax = next(p.problem for p in assignment.implement if p.problem.function == "softmax_rows")
    hidden = softmax.hidden_tests[0].name
    root = tmp_path_factory.mktemp("history")
    subs = root / "subs"
    subs.mkdir()
    key = key_module(assignment)
    (subs / "ann.py").write_text(key)
    (subs / "bob.py").write_text(key)
    (subs / "col.py").write_text(replace_function(key, "softmax_rows", misconceptions.softmax_over_columns))
    bad = broken_bundle(built_numpy.out / "autograder", root / "bad-bundle", softmax.id, hidden)
    out = root / "out"
    first = grade_class(bad, subs, out, jobs=2, timeout=3.0)
    second = grade_class(built_numpy.out / "autograder", subs, out, jobs=2, timeout=3.0)
    return first, second, out, subs, f"{softmax.id}::{hidden}"


def test_fixing_a_hidden_test_shows_who_gained_points(regraded):
    first, second, out, _, test = regraded
    assert first.changes == [] and "rebuilt" in second.notes[0]
    moved = {c.student: c for c in second.changes}
    assert set(moved) == {"ann", "bob", "col"}
    for student in ("ann", "bob"):
        assert moved[student].delta > 0 and moved[student].gained[0].startswith(test)
        assert moved[student].new_bundle and not moved[student].new_file
    assert moved["col"].delta == 0  # wrong before and after: the fix does not help the column softmax
    rows = {r["student"]: r for r in csv_rows(out / "changes.csv")}
    assert float(rows["ann"]["change"]) == pytest.approx(moved["ann"].delta) and rows["ann"]["rebuilt"] == "yes"


def test_regrade_of_some_students_only_and_the_history_command(regraded, built_numpy):
    _, _, out, subs, test = regraded
    again = grade_class(built_numpy.out / "autograder", subs, out, jobs=1, timeout=3.0, only=["bob"])
    assert again.graded_now == 1 and again.skipped == 2
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        counts = dict(db.execute("SELECT student, COUNT(*) FROM gradings GROUP BY student"))
    assert counts == {"ann": 2, "bob": 3, "col": 2}
    shown = subprocess.run([str(QKV), "history", "attention-numpy", "bob", "--grades", str(out)],
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    assert "3 grading(s)" in shown.stdout and test in shown.stdout and "rebuilt" in shown.stdout
    with pytest.raises(QkvError, match="--regrade: no submission of nobody"):
        grade_class(built_numpy.out / "autograder", subs, out, jobs=1, only=["nobody"])


def test_history_and_grade_errors_are_one_line(regraded, tmp_path):
    _, _, out, subs, _ = regraded
    (tmp_path / "bad.csv").write_text("name\nA\n")
    for args, said in ((["history", "attention-numpy", "zed", "--grades", str(out)], "no grading of this student"),
                       (["history", "attention-numpy", "ann", "--grades", str(tmp_path / "none")], "no such grades folder"),
                       (["history", "attention-torch", "ann", "--grades", str(out)], "belongs to assignment 'attention-numpy'"),
                       (["grade", "attention-numpy", str(subs), "--roster", str(tmp_path / "bad.csv")],
                        "bad.csv:1: no `id` column")):
        done = subprocess.run([str(QKV), *args], capture_output=True, text=True)
        assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(told(done.stderr)) == 1, done.stderr


def test_the_stored_answers_are_the_written_ones(canvas_class):
    _, out = canvas_class
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        answers = json.loads(db.execute("SELECT answers FROM gradings WHERE student = 's2026001'").fetchone()[0])
    assert answers["mha-heads-and-parameters"] == "B" and answers["rnn-sequential"]["answer"] is False


# ------------------------------------------------------------------------- exports


def export(out: Path, fmt: str, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    target = out / f"export-{fmt}.csv"
    done = subprocess.run([str(QKV), "export-grades", "attention-numpy", "--format", fmt, "--grades", str(out),
                           "--out", str(target), *extra], capture_output=True, text=True)
    return done, target


def raw_scores(run) -> dict[str, float]:
    return {r.student: r.score for r in run.results}


def test_canvas_import_file_reads_back_by_canvas_rules(canvas_class):
    run, out = canvas_class
    done, path = export(out, "canvas", "--column", "Attention HW (4321)")
    assert done.returncode == 0, done.stderr
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    # Canvas: the first five columns by these names, then one column per assignment; an optional Points Possible row
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention HW (4321)"]
    assert rows[1][0].strip() == "Points Possible" and float(rows[1][5]) == run.bundle.max_points
    roster = {s.id_of(IdKind.CANVAS_USER_ID): s for s in load_roster(CANVAS / "roster.csv").students}
    grades = {}
    for row in rows[2:]:
        student = roster[row[1]]  # Canvas matches on ID, the Canvas user id
        assert (row[2], row[3], row[4]) == (student.id, student.email, student.section)
        grades[student.id] = float(row[5]) if row[5] else None
    final = {student: outcome.final for student, outcome in run.late.items()}
    assert grades["s2026002"] == final["s2026002"] and grades["s2026006"] == final["s2026006"]
    assert grades["s2026001"] == run.bundle.max_points and final["s2026002"] < raw_scores(run)["s2026002"]
    assert grades["s2026009"] is None  # nothing handed in: blank, Canvas keeps what it has
    assert len(grades) == 9


def test_moodle_import_file_reads_back_by_email_and_id_number(canvas_class):
    run, out = canvas_class
    ben = run.late["s2026002"]
    done, path = export(out, "moodle")
    assert done.returncode == 0, done.stderr
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_email = {r["Email address"]: r for r in rows}
    by_id = {r["ID number"]: r for r in rows}
    title = "Attention from scratch (NumPy)"
    assert float(by_email["ben@uni.example"][title]) == ben.final and by_email["ben@uni.example"] is by_id["s2026002"]
    assert f"late penalty -{ben.penalty:g}" in by_email["ben@uni.example"]["Feedback"]
    assert by_email["ivy@uni.example"][title] == ""


def test_plain_csv_and_comment_file(canvas_class):
    run, out = canvas_class
    late = run.late
    done, path = export(out, "csv")
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in csv_rows(path)}
    assert ((rows["s2026006"]["raw"], rows["s2026006"]["penalty"], rows["s2026006"]["final"])
            == tuple(f"{x:g}" for x in (late["s2026006"].raw, late["s2026006"].penalty, late["s2026006"].final)))
    assert rows["s2026009"]["status"] == "missing" and rows["s2026005"]["status"] == "load_error"
    comments = {r["id"]: r["comment"] for r in csv_rows(path.with_name("export-csv-comments.csv"))}
    assert "softmax-rows" in comments["s2026002"] and "s2026009" not in comments
    two_places = f"{late['s2026003'].final:.2f}".rstrip("0").rstrip(".")
    assert comments["s2026003"].startswith(f"{two_places}/{run.bundle.max_points:g}; points lost on: ")


def test_export_errors_are_one_line(canvas_class, tmp_path):
    _, out = canvas_class
    for args, said in ((["--format", "blackboard", "--grades", str(out)], "--format: unknown format 'blackboard'"),
                       (["--format", "canvas", "--grades", str(tmp_path / "none")], "no such grades folder"),
                       (["--format", "canvas", "--grades", str(tmp_path)], "no gradebook here")):
        done = subprocess.run([str(QKV), "export-grades", "attention-numpy", *args], capture_output=True, text=True)
        assert done.returncode == 1 and said in done.stderr and len(told(done.stderr)) == 1, done.stderr
    assert not list(tmp_path.glob("*.csv"))


# ------------------------------------------------------------------------- copying


def test_qkv_copying_reports_for_the_instructor_only(canvas_class, built_numpy):
    _, out = canvas_class
    done = subprocess.run([str(QKV), "copying", "attention-numpy", str(CANVAS / "attention-numpy-submissions.zip"),
                           "--roster", str(CANVAS / "roster.csv"), "--grades", str(out), "--dist", str(built_numpy.out)],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "numbers: not applicable" not in done.stdout and "28 code pairs compared" in done.stdout
    page = (out / "copying.html").read_text()
    # attention-numpy draws numbers per student and each sample holds its own roster student's: none is another's
    assert 'id="answers-none"' in page and "For the instructor only" in page
    flags = csv_rows(out / "copying.csv")
    assert not any(r["signal"] == "numbers" for r in flags), flags
    # the samples are all the answer key with a function or two swapped: they are near-copies of each other
    pairs = {(r["student"], r["other"]) for r in flags if r["signal"] == "code"}
    assert ("s2026001", "s2026008") in pairs and not any("s2026005" in p or "s2026007" in p for p in pairs)
    for feedback in (out / "feedback").rglob("*"):  # never shown to students
        if feedback.is_file():
            text = feedback.read_text(errors="replace")
            assert "copying" not in text.lower() and "similar" not in text.lower(), feedback


# ------------------------------------------------------------------ attacks through qkv grade (issue 19)


def sabotage_class(built_numpy, path: Path) -> Path:
    """Jane's full marks; Bob's full marks, then an extra zip with a repository marker claiming to be Jane's."""
    from fixtures.classroom.layouts import zip_of

    assignment = built_numpy.assignment
    stub = key_module(assignment, "s001").split("\ndef ", 1)[0] + "\nSTUDENT_ID = 's001'\nANSWERS = {}\n"
    extra = zip_of([(".git/HEAD", b"ref: refs/heads/main\n", (2026, 12, 18, 21, 0, 0)),
                    ("attention_numpy.py", stub.encode(), (2026, 12, 18, 21, 0, 0))])
    path.write_bytes(zip_of([
        ("doejane_1001_501_attention_numpy.py", key_module(assignment, "s001").encode(), (2026, 12, 18, 20, 0, 0)),
        ("libob_1002_502_attention_numpy.py", key_module(assignment, "s002").encode(), (2026, 12, 18, 20, 0, 0)),
        ("libob_1002_503_extra.zip", extra, (2026, 12, 18, 21, 0, 0)),
    ]))
    return path


ATTACK_ROSTER = "id,name,email,lms_id,section,extension\ns001,Jane Doe,,1001,A,\ns002,Bob Li,,1002,A,9999-12-31\n"


@pytest.mark.parametrize("cluster", [None, "local:1"])
def test_a_classmates_claim_neither_costs_her_points_nor_passes_strict(built_numpy, tmp_path, cluster):
    from autograder.classroom.roster import parse_roster

    roster = parse_roster(ATTACK_ROSTER, "roster.csv")  # Bob's extension to 9999-12-31 is a rule, not a crash
    subs = sabotage_class(built_numpy, tmp_path / "class.zip")
    run = grade_class(built_numpy.out / "autograder", subs, tmp_path / "out", jobs=None if cluster else 1, timeout=5.0,
                      roster=roster, cluster=cluster)
    full = built_numpy.assignment.max_points
    assert {r.student: r.score for r in run.results} == {"s001": pytest.approx(full), "s002": pytest.approx(full)}
    intake = {r["entry"]: r for r in csv_rows(tmp_path / "out" / "intake.csv")}
    assert intake["doejane_1001_501_attention_numpy.py"]["status"] == "graded"
    extra = intake["libob_1002_503_extra/attention_numpy.py"]
    assert (extra["status"], extra["student"], extra["layout"]) == ("conflict", "s002", "canvas")
    assert run.late["s002"].rule == "on time (with the extension)"
    with pytest.raises(QkvError, match=r"--strict: 1 hand-in\(s\) to resolve first .*libob_1002_503_extra"):
        grade_class(built_numpy.out / "autograder", subs, tmp_path / "strict", jobs=1, roster=roster, strict=True)


# ------------------------------------------------------------------ history after the late penalty (issue 25)


def test_the_lms_late_marker_is_kept_with_each_grading(canvas_class):
    _, out = canvas_class
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        marked = {student: (source, late) for student, source, late in
                  db.execute("SELECT student, source, late_marked FROM gradings")}
    # Canvas writes LATE into the names of the files it marks late (okaforben_LATE_1002_...)
    assert {student for student, (source, late) in marked.items() if late} == \
        {student for student, (source, _) in marked.items() if "_LATE_" in source}
    assert marked["s2026002"][1] == 1 and marked["s2026001"][1] == 0


def test_qkv_history_shows_the_final_score_after_the_late_penalty(canvas_class):
    run, out = canvas_class
    ben, full = run.late["s2026002"], run.bundle.max_points
    shown = subprocess.run([str(QKV), "history", "attention-numpy", "s2026002", "--grades", str(out)],
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr
    final = f"{ben.final:.2f}".rstrip("0").rstrip(".")
    raw = f"{ben.raw:.2f}".rstrip("0").rstrip(".")
    assert f"{final}/{full:g} (raw {raw}; 2 days late: -20% of {full:g} points)" in shown.stdout, shown.stdout
