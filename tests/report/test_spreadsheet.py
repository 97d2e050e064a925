"""Every CSV qkv writes opens in a spreadsheet as data: the formula rule (report/spreadsheet.py) cell by cell, no
other module writing CSV around it, and a class whose roster names, sections, emails and file names are
formulas graded, regraded, exported and checked for copying with the real commands, every CSV it leaves read back.

The payloads are tests/fixtures/classroom/formulas.py.
"""

from __future__ import annotations

import ast
import csv
import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from autograder.report.spreadsheet import csv_text, safe_cell
from conftest import QKV, ROOT, key_module, replace_function
from fixtures.classroom import formulas as fx
from autograder.references import misconceptions

pytestmark = pytest.mark.slow  # grades a class whose every name is a formula

# ------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("lead", ["=", "+", "-", "@", "\t", "\r", "\0", "＝", "＋", "－", "＠"])
def test_each_formula_start_gets_a_quote(lead):
    assert safe_cell(lead + "SUM(A1:A9)") == "'" + lead + "SUM(A1:A9)"


@pytest.mark.parametrize("cell", fx.PAYLOADS + fx.DISGUISED + fx.NOT_NUMBERS)
def test_formulas_and_formula_like_text_are_made_text(cell):
    assert safe_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", fx.NUMBERS + fx.TEXT)
def test_numbers_and_text_stay_as_they_are(cell):
    assert safe_cell(cell) == cell


def test_numbers_and_none_given_as_values():
    assert [safe_cell(v) for v in (-2.5, 3, -0.0, None)] == ["-2.5", "3", "-0.0", ""]


def test_quotes_commas_and_newlines_survive_a_csv_round_trip():
    rows = [["=a\n\"b\",c", 'x\r\ny', '"q"', "-1", "- 1,2", "plain"], ["@x", "", "a,b", "\"=1\"", "'", "-"]]
    text = csv_text(rows)
    assert list(csv.reader(io.StringIO(text, newline=""))) == [[safe_cell(c) for c in row] for row in rows]
    assert [row[0] for row in csv.reader(io.StringIO(text, newline=""))] == ["'=a\n\"b\",c", "'@x"]


def test_line_ends_are_the_callers():
    assert csv_text([["a", "-1"], ["b", "=1"]], line_end="\r\n") == "a,-1\r\nb,'=1\r\n"
    assert csv_text([["a"], ["b"]]) == "a\nb\n"


def _csv_writers(path: Path) -> list[str]:
    """Each place `path` makes a csv writer (csv.writer, csv.DictWriter, or either imported from csv or _csv)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name in ("csv", "_csv")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("csv", "_csv"):
            found += [f"{path}:{node.lineno} from {node.module} import {a.name}" for a in node.names
                      if a.name in ("writer", "DictWriter", "*")]
        if (isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter")
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            found.append(f"{path}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_module_writes_csv_but_through_the_rule():
    modules = sorted((ROOT / "autograder").rglob("*.py"))
    assert len(modules) > 50  # the package, not an empty folder
    writers = [w for path in modules for w in _csv_writers(path)]
    assert writers and all(w.startswith(str(ROOT / "autograder" / "report" / "spreadsheet.py")) for w in writers), writers


# ------------------------------------------------------------------------- a class of formulas, end to end

FORMULA = re.compile(r"[\t\r\0]|[\s\u200b\ufeff]*[=+\-@＝＋－＠]")
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def formula_cells(path: Path) -> list[str]:
    """The cells of a CSV file that a spreadsheet would run as formulas (numbers are numbers)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [cell for row in csv.reader(handle) for cell in row
                if FORMULA.match(cell) and not NUMBER.fullmatch(cell)]


def qkv(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(QKV), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def formula_class(built_numpy, tmp_path_factory):
    """Graded with the real qkv, regraded after the last student handed in worse work, exported three ways,
    and checked for copying: the folder holding every CSV written."""
    assignment = built_numpy.assignment
    root = tmp_path_factory.mktemp("formulas")
    roster = fx.roster_csv(root / "roster.csv")
    module = assignment.module_name
    subs = fx.class_folder(root / "subs", module, key_module(assignment))
    out, dist = root / "grades", str(built_numpy.out)
    grade = ["grade", "attention-numpy", str(subs), "--dist", dist, "--out", str(out), "--roster", str(roster),
             "--jobs", "2", "--timeout", "5"]
    qkv(*grade)
    last = fx.STUDENTS[-1][0]
    fx.hand_in(subs, module, last).write_text(
        replace_function(key_module(assignment), "softmax_rows", misconceptions.softmax_over_columns))
    qkv(*grade)
    for fmt in ("canvas", "moodle", "csv"):
        qkv("export-grades", "attention-numpy", "--format", fmt, "--grades", str(out),
            *(["--column", "Attention HW (4321)"] if fmt == "canvas" else []))
    qkv("copying", "attention-numpy", str(subs), "--roster", str(roster), "--grades", str(out), "--dist", dist)
    return out


def test_no_csv_the_class_leaves_holds_a_formula(formula_class):
    written = sorted(formula_class.rglob("*.csv"))
    names = {p.name for p in written}
    assert {"intake.csv", "gradebook.csv", "changes.csv", "copying.csv", "attention-numpy-canvas.csv",
            "attention-numpy-canvas-comments.csv", "attention-numpy-moodle.csv", "attention-numpy-csv.csv"} <= names
    assert {path.name: formula_cells(path) for path in written} == {path.name: [] for path in written}


def test_the_formulas_reached_the_files_as_text(formula_class):
    cells = set()
    for path in formula_class.rglob("*.csv"):
        with open(path, newline="", encoding="utf-8") as handle:
            cells |= {cell for row in csv.reader(handle) for cell in row}
    for _, payload, email, _ in fx.STUDENTS:
        assert "'" + payload in cells and "'" + email in cells
    assert {"'=HYPERLINK(\"x\",\"y\").py", "'+cmd.py", "'@SUM(1).txt"} <= cells  # the file names, in intake.csv
    with open(formula_class / "changes.csv", newline="") as handle:
        change = next(row for row in csv.DictReader(handle) if row["student"] == fx.STUDENTS[-1][0])["change"]
    assert change.startswith("-") and float(change) < 0  # a number: left for the spreadsheet to read as one


def test_canvas_still_reads_its_columns_and_scores(formula_class, built_numpy):
    with open(formula_class / "attention-numpy-canvas.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention HW (4321)"]
    assert rows[1][:5] == ["Points Possible", "", "", "", ""] and float(rows[1][5]) == built_numpy.assignment.max_points
    by_sis = {row[2]: row for row in rows[2:]}
    assert set(by_sis) == {s for s, *_ in fx.STUDENTS}
    for student, payload, email, lms_id in fx.STUDENTS:
        assert by_sis[student][:5] == ["'" + payload, lms_id, student, "'" + email, "'" + payload]
        assert NUMBER.fullmatch(by_sis[student][5]) and 0 <= float(by_sis[student][5]) <= float(rows[1][5])
    assert float(by_sis[fx.STUDENTS[-1][0]][5]) < float(by_sis[fx.STUDENTS[0][0]][5])  # the worse hand-in
