"""Intake: every file a class hands in gets one stable id and one row or one note, whatever its name or tree.

Each hostile layout is built here, one mechanism per test: names that clean to the
same id, names that are not UTF-8, symlinks, a folder called submitted/, stray
notebooks, folders thousands of levels deep, empty and odd files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.grade.intake import MAX_DEPTH, discover, display_name, intake, safe_student_id
from autograder.sandbox.worker.proctools import empty_folder
from conftest import HOSTILE

GOOD = "def double(x):\n    return 2 * x\n"


def ids(folder: Path, module: str | None = None) -> dict[str, Path | None]:
    found, _ = discover(folder, module)
    return {student: work for student, work, _ in found}


def notes(folder: Path) -> dict[str, str]:
    return {n.where: n.what for n in intake(folder).notes}


def test_safe_names_are_their_own_ids_and_others_get_a_digest():
    assert safe_student_id("s1234567") == "s1234567"
    assert safe_student_id("Alice_Smith") == "Alice_Smith"
    unsafe = safe_student_id("../../etc/passwd")
    assert unsafe.startswith("etc_passwd-") and "/" not in unsafe
    assert safe_student_id("Alice Smith") != safe_student_id("Alice_Smith")
    assert safe_student_id("Alice Smith") == safe_student_id("Alice Smith")  # the same on every run
    assert safe_student_id("...").startswith("unnamed-")


def test_names_that_clean_alike_never_take_each_others_rows(tmp_path):
    (tmp_path / "Alice_Smith.py").write_text(GOOD)
    first = ids(tmp_path)
    (tmp_path / "Alice Smith.py").write_text(GOOD + "# another student\n")  # arrives later, on a rerun
    second = ids(tmp_path)
    assert first == {"Alice_Smith": tmp_path / "Alice_Smith.py"}
    assert second["Alice_Smith"] == tmp_path / "Alice_Smith.py"
    assert second[safe_student_id("Alice Smith")] == tmp_path / "Alice Smith.py"
    assert len(second) == 2


def test_a_latin1_name_with_latin1_content_gets_a_printable_row(tmp_path):
    name = os.fsdecode(b"J\xfcrgen.py")
    (tmp_path / name).write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (submission,) = intake(tmp_path).submissions
    assert submission.status == "not_utf8"
    submission.message.encode("utf-8")  # no surrogate: the message can be written to any page
    assert "J\ufffdrgen.py" in submission.message
    assert submission.student.startswith("J_rgen-")


def test_control_characters_in_names_are_shown_escaped():
    assert display_name("a\x1b]0;pwned\x07.py") == "a\\x1b]0;pwned\\x07.py"


def test_a_symlinked_submission_is_named_in_the_report(tmp_path):
    (tmp_path / "real.py").write_text(GOOD)
    (tmp_path / "link.py").symlink_to("/etc/passwd")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "work.py").symlink_to(tmp_path / "real.py")
    report = intake(tmp_path)
    assert {s.student for s in report.submissions} == {"real", "folder"}
    found = notes(tmp_path)
    assert "symbolic link" in found["link.py"] and "symbolic link" in found["folder/work.py"]
    folder = next(s for s in report.submissions if s.student == "folder")
    assert folder.status == "missing"


def test_a_student_folder_named_submitted_is_just_a_student(tmp_path):
    (tmp_path / "alice.py").write_text(GOOD)
    (tmp_path / "bob.py").write_text(GOOD)
    (tmp_path / "submitted").mkdir()
    (tmp_path / "submitted" / "work.py").write_text(GOOD)
    assert set(ids(tmp_path)) == {"alice", "bob", "submitted"}


def test_nbgrader_submitted_layout_is_understood(tmp_path):
    folder = tmp_path / "submitted" / "s123" / "attention-numpy"
    folder.mkdir(parents=True)
    (folder / "attention_numpy.ipynb").write_text("{}")
    assert list(ids(tmp_path)) == ["s123"]


def test_the_real_work_beats_a_stray_notebook(tmp_path):
    folder = tmp_path / "s1"
    folder.mkdir()
    (folder / "Untitled.ipynb").write_text('{"cells": []}')
    (folder / "attention_numpy.py").write_text(GOOD)
    (folder / "notes.py").write_text("x = 1\n")
    assert ids(tmp_path, "attention_numpy")["s1"] == folder / "attention_numpy.py"
    assert ids(tmp_path)["s1"].suffix == ".py"
    assert "not graded: " in notes(tmp_path)["s1/attention_numpy.py"]


def test_a_notebook_with_no_code_cells_is_an_empty_program(tmp_path):
    (tmp_path / "s1.ipynb").write_text('{"cells": [{"cell_type": "markdown", "source": "hi", "metadata": {}}]}')
    (submission,) = intake(tmp_path).submissions
    assert submission.status == "ok" and submission.program.steps == ()


def test_a_cell_of_forty_thousand_blank_lines_is_read_as_it_stands(tmp_path):
    # tests/fixtures/submissions/blank_lines.ipynb: the look for magics once took minutes on it (a quadratic search;
    # tests/runtime/test_runtime.py checks the search's matches stay on one line)
    (tmp_path / "s1.ipynb").write_bytes((HOSTILE / "blank_lines.ipynb").read_bytes())
    (submission,) = intake(tmp_path).submissions
    (step,) = submission.program.steps
    assert submission.status == "ok" and step.action == "python" and step.text == "\n" * 40000 + "x = 7 % 2"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1100])
def test_a_folder_tree_of_any_depth_is_searched_only_so_deep(tmp_path, depth):
    student = tmp_path / "deep"
    os.makedirs(student)
    fd = os.open(student, os.O_RDONLY)
    try:  # relative mkdirs: the full path would pass PATH_MAX long before 1,100 levels
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("work.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write(GOOD)
    finally:
        os.close(fd)
    (tmp_path / "alice.py").write_text(GOOD)
    try:
        report = intake(tmp_path)
    finally:
        assert empty_folder(str(student))  # pytest's own clean-up recurses, and 1,100 levels are too deep for it
    rows = {s.student: s for s in report.submissions}
    assert rows["alice"].status == "ok" and rows["deep"].status == "missing"
    assert any("folders deep" in n.what for n in report.notes)


def test_files_that_cannot_be_graded_each_get_a_row(tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x01")
    (tmp_path / "fifo.py").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo.py")  # reading it would block for ever
    (tmp_path / "notes.txt").write_text("not a submission")
    report = intake(tmp_path)
    rows = {s.student: s.status for s in report.submissions}
    assert rows == {"empty": "empty", "binary": "binary"}
    found = notes(tmp_path)
    assert "not a file or folder" in found["fifo.py"] and "not a .py" in found["notes.txt"]
