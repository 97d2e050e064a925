"""benchmarks/grade.py: its arguments, the nbgrader comparison it may leave out, the classes it writes (no two files
the same), the stages `qkv grade --timings` reports, and the report of what it measured.

A whole run, even of one submission, builds an assignment and starts `qkv grade` five times (a minute and more
on a busy two-core machine), so the parts that decide what runs and what is reported are tested here, on their own;
`--baseline` once more in a small run of its own, two submissions a class, and the loop solution graded (both
marked slow).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.assemble.solution_key import key_module
from autograder.assemble.manifest import find_manifest, resolve_assignment
from conftest import QKV, ROOT, gradebook_rows, load_bank_strict


@pytest.fixture(scope="module")
def grade_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_grade", ROOT / "benchmarks" / "grade.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURE = {"submissions": 3, "wall_s": 1.5, "ms_per_submission": 500.0, "per_second": 2.0, "peak_memory_mb": 300}
NBGRADER = {"submissions": 3, "wall_s": 11.2, "ms_per_submission": 3733.33, "per_second": 0.27}


def test_nbgrader_0_leaves_the_comparison_out_and_the_report_says_only_what_ran(grade_benchmark, tmp_path):
    args = grade_benchmark.parse_args(["--class-size", "3", "--nbgrader", "0", "--results", str(tmp_path / "g.json")])
    assert (args.class_size, args.nbgrader, args.results) == (3, 0, tmp_path / "g.json")
    # nothing is graded, nothing is read: there is no build at this path
    assert grade_benchmark.nbgrader_figures(tmp_path / "no-build", args.nbgrader, tmp_path) == {}
    assert list(tmp_path.iterdir()) == []
    figures = {"qkv_py": FIGURE, "qkv_py_loops": {**FIGURE, "ms_per_submission": 750.0}, "qkv_py_mixed": FIGURE,
               "qkv_notebooks": {**FIGURE, "submissions": 4}}
    assert grade_benchmark.with_nbgrader_ratios(figures) == figures  # no nbgrader, no ratio
    text = grade_benchmark.report(figures)
    assert text.splitlines() == [
        "| what | submissions | wall s | ms per submission | per second | peak memory MB | nbgrader's ms over qkv's |",
        "|---|---|---|---|---|---|---|",
        "| qkv grade, .py files, answer key | 3 | 1.5 | 500.0 | 2.0 | 300 | - |",
        "| qkv grade, .py files, loop solution | 3 | 1.5 | 750.0 | 2.0 | 300 | - |",
        "| qkv grade, .py files, mixed class | 3 | 1.5 | 500.0 | 2.0 | 300 | - |",
        "| qkv grade, notebooks | 4 | 1.5 | 500.0 | 2.0 | 300 | - |"]
    compared = grade_benchmark.report({**figures, "qkv_same_notebooks": FIGURE, "nbgrader_over_qkv": 7.5,
                                       "nbgrader_autograde": NBGRADER})
    assert "| nbgrader autograde, same notebooks | 3 | 11.2 | 3733.33 | 0.27 | - | - |" in compared
    assert compared.endswith("nbgrader autograde takes 7.5x as long as qkv grade on the same notebooks.")


def test_a_class_this_run_could_not_measure_is_a_row_that_says_why(grade_benchmark):
    figures = {"qkv_py": FIGURE, "qkv_py_as_user": {"not_measured": "no user qkv-tester"},
               "qkv_same_notebooks": FIGURE, "nbgrader_autograde": NBGRADER}
    rated = grade_benchmark.with_nbgrader_ratios(figures)
    assert rated["qkv_py_as_user"] == {"not_measured": "no user qkv-tester"}
    assert rated["qkv_py"]["nbgrader_ratio_per_submission"] == 7.5
    assert ("| qkv grade, .py files, answer key, as a normal user | not measured: no user qkv-tester | | | | | |"
            in grade_benchmark.report(rated).splitlines())


@pytest.mark.slow  # `qkv grade` on two submissions, as the unprivileged user
def test_the_key_class_is_graded_by_the_unprivileged_user_in_a_folder_of_theirs(grade_benchmark, built_numpy,
                                                                                tmp_path, monkeypatch):
    as_user = sys.modules["as_user"]
    key = key_module(built_numpy.assignment)
    why = as_user.why_not()
    if why is not None:  # a run as a user (or without the user) says so instead of measuring
        assert grade_benchmark.key_as_user(built_numpy.out, key, 2, tmp_path, True) == {
            "qkv_py_as_user": {"not_measured": why}}
        return
    (tmp_path / "stage").mkdir()
    who = subprocess.run(as_user.as_user(["id", "-un"], tmp_path, tmp_path / "stage"), capture_output=True,
                         text=True)
    assert who.stdout.strip() == as_user.USER, who.stderr
    made, original = [], tempfile.mkdtemp

    def mkdtemp(**options):
        made.append(Path(original(**options)))
        return str(made[-1])

    monkeypatch.setattr(grade_benchmark.tempfile, "mkdtemp", mkdtemp)
    figure = grade_benchmark.key_as_user(built_numpy.out, key, 2, tmp_path, True)["qkv_py_as_user"]
    assert figure["submissions"] == 2 and figure["isolation"] == "bwrap", figure
    assert figure["stages"]["sandbox"]["load"] > 0 and figure["stages"]["grader"]["score"] > 0
    assert len(made) == 1 and not made[0].exists(), "the user's folder is removed after"


def test_each_class_gets_nbgrader_s_time_per_notebook_over_its_own_per_submission(grade_benchmark):
    figures = {"qkv_py": FIGURE, "qkv_py_loops": {**FIGURE, "ms_per_submission": 1000.0},
               "qkv_same_notebooks": {**FIGURE, "ms_per_submission": 373.333}, "nbgrader_autograde": NBGRADER,
               "nbgrader_over_qkv": 10.0}
    rated = grade_benchmark.with_nbgrader_ratios(figures)
    assert {key: f.get("nbgrader_ratio_per_submission") for key, f in rated.items() if isinstance(f, dict)} == \
        {"qkv_py": 7.5, "qkv_py_loops": 3.7, "qkv_same_notebooks": 10.0, "nbgrader_autograde": None}
    assert figures["qkv_py"] == FIGURE  # the figures given stay as they were
    lines = grade_benchmark.report(rated).splitlines()
    assert "| qkv grade, .py files, loop solution | 3 | 1.5 | 1000.0 | 2.0 | 300 | 3.7 |" in lines
    assert "| qkv grade, nbgrader notebooks | 3 | 1.5 | 373.333 | 2.0 | 300 | 10.0 |" in lines


def test_every_copy_of_a_class_is_a_file_of_its_own_and_a_notebook_stays_a_notebook(grade_benchmark, tmp_path):
    py = grade_benchmark.distinct_copies(["def f():\n    return 1\n", "x = 2\n"], 5)
    assert len(set(py)) == 5
    assert py[3] == "# submission 3\nx = 2\n" and py[4] == "# submission 4\ndef f():\n    return 1\n"
    cells = [nbformat.v4.new_markdown_cell("# intro"), nbformat.v4.new_code_cell("import numpy as np"),
             nbformat.v4.new_code_cell("def f():\n    return 1"), nbformat.v4.new_code_cell("ANSWERS = {}")]
    cells[0].metadata["qkv"], cells[1].metadata["qkv"] = {"role": "intro"}, {"role": "setup"}
    cells[2].metadata["qkv"] = cells[3].metadata["qkv"] = {"role": "work"}
    notebook = nbformat.writes(nbformat.v4.new_notebook(cells=cells))
    copies = grade_benchmark.distinct_copies([notebook], 3, ".ipynb")
    assert len(set(copies)) == 3
    for i, copy in enumerate(copies):
        read = nbformat.reads(copy, as_version=4)
        nbformat.validate(read)
        # the first work cell, and only it, starts with the copy's number
        assert [c.source for c in read.cells] == ["# intro", "import numpy as np",
                                                 f"# submission {i}\ndef f():\n    return 1", "ANSWERS = {}"]
    folder = grade_benchmark.write_class(tmp_path / "class", [notebook], 2, ".ipynb")
    assert sorted(p.name for p in folder.iterdir()) == ["s0000.ipynb", "s0001.ipynb"]
    assert (folder / "s0001.ipynb").read_text() == copies[1]


def test_the_loop_solution_comes_with_the_key_s_written_answers_and_none_of_its_functions(grade_benchmark):
    key = 'import numpy as np\n\ndef softmax_rows(S):\n    return "KEY-ONLY"\n\nSTUDENT_ID = ""\nANSWERS = {"a": 1}\n'
    submission = grade_benchmark.loop_submission(key)
    assert submission.startswith(grade_benchmark.LOOP_SOLUTION.read_text())
    assert submission.endswith('\n\nSTUDENT_ID = ""\nANSWERS = {"a": 1}\n') and "KEY-ONLY" not in submission
    with pytest.raises(SystemExit, match="no line 'STUDENT_ID = \"\"'"):
        grade_benchmark.loop_submission("ANSWERS = {}\n")


TIMINGS = {"submissions": 4, "wall_s": 2.0, "cpu_s": 1.0,
           "grader": {"start": 0.8, "intake": 0.04, "send": 0.03, "receive": 0.11, "score": 0.32, "gradebook": 0.2,
                      "pages": 0.31, "class": 0.02},
           "sandbox": {"jobs": 4, "handler_cpu_s": 0.41, "load_cpu_s": 1.5, "calls_cpu_s": 2.2}}
STAGES = {"grader": {"start": 200.0, "intake": 10.0, "send": 7.5, "receive": 27.5, "score": 80.0, "gradebook": 50.0,
                     "pages": 77.5, "class": 5.0},
          "sandbox": {"handler": 102.5, "load": 375.0, "calls": 550.0}}


def test_a_timings_file_becomes_milliseconds_per_submission_by_stage(grade_benchmark, tmp_path):
    path = tmp_path / "timings.json"
    path.write_text(json.dumps(TIMINGS))
    assert grade_benchmark.read_stages(path) == STAGES
    for broken in ("{", json.dumps({**TIMINGS, "submissions": 0}), json.dumps({**TIMINGS, "grader": [1, 2]}),
                   json.dumps({k: v for k, v in TIMINGS.items() if k != "sandbox"})):
        path.write_text(broken)
        with pytest.raises(SystemExit, match="not the timings `qkv grade --timings` writes"):
            grade_benchmark.read_stages(path)


FAKE_QKV = """
import csv, json, sys
from pathlib import Path
args = sys.argv[1:]
subs, out = Path(args[2]), Path(args[args.index("--out") + 1])
out.mkdir()
with open(out / "gradebook.csv", "w", newline="") as handle:
    rows = csv.writer(handle)
    rows.writerow(["student", "total", "isolation"])
    rows.writerows([p.stem, "1", "bwrap"] for p in sorted(subs.iterdir()))
if "--timings" in args:
    Path(args[args.index("--timings") + 1]).write_text(json.dumps(TIMINGS))
print("QKV-GRADER-CPU 0.5", file=sys.stderr)
"""


def test_a_graded_class_carries_the_stages_qkv_grade_reported(grade_benchmark, tmp_path):
    """timed_grade passes --timings to the command only when asked, and reads what it wrote (here a stand-in that
    writes a gradebook and the made-up timings)."""
    fake = tmp_path / "fake_qkv.py"
    fake.write_text(f"TIMINGS = {TIMINGS!r}\n{FAKE_QKV}")
    subs = grade_benchmark.write_class(tmp_path / "subs", ["x = 1\n"], 4)
    plain = grade_benchmark.timed_grade(tmp_path / "dist", subs, tmp_path / "out", [sys.executable, str(fake)])
    assert "stages" not in plain and plain["submissions"] == 4 and plain["grader_cpu_s"] == 0.5
    assert plain["ms_per_submission"] > 0
    staged = grade_benchmark.timed_grade(tmp_path / "dist", subs, tmp_path / "out-staged",
                                         [sys.executable, str(fake)], timings=True)
    assert staged["stages"] == STAGES


def test_the_second_table_gives_each_stage_by_class_in_milliseconds_per_submission(grade_benchmark):
    loops = {"grader": {**STAGES["grader"], "score": 95.0}, "sandbox": {**STAGES["sandbox"], "calls": 2500.0}}
    # a class measured before a stage was timed shows it as "-"
    mixed = {"grader": {"start": 190.0}, "sandbox": {}}
    figures = {"qkv_py": {**FIGURE, "stages": STAGES}, "qkv_py_loops": {**FIGURE, "stages": loops},
               "qkv_py_mixed": {**FIGURE, "stages": mixed}, "qkv_notebooks": FIGURE}
    lines = grade_benchmark.report(figures).splitlines()
    table = lines[lines.index("| stage, CPU ms per submission | .py keys | .py loops | mixed class |"):]
    assert table == ["| stage, CPU ms per submission | .py keys | .py loops | mixed class |", "|---|---|---|---|",
                     "| grader: start | 200.0 | 200.0 | 190.0 |", "| grader: intake | 10.0 | 10.0 | - |",
                     "| grader: send | 7.5 | 7.5 | - |", "| grader: receive | 27.5 | 27.5 | - |",
                     "| grader: score | 80.0 | 95.0 | - |", "| grader: gradebook | 50.0 | 50.0 | - |",
                     "| grader: pages | 77.5 | 77.5 | - |", "| grader: class | 5.0 | 5.0 | - |",
                     "| sandbox: handler | 102.5 | 102.5 | - |", "| sandbox: load | 375.0 | 375.0 | - |",
                     "| sandbox: calls | 550.0 | 2500.0 | - |"]
    assert lines[lines.index(table[0]) - 1] == ""  # a table of its own
    assert "stage, CPU ms" not in grade_benchmark.report({"qkv_py": FIGURE})  # none measured, no table


@pytest.mark.slow  # `qkv grade` on two submissions
def test_the_loop_solution_scores_full_marks_on_every_hidden_test(grade_benchmark, built_numpy_same, tmp_path):
    """benchmarks/loop_solution.py is a benchmark's realistic correct code only while it is correct: graded as the
    benchmark grades it (two distinct copies, the key's ANSWERS after the functions), on the bank as it is now,
    in a course of one set of numbers as the benchmark's (its generated class hands one key in)."""
    key = key_module(built_numpy_same.assignment)
    subs = grade_benchmark.write_class(tmp_path / "loops", [grade_benchmark.loop_submission(key)], 2)
    out = tmp_path / "out"
    done = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                           "--out", str(out), "--jobs", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = gradebook_rows(out)
    assert sorted(rows) == ["s0000", "s0001"]
    for row in rows.values():
        assert (row["status"], row["total"]) == ("graded", row["max"]), row


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
    # where the whole process tree's CPU was read (a control group could be made), its line follows the grader's
    tree = baseline_figure("4c63494", 1.5)
    tree["medians"]["tree_cpu_s"], tree["ratios"]["tree_cpu_s"] = tree["medians"]["wall_s"], tree["ratios"]["wall_s"]
    assert grade_benchmark.report({"baseline": tree}).splitlines()[-2] == (
        "  CPU s, its whole process tree (the sandbox's too): .py 2.0 -> 3.0 (1.5x); notebooks 2.0 -> 3.0 (1.5x); "
        "mixed class 2.0 -> 3.0 (1.5x)")


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
    # the process tree's CPU where this run could make a control group (as root here), else left out
    with grade_benchmark.CgroupCpu("probe") as probe:
        measured = ("wall_s", "grader_cpu_s") + (("tree_cpu_s",) if probe.group is not None else ())
    assert set(b["runs"]) == set(measured)
    for measure in measured:
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


def test_the_server_s_cpu_is_its_whole_process_tree_s_counted_once(serve_benchmark):
    """The tree's CPU (TreeCpu, read from /proc while it runs) against the kernel's own account of the same processes
    (RUSAGE_CHILDREN, once all are reaped): a shell whose short children burn CPU, each reaped by the shell, so the
    children are counted once (seen while they run, then in the shell's reaped time) and none is missed. The two
    accounts of the same ticks differ by a sample's rounding, not by a child."""
    burn = f"{sys.executable} -c 'sum(range(4_000_000))'"
    # the shell stops itself once it has reaped every child, and is read then, alive, as the benchmark reads a
    # server still running (a tree whose root has gone is counted as last seen, up to a sample's worth short)
    shell = subprocess.Popen(["sh", "-c", f"for i in 1 2 3 4 5 6; do {burn}; done; {burn} & {burn} & wait; "
                                          "kill -STOP $$"])
    with serve_benchmark.TreeCpu(shell.pid) as meter:
        _, status = os.waitpid(shell.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        spent = meter.stop()
    os.kill(shell.pid, signal.SIGCONT)
    # the kernel's account of this shell and what it reaped alone: RUSAGE_CHILDREN would also count whatever else
    # this test process reaps meanwhile
    _, status, usage = os.wait4(shell.pid, 0)
    shell.returncode = os.waitstatus_to_exitcode(status)
    kernel = usage.ru_utime + usage.ru_stime
    measured = spent["root"] + spent["descendants"]
    assert spent["descendants"] > spent["root"]  # the children burn, the shell waits
    assert abs(measured - kernel) <= 0.05 * kernel + 0.1, (spent, kernel)


@pytest.mark.parametrize("argv", [["--students", "0"], ["--attempts", "0"], ["--clients", "0"], ["--jobs", "0"]])
def test_a_service_benchmark_that_would_measure_nothing_is_refused_before_anything_runs(serve_benchmark, argv,
                                                                                       capsys):
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(argv)
    said = capsys.readouterr().err
    assert stop.value.code == 2 and f"{argv[0]} must be at least 1" in said


@pytest.mark.parametrize("argv, said", [(["--looping", "0.6"], "--looping must be a fraction from 0 to 0.5"),
                                        (["--looping", "-0.1"], "--looping must be a fraction from 0 to 0.5"),
                                        (["--attempt-seconds", "0"], "--attempt-seconds must be more than 0")])
def test_a_service_benchmark_with_a_looping_fraction_or_budget_out_of_range_is_refused(serve_benchmark, argv, said,
                                                                                       capsys):
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(argv)
    assert stop.value.code == 2 and said in capsys.readouterr().err


def test_a_service_benchmark_with_looping_students_keeps_its_figures_apart(serve_benchmark):
    assert serve_benchmark.parse_args(["--looping", "0.05"]).results == serve_benchmark.LOOPING_RESULTS
    assert serve_benchmark.parse_args([]).results == serve_benchmark.RESULTS


@pytest.mark.slow  # a build, `qkv grade` once and `qkv serve` four times, each looping attempt its whole budget
def test_the_service_benchmark_with_looping_students_grades_them_0_and_the_rest_right(tmp_path):
    """The quick run with a third of the class looping (2 of 6 students, their budget 6 s): every attempt graded
    once, the looping ones 0 (a score the clients check), their figures apart from the honest students'."""
    results = tmp_path / "serve.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--students", "6", "--attempts",
                           "1", "--clients", "3", "--looping", "0.34", "--attempt-seconds", "6", "--results",
                           str(results)], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    assert figures["looping_fraction"] == 0.34 and figures["attempt_seconds"] == 6
    assert "looping_students" not in figures["alone"]
    for run in ("class", "kill9"):
        f = figures[run]
        counts = (f["accepted"], f["graded"], f["lost"], f["duplicated"], f["wrong_student"], f["client_failures"])
        assert counts == (6, 6, 0, 0, 0, 0), (run, f)
        assert f["looping_students"] == 2 and f["looping_upload_to_score_s"]["count"] == 2, (run, f)
        assert f["upload_to_score_s"]["count"] == f["received_to_graded_s"]["count"] == 4, (run, f)
    assert "| the class: its 2 looping students | 2 |" in done.stdout


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
    # ada.py, the first sample, earns every point: the reference is qkv grade's own
    assert figures["sample_scores"][0] == resolve_assignment(find_manifest("attention-numpy"), load_bank_strict()).max_points
    assert "| the class, kill -9 midway and a restart | 20 of 20 | 0 | 0 | 0 |" in done.stdout
    # the server's CPU per attempt beside `qkv grade`'s per submission, both of their whole process trees
    batch = figures["qkv_grade"]
    assert batch["submissions"] == 80 and batch["cpu_ms_per_submission"] > 0 and batch["sandbox_ms_per_submission"] > 0
    for run in ("class", "kill9"):
        cpu = figures[run]["cpu"]
        assert cpu["web_process_s"] > 0 and cpu["sandbox_processes_s"] > 0 and cpu["clients_s"] > 0, cpu
        assert cpu["over_qkv_grade"] == round(cpu["server_ms_per_attempt"] / batch["cpu_ms_per_submission"], 2)
    assert "| `qkv grade`, 80 submissions (beyond its start) |" in done.stdout


def test_the_realistic_mix_hands_in_the_notebook_every_tenth_time_and_the_py_samples_between(serve_benchmark):
    samples = serve_benchmark.class_samples()
    mix = serve_benchmark.Mix(tuple(serve_benchmark.mixed_samples(samples)),
                              (samples / serve_benchmark.NOTEBOOK_SAMPLE).read_text())
    drawn = [mix.drawn(n) for n in range(100)]
    notebook = len(mix.py)
    assert mix.samples()[notebook][1] == ".ipynb" and drawn.count(notebook) == 10
    assert set(drawn) == set(range(len(mix.samples())))  # every .py sample too: right, mistakes, syntax error, stub
    assert [mix.drawn(n) for n in range(9)] == [n % len(mix.py) for n in range(9)]
    plain = serve_benchmark.Mix(mix.py)
    assert notebook not in {plain.drawn(n) for n in range(100)}


@pytest.mark.parametrize("suffix", [".py", ".ipynb"])
def test_a_hand_in_names_its_student_last_and_a_notebook_stays_a_notebook(serve_benchmark, suffix):
    samples = serve_benchmark.class_samples()
    text = (samples / ("ada.py" if suffix == ".py" else serve_benchmark.NOTEBOOK_SAMPLE)).read_text()
    body = serve_benchmark.signed(text, suffix, "# student b0042, attempt 3").encode()
    assert serve_benchmark.NAMED.findall(body)[-1] == b"b0042"
    if suffix == ".ipynb":
        nbformat.validate(nbformat.reads(body.decode(), as_version=4))


def test_the_realistic_mix_and_postgresql_keep_their_figures_apart_with_5_percent_looping(serve_benchmark, capsys):
    realistic = serve_benchmark.parse_args(["--mix", "realistic"])
    assert realistic.results.name == "serve_mix.json" and realistic.looping == 0.05 and realistic.web_processes == 1
    assert serve_benchmark.parse_args(["--mix", "realistic", "--looping", "0"]).looping == 0
    both = serve_benchmark.parse_args(["--mix", "realistic", "--postgresql"])
    assert both.results.name == "serve_mix_postgresql.json" and both.web_processes == 2
    assert serve_benchmark.parse_args(["--postgresql", "--web-processes", "3"]).web_processes == 3
    with pytest.raises(SystemExit):
        serve_benchmark.parse_args(["--postgresql", "--web-processes", "0"])
    assert "--web-processes must be at least 1" in capsys.readouterr().err


def test_each_client_sends_from_a_loopback_address_of_its_own_that_the_server_sees(serve_benchmark):
    """A hundred clients, a hundred addresses (the server caps one address's connections at 100), none the server's
    own; and a connection from one of them reaches a server on 127.0.0.1 from that address."""
    import socket

    addresses = [serve_benchmark.client_address(c) for c in range(300)]
    assert len(set(addresses)) == 300 and "127.0.0.1" not in addresses
    assert all(a.startswith("127.") for a in addresses)
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), source_address=(addresses[-1], 0)):
            accepted, (seen, _) = server.accept()
            accepted.close()
    assert seen == addresses[-1]


@pytest.mark.slow  # a build, `qkv grade` once and `qkv serve` four times, one looping attempt its whole budget
def test_the_service_benchmark_s_realistic_mix_grades_notebooks_and_the_samples_each_once_for_its_own_student(
        tmp_path):
    """The realistic mix in small (10 students, 2 attempts, 5 clients, one looping student of budget 5 s): its
    notebooks among the hand-ins, each attempt graded once for its own student, every first attempt's score
    qkv grade's for its sample (the notebook's too)."""
    results = tmp_path / "serve.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--students", "10", "--attempts",
                           "2", "--clients", "5", "--mix", "realistic", "--looping", "0.1", "--attempt-seconds", "5",
                           "--results", str(results)], capture_output=True, text=True, timeout=1800,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    assert figures["mix"] == "realistic" and figures["samples"] == 7 and figures["notebooks_every"] == 10
    assert figures["sample_scores"][-1] > 0  # the notebook, graded by qkv grade, earns points
    for run in ("class", "kill9"):
        f = figures[run]
        counts = (f["accepted"], f["graded"], f["lost"], f["duplicated"], f["wrong_student"], f["client_failures"])
        assert counts == (20, 20, 0, 0, 0, 0), (run, f)
        # students 9 (first attempt) and 8 (second) hand in the notebook; student 5 loops
        assert f["notebooks"] == 2 and f["looping_students"] == 1 and f["client_addresses"] == 5, (run, f)


@pytest.mark.slow  # a PostgreSQL server, a build, `qkv grade` once and two `qkv serve` processes three times
def test_the_service_benchmark_on_postgresql_with_two_web_processes_loses_and_mixes_up_nothing(tmp_path):
    """The documented multi-process setup in small: two `qkv serve` processes on one PostgreSQL database, the
    clients split between them, the first killed (-9) midway: each attempt graded once for its own student."""
    results = tmp_path / "serve.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--students", "8", "--attempts",
                           "2", "--clients", "4", "--postgresql", "--results", str(results)], capture_output=True,
                          text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    assert figures["database"].startswith("PostgreSQL") and figures["web_processes"] == 2
    for run, accepted in (("alone", 6), ("class", 16), ("kill9", 16)):
        f = figures[run]
        counts = (f["accepted"], f["graded"], f["lost"], f["duplicated"], f["wrong_student"], f["client_failures"])
        assert counts == (accepted, accepted, 0, 0, 0, 0), (run, f)
        assert f["web_processes"] == 2 and f["cpu"]["database_s"] > 0, (run, f)
    assert figures["kill9"]["graded_exactly_once"]


# --- benchmarks/summary.py: docs/benchmarks.md, made from the results files, never by hand ---------------------------

@pytest.fixture(scope="module")
def summary():
    spec = importlib.util.spec_from_file_location("summary", ROOT / "benchmarks" / "summary.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_page_is_what_the_committed_results_give(summary):
    """A figure edited by hand, or results written without the page made again, fails here."""
    assert (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") == summary.render()


def test_every_results_file_has_a_section_and_a_benchmark_that_writes_it(summary):
    stems = {entry.results for entry in summary.SECTIONS}
    assert stems == {path.stem for path in (ROOT / "benchmarks" / "results").glob("*.json")}
    for entry in summary.SECTIONS:
        source = (ROOT / "benchmarks" / entry.script).read_text(encoding="utf-8")
        assert "summary.write" in source, f"{entry.script} writes {entry.results}.json but not the page"
        assert ("def report(" in source) == entry.own_report, entry.script


def test_a_results_file_without_its_own_report_is_shown_whole_in_a_table(summary, tmp_path):
    (tmp_path / "stats.json").write_text(json.dumps({"machine": "m", "load_s": 0.5, "runs": [{"a": 1}],
                                                     "nested": {"x": [1, 2]}, "name": "a|b"}))
    page = summary.render(tmp_path)
    assert "| load_s | 0.5 |" in page and "| nested / x | 1, 2 |" in page and "| name | a/b |" in page
    assert "| runs | 1 entries: see the results file |" in page and "Machine: m" in page
    assert "## `qkv grade`" not in page  # no results file, no section


def test_a_trial_run_s_results_elsewhere_leave_the_page_alone(summary, tmp_path, monkeypatch):
    written = []
    monkeypatch.setattr(summary, "write", lambda *a, **k: written.append(1))
    summary.write_for(tmp_path / "serve.json")
    assert written == []
    summary.write_for(summary.RESULTS / "serve.json")
    assert written == [1]


def test_the_readme_is_a_front_door_that_links_the_figures():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "docs/benchmarks.md" in readme and "make demo" in readme and "make test" in readme


def test_the_batch_grader_s_class_holds_the_service_s_looping_share_and_notebooks(serve_benchmark, tmp_path):
    """The ratio compares like with like: `qkv grade`'s class has the realistic mix's loops (each costs its budget
    in either) and its tenth of notebooks among the rest."""
    samples = serve_benchmark.class_samples()
    mix = serve_benchmark.Mix(tuple(serve_benchmark.mixed_samples(samples)),
                              (samples / serve_benchmark.NOTEBOOK_SAMPLE).read_text())
    folder = serve_benchmark.write_mixed_class(tmp_path / "batch", mix, 200, "def f():\n    while True:\n        pass\n",
                                               0.05)
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 200 and len(set((folder / n).read_text() for n in names)) == 200
    assert sum(n.startswith("l") for n in names) == 10 and sum(n.endswith(".ipynb") for n in names) == 19
    assert all("while True" in (folder / n).read_text() for n in names if n.startswith("l"))


def test_the_closed_loop_floor_is_clients_times_cpu_per_attempt_over_the_cores(serve_benchmark, monkeypatch):
    monkeypatch.setattr(serve_benchmark.os, "cpu_count", lambda: 2)
    run = {"clients": 100, "students": 400, "cpu": {"clients_ms_per_attempt": 30.0}}
    assert serve_benchmark.closed_loop_floor(run, 96.0) == {"as_cheap_as_qkv_grade": 4.8,
                                                            "and_the_clients_here": 6.3}
    # fewer students than clients: only the students are ever waiting
    assert serve_benchmark.closed_loop_floor({**run, "students": 10}, 96.0)["as_cheap_as_qkv_grade"] == 0.48
