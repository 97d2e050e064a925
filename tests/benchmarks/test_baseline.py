"""benchmarks/baseline.py, what `--baseline REV` of benchmarks/grade.py and benchmarks/serve.py share: the old engine
unpacked and run in place of this one, the alternating rounds, their medians and ratios; and serve.py's option around
it. A whole `serve.py --baseline` run builds the assignment with both engines and serves the class with each (minutes
on the two cores), so its parts are tested here; a small run is in the lead's hands (the report says how)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import baseline  # noqa: E402


@pytest.fixture(scope="module")
def serve_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_serve_baseline", ROOT / "benchmarks" / "serve.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_each_item_is_measured_by_both_versions_the_first_of_them_taking_turns():
    calls = []

    def measure(label: str, item: str, round_: int) -> dict[str, float]:
        calls.append((label, item, round_))
        return {"wall_s": len(calls), "cpu_s": 10.0 * len(calls)}

    runs = baseline.alternating(3, ["py", "nb"], measure)
    assert calls == [("baseline", "py", 0), ("this", "py", 0), ("baseline", "nb", 0), ("this", "nb", 0),
                     ("this", "py", 1), ("baseline", "py", 1), ("this", "nb", 1), ("baseline", "nb", 1),
                     ("baseline", "py", 2), ("this", "py", 2), ("baseline", "nb", 2), ("this", "nb", 2)]
    assert runs["wall_s"] == {"baseline_py": [1, 6, 9], "this_py": [2, 5, 10], "baseline_nb": [3, 8, 11],
                              "this_nb": [4, 7, 12]}
    assert runs["cpu_s"]["this_nb"] == [40.0, 70.0, 120.0]


def test_the_figures_are_the_rounds_medians_and_this_versions_over_the_baselines():
    runs = {"wall_s": {"baseline_class": [4.0, 9.0, 2.0], "this_class": [3.0, 1.0, 8.0]},
            "p95_s": {"baseline_class": [0.0, 0.0], "this_class": [0.5, 1.5]}}
    middle = baseline.medians(runs)
    assert middle == {"wall_s": {"baseline_class": 4.0, "this_class": 3.0},
                      "p95_s": {"baseline_class": 0.0, "this_class": 1.0}}
    # no ratio over nothing: a baseline that took no time says so rather than failing the run at its end
    assert baseline.ratios(middle, ["class"]) == {"wall_s": {"class": 0.75}, "p95_s": {"class": None}}


def test_a_revision_is_unpacked_and_its_engine_is_the_one_that_loads(tmp_path):
    """HEAD unpacked beside this checkout: a process started with the environment it gives (from outside the
    unpacked tree, as the console script runs) loads that tree's engine, not this checkout's."""
    commit = baseline.commit_of("HEAD")
    env = baseline.unpacked(commit, tmp_path / "base")
    assert env["PYTHONPATH"] == str(tmp_path / "base")
    loaded = subprocess.run([sys.executable, "-c", "import autograder.cli; print(autograder.cli.__file__)"],
                            env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == str(tmp_path / "base" / "autograder" / "cli.py")
    with pytest.raises(SystemExit) as stop:
        baseline.commit_of("no-such-revision")
    assert str(stop.value) == f"--baseline no-such-revision: no such commit in {ROOT}"


def test_a_patch_is_applied_to_the_unpacked_revision_and_one_that_does_not_apply_is_refused(tmp_path):
    patch = tmp_path / "readme.patch"
    first, second = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:2]
    patch.write_text(f"--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,3 @@\n {first}\n+patched for the comparison\n"
                     f" {second}\n", encoding="utf-8")
    commit = baseline.commit_of("HEAD")
    baseline.unpacked(commit, tmp_path / "patched", patch)
    assert (tmp_path / "patched" / "README.md").read_text(encoding="utf-8").splitlines()[:2] == \
        [first, "patched for the comparison"]
    patch.write_text("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-no such first line\n+x\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        baseline.unpacked(commit, tmp_path / "refused", patch)
    assert str(stop.value).startswith(f"--patch {patch}: does not apply to {commit[:7]}")


def test_the_shipped_patch_for_a_comparison_of_the_same_work_applies_to_this_commit(tmp_path):
    """benchmarks/patches/ are part of the benchmark: one that no longer applies fails here, not at a lead's run."""
    for patch in sorted((ROOT / "benchmarks" / "patches").glob("*.patch")):
        baseline.unpacked(baseline.commit_of("HEAD"), tmp_path / patch.stem, patch)


def test_a_patch_is_for_a_comparison_and_its_figures_go_to_a_file_of_their_own(serve_benchmark, capsys):
    patch = ROOT / "benchmarks" / "patches" / "without_work_f6e097c_did_not_do.patch"
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(["--patch", str(patch)])
    assert stop.value.code == 2 and "give --baseline REV with it" in capsys.readouterr().err
    args = serve_benchmark.parse_args(["--baseline", "f6e097c", "--patch", str(patch)])
    assert args.results == ROOT / "benchmarks" / "results" / "serve_without_work_f6e097c_did_not_do.json"


def test_the_engine_the_service_benchmark_starts_is_the_baselines_only_inside_its_block(serve_benchmark,
                                                                                       monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    with serve_benchmark.engine({"PYTHONPATH": "/the/baseline"}):
        assert os.environ["PYTHONPATH"] == "/the/baseline"
    assert os.environ["PYTHONPATH"] == "/elsewhere"
    with serve_benchmark.engine(None):
        assert os.environ["PYTHONPATH"] == "/elsewhere"  # this engine: as the benchmark was started
    monkeypatch.delenv("PYTHONPATH")
    with pytest.raises(RuntimeError), serve_benchmark.engine({"PYTHONPATH": "/the/baseline"}):
        raise RuntimeError("a run that failed")
    assert "PYTHONPATH" not in os.environ


@pytest.mark.parametrize("argv", [["--looping", "0.05"], ["--mix", "realistic"], ["--postgresql"],
                                  ["--attempt-seconds", "5"]])
def test_a_service_baseline_of_another_kind_of_run_is_refused_in_one_line(serve_benchmark, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(["--baseline", "HEAD", *argv])
    assert stop.value.code == 2 and "--baseline serves the samples' class on SQLite" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        serve_benchmark.parse_args(["--baseline", "HEAD", "--rounds", "0"])
    assert stop.value.code == 2 and "--rounds must be at least 1" in capsys.readouterr().err


def comparison(rev: str, ratio: float, faults: int = 0) -> dict:
    names = ("server_cpu_ms_per_attempt", "upload_to_score_p50_s", "upload_to_score_p95_s", "wall_s")
    return {"rev": rev, "commit": "f6e097c87a8909b85e45783d9fa0b04bd7a62a0e", "students": 20, "attempts_each": 2,
            "clients": 10, "rounds": 2,
            "medians": {name: {"baseline_class": 2.0, "this_class": 2.0 * ratio} for name in names},
            "ratios": {name: {"class": ratio} for name in names},
            "faults": {"baseline": {"lost": 0, "wrong_student": faults}, "this": {"lost": 0, "wrong_student": 0}}}


def test_the_service_comparison_is_a_table_of_medians_and_ratios_and_names_any_fault(serve_benchmark):
    rows = serve_benchmark.baseline_rows(comparison("f6e097c", 0.5))
    assert rows == [
        "Against f6e097c (f6e097c): 20 students x 2 attempts from 10 clients, 2 alternating rounds each, medians:",
        "",
        "| figure | f6e097c | this | this over f6e097c |", "|---|---|---|---|",
        "| server cpu ms per attempt | 2.0 | 1.0 | 0.5 |",
        "| upload to score p50 s | 2.0 | 1.0 | 0.5 |",
        "| upload to score p95 s | 2.0 | 1.0 | 0.5 |",
        "| wall s | 2.0 | 1.0 | 0.5 |"]
    assert serve_benchmark.baseline_rows(comparison("f6e097c", 1.0, faults=2))[-1] == \
        "Faults: baseline: {'wrong_student': 2}"
