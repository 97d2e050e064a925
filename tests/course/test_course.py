"""Courses of one's own: found as git finds a repository, a bank that takes the bundled problems as a library,
problem folders with their own code, proved by validate, carried by the bundle wherever grading runs."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from autograder.kinds import KINDS
from autograder.bank.validate import validate_report
from autograder.course.bank import load_course_bank
from autograder.course.find import bundled_course, find_course
from autograder.course.scaffold import init_course, new_problem
from autograder.errors import QkvError
from conftest import QKV, ROOT

pytestmark = pytest.mark.slow  # courses made, validated and built through the qkv command


def qkv(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(QKV), *args], cwd=course, capture_output=True, text=True, timeout=600)


@pytest.fixture
def course(tmp_path) -> Path:
    root = tmp_path / "c101"
    init_course(root, "Course 101")
    return root


@pytest.fixture
def small_course(course) -> Path:
    return take_only_what_first_assignment_uses(course)


def take_only_what_first_assignment_uses(course: Path) -> Path:
    """qkv init's course, taking of the bundled problems only those its first assignment uses: it validates in a
    second, where one taking them all proves the whole bundled bank again (test_init_... does that once, and
    tests/bank/test_validate.py for qkv itself)."""
    own = {path.name for path in (course / "question_bank").iterdir()}
    used = [p for p in yaml.safe_load((course / "assignments" / "first-assignment.yaml").read_text())["problems"]
            if p not in own]
    config = course / "course.yaml"
    config.write_text(config.read_text().replace("bundled: all", f"bundled: {{ids: [{', '.join(used)}]}}"))
    assert set(load_course_bank(find_course(course)).bank.problems) == own | set(used)
    return course


def findings(root: Path) -> list[str]:
    return [str(f) for f in validate_report(load_course_bank(find_course(root)))]


def test_a_course_is_found_from_below_by_option_and_by_environment(course, tmp_path, monkeypatch):
    (course / "question_bank" / "deep" / "er").mkdir(parents=True)
    assert find_course(start=course / "question_bank" / "deep" / "er").root == course.resolve()
    assert find_course(start=tmp_path).bundled
    assert find_course(explicit=course, start=tmp_path).title == "Course 101"
    monkeypatch.setenv("QKV_COURSE", str(course))
    assert find_course(start=tmp_path).root == course.resolve()
    monkeypatch.setenv("QKV_COURSE", str(tmp_path / "nowhere"))
    with pytest.raises(QkvError, match="no such folder"):
        find_course(start=tmp_path)


def test_every_command_names_its_course_first(small_course, tmp_path):
    inside = qkv(small_course / "assignments", "validate")
    assert inside.returncode == 0, inside.stderr
    assert inside.stderr.splitlines()[0] == f"course: Course 101 ({small_course.resolve()})"
    # even one that fails at once
    outside = qkv(tmp_path, "build", "no-such-assignment")
    assert outside.returncode != 0
    assert outside.stderr.splitlines()[0] == "course: qkv's bundled course (bundled with qkv)"


def test_init_writes_a_course_that_validates_builds_and_refuses_to_overwrite(course, tmp_path):
    assert findings(course) == []
    built = qkv(course, "build", "first-assignment")
    assert built.returncode == 0, built.stderr
    assert (course / "dist" / "first-assignment" / "gradescope.zip").is_file()
    assert (course / ".gitignore").read_text().startswith("# builds hold")
    with pytest.raises(QkvError, match="already a course"):
        init_course(course, "again")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(QkvError, match="not an empty folder"):
        init_course(tmp_path / "full", "x")


def test_the_bundled_problems_are_a_library_and_an_override_is_said(course):
    config = course / "course.yaml"
    config.write_text(config.read_text().replace("bundled: all", "bundled: {topics: [masking], ids: [scores-shape]}"))
    bank = load_course_bank(find_course(course)).bank
    bundled = {p.id: p for p in load_course_bank(bundled_course()).bank.problems.values()}
    masking = {pid for pid, p in bundled.items() if p.topic.startswith("masking")}
    assert set(bank.problems) == masking | {"scores-shape", "normalize-rows"}
    mine = course / "question_bank" / "causal-mask.yaml"
    data = yaml.safe_load(Path(bank.paths["causal-mask"]).read_text())
    mine.write_text(yaml.safe_dump({**data, "title": "Ours: " + data["title"]}))
    bank = load_course_bank(find_course(course)).bank
    assert bank.paths["causal-mask"] == mine.resolve() and bank.problems["causal-mask"].title.startswith("Ours")
    assert "causal-mask" in bank.overrides
    said = qkv(course, "validate")
    assert "overrides the bundled causal-mask" in said.stderr


def test_validate_rejects_a_missing_reference_a_failing_one_and_an_uncaught_mistake(small_course):
    course = small_course
    folder = course / "question_bank" / "normalize-rows"
    reference = (folder / "reference.py").read_text()
    (folder / "reference.py").unlink()
    assert any("problem.yaml: references.numpy: unknown reference 'reference.normalize_rows'" in f for f in findings(course))
    (folder / "reference.py").write_text(reference.replace("X / X.sum(axis=-1, keepdims=True)", "X"))
    assert any("problem.yaml: test 'two rows': expect: the reference gives other numbers" in f for f in findings(course))
    (folder / "reference.py").write_text(reference)
    (folder / "misconceptions.py").write_text((folder / "misconceptions.py").read_text().replace(
        "X / X.sum(axis=-2, keepdims=True)", "X / X.sum(axis=-1, keepdims=True)"))
    assert any("problem.yaml: misconceptions.columns-instead: passes every hidden test" in f for f in findings(course))


def fill_in(folder: Path) -> None:
    """What an instructor writes over a skeleton's TODO texts (validate refuses them as they are)."""
    problem = folder / "problem.yaml"
    problem.write_text(problem.read_text().replace("TODO: ", ""))


@pytest.mark.parametrize("kind", KINDS)
def test_qkv_new_writes_a_skeleton_validate_accepts_once_filled_in(course, kind):
    if kind != next(iter(KINDS)):  # one kind beside all the bundled problems, for the checks across the bank
        take_only_what_first_assignment_uses(course)
    written = new_problem(find_course(course), f"my-{kind.replace('_', '-')}", kind)
    folder = written[0].parent
    assert (folder / "problem.yaml").read_text().count("#") >= 5  # comments say what the fields do
    fill_in(folder)
    if kind == "implement":
        function = "my_implement"
        (folder / "reference.py").write_text(f"import numpy as np\n\n\ndef {function}(X):\n    return 2 * np.asarray(X)\n")
        (folder / "misconceptions.py").write_text(f"import numpy as np\n\n\ndef {function}_mistake(X):\n"
                                                  "    return 3 * np.asarray(X)\n")
    assert [f for f in findings(course) if str(folder) in f] == []
    with pytest.raises(QkvError, match="already exists"):
        new_problem(find_course(course), folder.name, kind)


def test_new_refuses_unknown_kinds_bad_names_and_the_bundled_course(course):
    with pytest.raises(QkvError, match="unknown kind"):
        new_problem(find_course(course), "x-y", "essay")
    with pytest.raises(QkvError, match="lower-case"):
        new_problem(find_course(course), "Bad Name", "shape")
    with pytest.raises(QkvError, match="course of your own"):
        new_problem(bundled_course(), "x-y", "shape")


def test_a_course_problems_code_travels_in_the_bundle_to_gradescope(course, tmp_path):
    folder = course / "question_bank" / "my-sum"
    new_problem(find_course(course), "my-sum", "numeric")
    fill_in(folder)
    manifest = course / "assignments" / "sums.yaml"
    manifest.write_text("title: Sums\ntrack: numpy\nseed: 4\nproblems: [my-sum, normalize-rows]\n")
    assert qkv(course, "build", "sums").returncode == 0
    with zipfile.ZipFile(course / "dist" / "sums" / "gradescope.zip") as archive:
        assert "bundle/problems/my-sum/hand.py" in archive.namelist()
        root = tmp_path / "autograder"
        archive.extractall(root / "source")
    shutil.rmtree(folder)  # the course's copy is gone: grading must use the bundle's
    (root / "submission").mkdir()
    key = (course / "dist" / "sums" / "key" / "sums.py").read_text()
    (root / "submission" / "s.py").write_text(key)
    from autograder.routes.gradescope import grade_gradescope

    results = grade_gradescope(root, root / "source")
    assert results["score"] == pytest.approx(4.0), results["output"]


# ------------------------------------------------------------------ a first week with qkv init's course


@pytest.fixture(scope="module")
def first_week(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """qkv init's course, built, and a folder of two hand-ins graded as a new instructor grades it: no --roster."""
    from conftest import require_bwrap

    require_bwrap()
    root = tmp_path_factory.mktemp("week") / "c101"
    init_course(root, "Course 101")
    assert qkv(root, "build", "first-assignment").returncode == 0
    submissions = root / "submissions"
    submissions.mkdir()
    key = (root / "dist" / "first-assignment" / "key" / "first_assignment.py").read_text()
    (submissions / "s001.py").write_text(key)
    # normalised over columns, not rows: a mistake some tests catch
    (submissions / "colsoftmax.py").write_text(key + "\n\ndef normalize_rows(X):\n    return X / X.sum(axis=0, keepdims=True)\n")
    return root, qkv(root, "grade", "first-assignment", "submissions")


def test_grading_uses_only_the_roster_course_yaml_names_and_says_which(first_week):
    root, first = first_week
    assert first.returncode == 0, first.stderr
    # qkv init's roster is an example, never a class: without a roster each hand-in is graded under its file name
    assert (root / "roster.example.csv").is_file() and not (root / "roster.csv").exists()
    assert find_course(root).roster is None
    from conftest import gradebook_rows, said

    assert first.stdout.splitlines()[0].startswith("roster: none, so each hand-in is graded under the student id")
    assert "not on the roster" not in first.stdout + first.stderr
    rows = gradebook_rows(root / "grades" / "first-assignment")
    assert set(rows) == {"s001", "colsoftmax"} and {r["status"] for r in rows.values()} == {"graded"}
    # no due date in the assignment qkv init writes, so feedback shows hidden tests' details at once
    page = (root / "grades" / "first-assignment" / "feedback" / "colsoftmax" / "feedback.html").read_text()
    assert "Before the due date" not in page
    assert float(rows["colsoftmax"]["total"]) < float(rows["colsoftmax"]["max"])
    # a roster named in course.yaml is used, and said so
    shutil.copy(root / "roster.example.csv", root / "roster.csv")
    config = root / "course.yaml"
    config.write_text(config.read_text() + "roster: roster.csv\n")
    second = qkv(root, "grade", "first-assignment", "submissions")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == f"roster: {root.resolve() / 'roster.csv'} (from course.yaml)"
    import csv

    with open(root / "grades" / "first-assignment" / "intake.csv", newline="") as handle:
        intake = {r["entry"]: r for r in csv.DictReader(handle)}
    assert intake["colsoftmax.py"]["status"] == "off_roster"
    given = qkv(root, "grade", "first-assignment", "submissions", "--roster", "roster.example.csv")
    assert given.stdout.splitlines()[0] == "roster: roster.example.csv (--roster)"
    # a roster course.yaml names that is not there is an error, never a class graded without it
    (root / "roster.csv").unlink()
    missing = qkv(root, "grade", "first-assignment", "submissions")
    assert missing.returncode == 1
    assert said(missing.stderr) == [f"error: {root.resolve() / 'course.yaml'}: roster: roster.csv: no such file "
                                    "(write your class list there, or remove the line)"]


def test_canvas_export_says_how_to_update_the_assignment_and_where_the_comments_go(first_week):
    import csv

    from autograder.assemble.manifest import parse_manifest
    from conftest import said

    root, first = first_week
    assert first.returncode == 0, first.stderr
    roster = root / "class.csv"
    roster.write_text("id,name,email,canvas_user_id\ns001,Ada,ada@example.edu,\ncolsoftmax,Col,col@example.edu,5551\n")
    exported = root / "grades" / "first-assignment" / "first-assignment-canvas.csv"

    def export(*extra: str) -> tuple[list[str], list[str]]:
        done = qkv(root, "export-grades", "first-assignment", "--format", "canvas", "--roster", str(roster), *extra)
        assert done.returncode == 0, done.stderr
        with open(exported, newline="") as handle:
            return next(csv.reader(handle)), said(done.stderr)

    header, notes = export()
    assert header[-1] == "Attention, first steps"  # a bare title, which Canvas imports as a new assignment
    assert notes[0].startswith("warning: the column 'Attention, first steps' names no Canvas assignment id, so "
                               "Canvas's import makes a NEW assignment of it")
    assert '--column "Attention, first steps (ID)"' in notes[0] and "lms: {canvas_assignment_id: ID}" in notes[0]
    assert any(n.startswith("note: 1 of 2 graded students have no canvas_user_id in the roster (s001), so Canvas's ID "
                            "column is blank for them") and "Canvas user id" in n for n in notes)
    comments = [n for n in notes if n.startswith("note: first-assignment-canvas-comments.csv: ")]
    assert comments and "Canvas's CSV import takes no comments" in comments[0]
    assert "qkv push-grades first-assignment --canvas URL" in comments[0]
    pushed = subprocess.run([str(QKV), "push-grades", "first-assignment", "--canvas", "http://127.0.0.1:9",
                             "--course", "7"], cwd=root, capture_output=True, text=True, timeout=120,
                            env={**__import__("os").environ, "CANVAS_API_TOKEN": "t"})
    assert pushed.returncode == 1 and said(pushed.stderr) == [
        "error: --assignment: which Canvas assignment? give --assignment ID, or set lms: {canvas_assignment_id: ID} "
        "in first-assignment's manifest"]
    # the manifest may name the Canvas assignment: the column then updates it, and nothing warns
    manifest = root / "assignments" / "first-assignment.yaml"
    original = manifest.read_text()
    manifest.write_text(original + "lms: {canvas_assignment_id: 4321}\n")
    try:
        header, notes = export()
        assert header[-1] == "Attention, first steps (4321)"
        assert not [n for n in notes if n.startswith("warning:")]
        header, notes = export("--column", "Week 1 (99)")
        assert header[-1] == "Week 1 (99)" and not [n for n in notes if n.startswith("warning:")]
        for bad, field in (("lms: {canvas_assignment_id: 0}", "lms.canvas_assignment_id"),
                           ("lms: {canvas: 12}", "lms.canvas")):
            manifest.write_text(original + bad + "\n")
            with pytest.raises(QkvError, match=rf"first-assignment.yaml: {field}: "):
                parse_manifest(manifest)
    finally:
        manifest.write_text(original)


ATTEND = """id: attend
title: Attention from its scores
kind: implement
topic: attention/readout
points: 4
difficulty: 1
source: "week 3"
prompt: |
  Implement `attend(S, V)`: the row softmax of the scores $S$ (shape $(\\dots, n_q, n_k)$) times the values $V$.
solution: "softmax_rows(S) @ V"
function: attend
signature: "attend(S, V)"
returns: "array of shape (..., n_q, d_v)"
references: {numpy: reference.attend}
BUILDS_ON
public_tests:
  - {name: two keys, args: [{array: [[0.0, 0.0]]}, {array: [[1, 2], [3, 4]]}], expect: [[2, 3]]}
hidden_tests:
  - {name: a batch, args: [{random: normal, shape: [2, 3, 4], seed: 21}, {random: normal, shape: [2, 4, 5], seed: 22}]}
misconceptions:
  - id: scores-not-weights
    message: "you multiplied the raw scores by the values; the weights are their row softmax"
    implementation: misconceptions.scores_times_values
"""


def attend_problem(course: Path, builds_on: bool) -> Path:
    """A problem of the course's own whose reference imports the bundled softmax_rows by its one name."""
    folder = course / "question_bank" / "attend"
    new_problem(find_course(course), "attend", "implement")
    (folder / "problem.yaml").write_text(ATTEND.replace("BUILDS_ON", "builds_on: [softmax-rows]" if builds_on else ""))
    (folder / "reference.py").write_text("import numpy as np\n\nfrom autograder.references.numpy_ref import softmax_rows\n\n\n"
                                         "def attend(S, V):\n    return softmax_rows(S) @ np.asarray(V, dtype=float)\n")
    (folder / "misconceptions.py").write_text("import numpy as np\n\n\ndef scores_times_values(S, V):\n"
                                              "    return np.asarray(S, dtype=float) @ np.asarray(V, dtype=float)\n")
    return folder


def words(text: str) -> str:
    """Terminal output with rich's wrapping undone (a table's title wraps to the table's width)."""
    return " ".join(text.split())


def test_a_reference_importing_a_bundled_function_builds_and_its_students_are_told_what_to_fix_first(course, tmp_path):
    attend_problem(course, builds_on=True)
    (course / "assignments" / "w3.yaml").write_text(
        'title: "Week 3 [draft]"\ntrack: numpy\nseed: 3\nproblems: [softmax-rows, attend]\n')
    built = qkv(course, "build", "w3")
    assert built.returncode == 0, built.stderr
    assert "Week 3 [draft]:" in words(built.stdout)  # a title's brackets are text, not terminal markup
    key = (course / "dist" / "w3" / "key" / "w3.py").read_text()
    assert "solutions" not in key and "def softmax_rows" in key  # the sandbox has no solutions: the key has its code
    bundle = json.loads((course / "dist" / "w3" / "autograder" / "assignment.json").read_text())
    assert {p["id"]: p["builds_on"] for p in bundle["code"]}["attend"] == ["softmax-rows"]
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "s1.py").write_text(key)
    (subs / "s2.py").write_text("import numpy as np\n\n\ndef softmax_rows(S, mask=None):\n"
                                "    E = np.exp(np.asarray(S, dtype=float))\n    return E / E.sum(axis=-2, keepdims=True)\n\n\n"
                                "def attend(S, V):\n    return softmax_rows(S) @ np.asarray(V, dtype=float)\n")
    graded = qkv(course, "grade", "w3", str(subs))
    assert graded.returncode == 0, graded.stderr
    assert "Week 3 [draft]: 2 submissions" in words(graded.stdout)
    with open(course / "grades" / "w3" / "gradebook.csv", newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert float(rows["s1"]["total"]) == float(rows["s1"]["max"]) and float(rows["s2"]["attend"]) == 0
    output = json.loads((course / "grades" / "w3" / "feedback" / "s2" / "results.json").read_text())["output"]
    assert "fix softmax_rows first: your attend matches the reference with that same mistake inside" in output


def test_a_function_imported_from_the_bundled_references_is_found_without_builds_on(course):
    from autograder.assemble.compose import builds_on, composed_functions

    attend_problem(course, builds_on=False)
    bank = load_course_bank(find_course(course)).bank
    attend, softmax = bank.problems["attend"], bank.problems["softmax-rows"]
    assert attend.builds_on is None and builds_on(attend, [softmax, attend]) == ("softmax-rows",)
    wrong = composed_functions(attend, [softmax])["softmax-rows"]["column-softmax"]
    S, V = np.arange(6.0).reshape(2, 3), np.eye(3)
    assert np.allclose(wrong(S, V), np.exp(S) / np.exp(S).sum(axis=0))  # the mistake, inside attend


def test_the_implement_skeleton_says_what_builds_on_is_for():
    template = (ROOT / "autograder" / "course" / "templates" / "problems" / "implement" / "problem.yaml.j2").read_text()
    lines = template.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# builds_on: "))
    said = " ".join(line.split("#")[-1].strip() for line in lines[start:start + 6])
    assert "fix softmax_rows first" in said and "from autograder.references.numpy_ref import softmax_rows" in said
    # uncommented, it is the field the schema takes
    assert yaml.safe_load(lines[start].removeprefix("# ").split("#")[0]) == {"builds_on": ["softmax-rows"]}


def test_code_that_imports_the_references_old_name_is_told_the_new_one_in_a_line(small_course):
    """`solutions` is no importable module (no import hook makes it one): a course's reference.py written with it
    gets, from `qkv validate` as users run it, one line naming the import to write."""
    folder = attend_problem(small_course, builds_on=False)
    reference = folder / "reference.py"
    reference.write_text(reference.read_text().replace("from autograder.references.numpy_ref", "from solutions.numpy_ref"))
    checked = qkv(small_course, "validate")
    said = [line for line in (checked.stdout + checked.stderr).splitlines() if "imports 'solutions'" in line]
    assert checked.returncode != 0 and "Traceback" not in checked.stderr
    assert len(said) == 1 and said[0].startswith(f"{folder / 'problem.yaml'}: references.numpy:")
    assert "(`from autograder.references.numpy_ref import softmax_rows`)" in said[0]


def test_the_problem_files_short_name_is_the_very_function_code_imports():
    from autograder.kinds.resolve import resolve
    from autograder.references.numpy_ref import softmax_rows

    assert resolve("solutions.numpy_ref.softmax_rows") is softmax_rows
