"""benchmarks/grade.py: its arguments, the nbgrader comparison it may leave out, and the report of what it measured.

A whole run, even of one submission, builds an assignment and starts `qkv grade` three times (a minute and more
on a busy two-core machine), so the parts that decide what runs and what is reported are tested here, on their own;
`--baseline` once more in a small run of its own, two submissions a class (marked slow).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

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


def test_baseline_only_without_a_baseline_and_a_baseline_that_is_no_commit_are_refused_in_one_line(
        grade_benchmark, capsys):
    with pytest.raises(SystemExit) as stop:
        grade_benchmark.parse_args(["--baseline-only"])
    assert stop.value.code == 2 and "--baseline-only needs --baseline REV" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        grade_benchmark.commit_of("no-such-revision")
    assert str(stop.value) == f"--baseline no-such-revision: no such commit in {ROOT}"


def baseline_figure(rev: str, ratio: float = 1.0) -> dict:
    medians = {measure: {f"{label}_{name}": (2.0 if label == "baseline" else 2.0 * ratio)
                         for label in ("baseline", "this") for name in ("py", "nb", "mixed")}
               for measure in ("wall_s", "grader_cpu_s")}
    return {"rev": rev, "problems": 36, "submissions": 3, "rounds": 1, "medians": medians,
            "ratios": {measure: dict.fromkeys(("py", "nb", "mixed"), ratio) for measure in medians},
            "same_totals": {"py": True, "nb": True, "mixed": False}}


def test_the_report_of_a_baseline_gives_each_class_and_whether_the_totals_agree(grade_benchmark):
    lines = grade_benchmark.report({"baseline": baseline_figure("4c63494", 1.5)}).splitlines()
    assert lines[-4:] == [
        "On the 36 problems of 4c63494's attention-numpy, 3 submissions, medians of 1 (then -> now, ratio):",
        "  wall s: .py 2.0 -> 3.0 (1.5x); notebooks 2.0 -> 3.0 (1.5x); mixed class 2.0 -> 3.0 (1.5x)",
        "  CPU s, the grader process: .py 2.0 -> 3.0 (1.5x); notebooks 2.0 -> 3.0 (1.5x); "
        "mixed class 2.0 -> 3.0 (1.5x)",
        "  every student's total the same in both: .py yes; notebooks yes; mixed class NO"]
    # a comparison measured before the mixed class was part of it reads as it did
    old = baseline_figure("efa3975")
    for by_class in (*old["medians"].values(), *old["ratios"].values()):
        for name in [n for n in by_class if n.endswith("mixed")]:
            del by_class[name]
    del old["same_totals"]
    assert grade_benchmark.report({"baseline": old}).splitlines()[-1] == \
        "  CPU s, the grader process: .py 2.0 -> 2.0 (1.0x); notebooks 2.0 -> 2.0 (1.0x)"


def test_a_new_baseline_keeps_the_earlier_ones_by_revision_and_one_of_the_same_revision_replaces_it(grade_benchmark):
    efa, first, again = baseline_figure("efa3975"), baseline_figure("4c63494", 1.01), baseline_figure("4c63494", 0.99)
    kept = grade_benchmark.kept_baselines
    assert kept({}, {}) == {}
    assert kept({"baseline": efa}, {"baseline": first}) == {"baseline": first, "earlier_baselines": {"efa3975": efa}}
    assert kept({"baseline": first, "earlier_baselines": {"efa3975": efa}}, {"baseline": again}) == \
        {"baseline": again, "earlier_baselines": {"efa3975": efa}}
    # figures measured without --baseline leave the last comparison where it was
    assert kept({"baseline": first, "earlier_baselines": {"efa3975": efa}}, {"qkv_py": FIGURE}) == \
        {"baseline": first, "earlier_baselines": {"efa3975": efa}}


@pytest.mark.slow  # two builds and six runs of `qkv grade`
def test_baseline_only_grades_each_class_with_both_versions_and_keeps_the_files_other_figures(grade_benchmark,
                                                                                               tmp_path):
    """A small run against this checkout's HEAD: the old engine unpacked and run from there (the run stops if
    another would load), each class graded by both, the ratios those of the medians, the keys' totals the same."""
    results = tmp_path / "grade.json"
    efa = baseline_figure("efa3975")
    results.write_text(json.dumps({"machine": "elsewhere", "qkv_py": FIGURE, "baseline": efa}))
    grade_benchmark.main(["--baseline", "HEAD", "--baseline-only", "--rounds", "1", "--class-size", "2",
                          "--results", str(results)])
    figures = json.loads(results.read_text())
    assert (figures["machine"], figures["qkv_py"], figures["earlier_baselines"]) == ("elsewhere", FIGURE,
                                                                                   {"efa3975": efa})
    b = figures["baseline"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert (b["rev"], b["commit"], b["submissions"], b["rounds"]) == ("HEAD", head.strip(), 2, 1)
    classes = ("py", "nb", "mixed")
    for measure in ("wall_s", "grader_cpu_s"):
        runs = b["runs"][measure]
        assert sorted(runs) == sorted(f"{label}_{name}" for label in ("baseline", "this") for name in classes)
        assert all(len(values) == 1 and values[0] > 0 for values in runs.values())
        assert b["ratios"][measure] == {name: round(b["medians"][measure][f"this_{name}"]
                                                    / b["medians"][measure][f"baseline_{name}"], 3)
                                        for name in classes}
    assert b["same_totals"]["py"] and b["same_totals"]["nb"]


# --- benchmarks/serve.py: the service under a class's load, and across a kill -9 --------------------------------------

@pytest.fixture(scope="module")
def serve_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_serve", ROOT / "benchmarks" / "serve.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv", [["--students", "0"], ["--attempts", "0"], ["--clients", "0"], ["--jobs", "0"],
                                  ["--poll", "0"]])
def test_a_service_benchmark_that_would_measure_nothing_is_refused_before_anything_runs(serve_benchmark, argv,
                                                                                       capsys):
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(argv)
    said = capsys.readouterr().err
    assert stop.value.code == 2 and (f"{argv[0]} must be at least 1" in said or "--poll must be more than 0" in said)


@pytest.mark.slow  # a build, `qkv grade` once and `qkv serve` four times
def test_the_service_benchmark_in_small_grades_every_attempt_once_for_its_own_student_across_a_kill_9(tmp_path):
    """The quick run users can make (10 students, 2 attempts each, 5 clients) through `qkv serve` itself: nothing
    lost, duplicated or shown to another student, in each of the three runs; the kill came after half were in."""
    results = tmp_path / "serve.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--students", "10", "--attempts",
                           "2", "--clients", "5", "--results", str(results)], capture_output=True, text=True,
                          timeout=1800, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    for run, accepted, students in (("alone", 6, 2), ("class", 20, 10), ("kill9", 20, 10)):
        f = figures[run]
        counts = (f["accepted"], f["graded"], f["lost"], f["duplicated"], f["wrong_student"], f["client_failures"])
        assert counts == (accepted, accepted, 0, 0, 0, 0), (run, f)
        # every student but the first to finish tried another's attempt, and was told there is no such attempt
        assert f["other_students_attempts_refused"] == students - 1, (run, f)
        assert f["upload_to_score_s"]["count"] == f["received_to_graded_s"]["count"] == accepted, (run, f)
    kill = figures["kill9"]
    # at least half were in; at most one more per client was on its way
    assert kill["graded_exactly_once"] and 10 <= kill["killed_after_accepted"] <= 15, kill
    assert figures["sample_scores"][0] == 137  # ada.py, the first sample: the reference is qkv grade's own
    assert "| the class, kill -9 midway and a restart | 20 of 20 | 0 | 0 | 0 |" in done.stdout
