"""Courses of one's own: found as git finds a repository, a bank that takes the bundled problems as a library,
problem folders with their own code, proved by validate, carried by the bundle wherever grading runs."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from autograder.kinds import KINDS
from autograder.bank.validate import validate_report
from autograder.course.bank import load_course_bank
from autograder.course.find import bundled_course, find_course
from autograder.course.scaffold import init_course, new_problem
from autograder.errors import QkvError
from conftest import QKV


def qkv(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(QKV), *args], cwd=course, capture_output=True, text=True, timeout=600)


@pytest.fixture
def course(tmp_path) -> Path:
    root = tmp_path / "c101"
    init_course(root, "Course 101")
    return root


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


def test_every_command_names_its_course_first(course, tmp_path):
    inside = qkv(course / "assignments", "validate")
    assert inside.returncode == 0, inside.stderr
    assert inside.stderr.splitlines()[0] == f"course: Course 101 ({course.resolve()})"
    outside = qkv(tmp_path, "validate")
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


def test_validate_rejects_a_missing_reference_a_failing_one_and_an_uncaught_mistake(course):
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


@pytest.mark.parametrize("kind", KINDS)
def test_qkv_new_writes_a_skeleton_validate_accepts_once_filled_in(course, kind):
    written = new_problem(find_course(course), f"my-{kind.replace('_', '-')}", kind)
    folder = written[0].parent
    assert (folder / "problem.yaml").read_text().count("#") >= 5  # comments say what the fields do
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
