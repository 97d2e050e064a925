"""benchmarks/grade.py: its arguments, the nbgrader comparison it may leave out, and the report of what it measured.

A whole run, even of one submission, builds an assignment and starts `qkv grade` three times (a minute and more
on a busy two-core machine), so the parts that decide what runs and what is reported are tested here, on their own.
"""

from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def grade_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_grade", ROOT / "benchmarks" / "grade.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURE = {"submissions": 3, "wall_s": 1.5, "per_second": 2.0, "peak_memory_mb": 300}


def test_nbgrader_0_leaves_the_comparison_out_and_the_report_says_only_what_ran(grade_benchmark, tmp_path):
    args = grade_benchmark.parse_args(["--class-size", "3", "--nbgrader", "0", "--results", str(tmp_path / "g.json")])
    assert (args.class_size, args.nbgrader, args.results) == (3, 0, tmp_path / "g.json")
    # nothing is graded, nothing is read: there is no build at this path
    assert grade_benchmark.nbgrader_figures(tmp_path / "no-build", args.nbgrader, tmp_path) == {}
    assert list(tmp_path.iterdir()) == []
    figures = {"qkv_py": FIGURE, "qkv_py_mixed": FIGURE, "qkv_notebooks": {**FIGURE, "submissions": 4}}
    text = grade_benchmark.report(figures)
    assert text.splitlines()[2:] == ["| qkv grade, .py files | 3 | 1.5 | 2.0 | 300 |",
                                     "| qkv grade, .py files, mixed class | 3 | 1.5 | 2.0 | 300 |",
                                     "| qkv grade, notebooks | 4 | 1.5 | 2.0 | 300 |"]
    compared = grade_benchmark.report({**figures, "qkv_same_notebooks": FIGURE, "nbgrader_over_qkv": 7.5,
                                       "nbgrader_autograde": {"submissions": 3, "wall_s": 11.2, "per_second": 0.27}})
    assert "| nbgrader autograde, same notebooks | 3 | 11.2 | 0.27 | - |" in compared
    assert compared.endswith("nbgrader autograde takes 7.5x as long as qkv grade on the same notebooks.")


@pytest.mark.parametrize("argv", [["--class-size", "0"], ["--nbgrader", "-1"], ["--rounds", "0"]])
def test_counts_that_measure_nothing_are_refused_before_anything_runs(grade_benchmark, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        grade_benchmark.parse_args(argv)
    assert stop.value.code == 2 and "at least" in capsys.readouterr().err

