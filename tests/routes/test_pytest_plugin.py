"""The pytest route (`pytest --qkv NAME --qkv-submission FILE`) gives the same scores as `qkv grade`, and a
student's repository cannot change them: its conftest.py does not run, and its pytest configuration, a plugin
from outside installed packages, its folder on Python's path or a build inside it stop the run instead."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder.bundle import read_bundle
from autograder.grade.written_policy import HIDDEN_MESSAGE, WrittenRule, fixed_items
from autograder.routes.class_grading import grade_class
from conftest import ROOT, key_module, replace_function
from served_course import class_sample
from autograder.references import misconceptions

pytestmark = pytest.mark.slow  # a pytest run in a subprocess per test

FIXTURES = ROOT / "tests" / "fixtures" / "routes"
PYTEST = Path(sys.executable).with_name("pytest")  # the command instructors run (python -m pytest adds the folder)

CUSTOM_CHECKS = '''
import numpy as np
import pytest


@pytest.mark.qkv_points(2)
def test_rows_sum_to_one(qkv_submission):
    (weights,) = qkv_submission.call("softmax_rows", np.random.default_rng(0).normal(size=(4, 5)))
    assert np.allclose(weights.sum(axis=-1), 1)


@pytest.mark.qkv_points(1)
def test_attention_is_permutation_equivariant(qkv_submission):
    rng = np.random.default_rng(1)
    Q, K, V = (rng.normal(size=(5, 4)) for _ in range(3))
    order = rng.permutation(5)
    out, _ = qkv_submission.call("scaled_dot_product_attention", Q, K, V)
    shuffled, _ = qkv_submission.call("scaled_dot_product_attention", Q[order], K[order], V[order])
    assert np.allclose(shuffled, out[order])
'''


def run_pytest(folder: Path, dist: Path, submission: Path, *extra: str, command: tuple[str, ...] = (str(PYTEST),),
               env: dict[str, str] | None = None, closed: bool = True) -> subprocess.CompletedProcess:
    """`closed`: hand-in has closed for everyone (--qkv-closed), so that every written item is marked."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([*command, "-p", "no:cacheprovider", "--qkv=attention-numpy", f"--qkv-dist={dist}",
                           f"--qkv-submission={submission}", *(["--qkv-closed"] if closed else []), *extra],
                          cwd=folder, capture_output=True, text=True, timeout=180, env={**clean, **(env or {})})


def pytest_route(folder: Path, dist: Path, submission: Path, *extra: str,
                 closed: bool = True) -> tuple[float, float, str]:
    run = run_pytest(folder, dist, submission, *extra, closed=closed)
    match = re.search(r"qkv score: ([\d.]+) / ([\d.]+)", run.stdout)
    assert match, run.stdout[-2000:] + run.stderr[-2000:]
    return float(match.group(1)), float(match.group(2)), run.stdout


@pytest.mark.parametrize("mistake", [None, misconceptions.softmax_over_columns, misconceptions.softmax_zero_after])
def test_same_scores_as_qkv_grade(built_numpy_same, tmp_path, mistake):
    source = key_module(built_numpy_same.assignment)
    if mistake is not None:
        source = replace_function(source, "softmax_rows", mistake)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text(source)
    graded = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", jobs=1)
    score, maximum, output = pytest_route(tmp_path, built_numpy_same.out, subs / "alice.py")
    assert maximum == pytest.approx(graded.bundle.max_points)
    assert score == pytest.approx(graded.results[0].score, abs=1e-3)
    if mistake is not None:
        assert "failed" in output and score < maximum


def test_a_failed_test_says_what_qkv_grade_says(built_numpy_same, tmp_path):
    """The sample student whose attention builds on his column softmax: each failure reads as qkv grade's sentence."""
    sample = class_sample("ben.py")  # the class's numbers, as this course draws them
    (tmp_path / "subs").mkdir()
    shutil.copy(sample, tmp_path / "subs" / "ben.py")
    graded = grade_class(built_numpy_same.out / "autograder", tmp_path / "subs", tmp_path / "out", jobs=1).results[0]
    _, _, output = pytest_route(tmp_path, built_numpy_same.out, tmp_path / "subs" / "ben.py")
    failed = [t for p in graded.problems for t in p.tests if not t.passed]
    # every test his column softmax breaks, in the three problems that build on it, and nothing else
    assert {t.problem_id for t in failed} == {"softmax-rows", "scaled-dot-product-attention", "multi-head-attention"}
    assert len(failed) >= 10 and all(t.message in output for t in failed)
    assert "fix softmax_rows first: your multi_head_attention matches the reference with that same mistake" in output


def test_custom_checks_add_points_and_run_in_the_sandbox(built_numpy_same, tmp_path):
    (tmp_path / "alice.py").write_text(key_module(built_numpy_same.assignment))
    (tmp_path / "test_custom.py").write_text(CUSTOM_CHECKS)
    score, maximum, _ = pytest_route(tmp_path, built_numpy_same.out, tmp_path / "alice.py", "test_custom.py")
    assert maximum == pytest.approx(built_numpy_same.assignment.max_points + 3)
    assert score == pytest.approx(maximum)
    broken = replace_function(key_module(built_numpy_same.assignment), "softmax_rows", misconceptions.softmax_over_columns)
    (tmp_path / "bob.py").write_text(broken)
    score, maximum, _ = pytest_route(tmp_path, built_numpy_same.out, tmp_path / "bob.py", "test_custom.py")
    assert score <= maximum - 2


def test_junit_xml_carries_points(built_numpy_same, tmp_path):
    (tmp_path / "alice.py").write_text(key_module(built_numpy_same.assignment))
    pytest_route(tmp_path, built_numpy_same.out, tmp_path / "alice.py", f"--junitxml={tmp_path / 'report.xml'}")
    xml = (tmp_path / "report.xml").read_text()
    assert xml.count('name="max_points"') == len(built_numpy_same.assignment.problems) + sum(
        len(a.problem.public_tests) + len(a.problem.hidden_tests) - 1 for a in built_numpy_same.assignment.implement)


# ------------------------------------------------- the written-answer policy


def dated(built, tmp_path: Path, last: str) -> Path:
    """A copy of the build whose due date and last date are `last` (the policy of the manifest: `hidden`)."""
    dist = tmp_path / "dist"
    shutil.copytree(built.out / "autograder", dist / "autograder")
    meta = json.loads((dist / "autograder" / "assignment.json").read_text())
    meta["due"], meta["late"] = last, {"last": last}
    (dist / "autograder" / "assignment.json").write_text(json.dumps(meta))
    return dist


def fixed_wrong(source: str, bundle) -> str:
    """The key with every fixed written item answered as nobody answers it."""
    return source + "".join(f"\nANSWERS[{w.id!r}] = 'no idea'" for w in fixed_items(bundle))


def test_before_hand_in_closes_the_route_says_nothing_of_fixed_written_items(built_numpy_same, tmp_path):
    """As GitHub Classroom runs it on every push, in a log the student reads: under `hidden` a fixed item's test is
    skipped with the same sentence whether it is right or wrong, and its points wait; --qkv-closed (or the
    assignment's last date passed) marks them."""
    bundle = read_bundle(built_numpy_same.out / "autograder")
    fixed = {w.id: w.points for w in fixed_items(bundle)}
    assert fixed and bundle.written_attempts.rule is WrittenRule.HIDDEN
    open_dist = dated(built_numpy_same, tmp_path / "open", "2999-01-01T00:00:00+00:00")
    key = key_module(built_numpy_same.assignment)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text(key)
    (subs / "bob.py").write_text(fixed_wrong(key, bundle))
    outputs = {}
    for name in ("alice", "bob"):
        score, maximum, output = pytest_route(tmp_path, open_dist, subs / f"{name}.py",
                                              f"--junitxml={tmp_path / name}.xml", "-rs", closed=False)
        assert maximum == pytest.approx(bundle.max_points - sum(fixed.values())) and score == maximum
        assert "written answers kept" in output and all(pid in output for pid in fixed)
        xml = (tmp_path / f"{name}.xml").read_text()
        assert xml.count("<skipped") == xml.count(f'message="{HIDDEN_MESSAGE}"') == len(fixed)
        outputs[name] = re.sub(r"in [\d.]+s", "", output).replace(name, "")
    assert outputs["alice"] == outputs["bob"]
    # once hand-in has closed, said or by the assignment's own last date, they are marked
    assert pytest_route(tmp_path, open_dist, subs / "bob.py")[0] == pytest.approx(
        bundle.max_points - sum(fixed.values()))
    past = dated(built_numpy_same, tmp_path / "past", "2000-01-01T00:00:00+00:00")
    assert pytest_route(tmp_path, past, subs / "alice.py", closed=False)[:2] == pytest.approx(
        (bundle.max_points, bundle.max_points))


# ------------------------------------------------- what a student's repository holds


def student_repo(built, tmp_path: Path) -> Path:
    """The release as a student commits it (stub, pytest.ini, tests/, qkv_runtime/), in a folder of its own."""
    repo = tmp_path / "repo"
    shutil.copytree(built.out / "student", repo)
    return repo


def own_ini(tmp_path: Path) -> Path:
    """The instructor's own (empty) pytest.ini, named with -c."""
    folder = tmp_path / "grading"
    folder.mkdir(exist_ok=True)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return folder / "pytest.ini"


def test_a_conftest_in_the_students_repo_does_not_run(built_numpy_same, tmp_path):
    """A conftest.py that reports every test as passed with full points, and pytest run inside the student's
    repository: the total is what qkv grade gives the stub, and the conftest never ran."""
    repo = student_repo(built_numpy_same, tmp_path)
    shutil.copy(FIXTURES / "hijack_plugin.py.txt", repo / "conftest.py")
    (tmp_path / "subs").mkdir()
    shutil.copy(repo / "attention_numpy.py", tmp_path / "subs" / "attention_numpy.py")
    graded = grade_class(built_numpy_same.out / "autograder", tmp_path / "subs", tmp_path / "out", jobs=1).results[0]
    assert graded.score < graded.max_score
    score, maximum, output = pytest_route(repo, built_numpy_same.out, repo / "attention_numpy.py", "-c", str(own_ini(tmp_path)))
    assert not (repo / "HIJACKED").exists(), "the student's conftest.py ran in the grader's process"
    assert maximum == pytest.approx(graded.max_score)
    assert score == pytest.approx(graded.score, abs=1e-3)
    assert "failed" in output


@dataclass
class Planted:
    named: Path  # what the usage error must name
    env: dict[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = (str(PYTEST),)
    dist: Path | None = None  # the build the run is pointed at, when not the real one


def _config_file(name: str):
    def plant(built, repo: Path, tmp_path: Path) -> Planted:
        (repo / "pytest.ini").unlink()  # the release's: so that the file pytest finds is `name`
        shutil.copy(FIXTURES / f"{name}.txt", repo / name)
        return Planted(repo / name)
    return plant


def _plugin(built, repo: Path, tmp_path: Path) -> Planted:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "hijack_plugin.py.txt", plugins / "hijack_plugin.py")
    path = os.pathsep.join(filter(None, (str(plugins), os.environ.get("PYTHONPATH"))))
    return Planted(plugins / "hijack_plugin.py", env={"PYTHONPATH": path, "PYTEST_ADDOPTS": "-p hijack_plugin"})


def _folder_on_path(built, repo: Path, tmp_path: Path) -> Planted:
    # `python -m pytest` inside the repository puts it first on sys.path: its qkv_runtime/ would be the grader's,
    # and a stub whose functions return a number would pass every code test
    with (repo / "qkv_runtime" / "compare.py").open("a") as compare:
        compare.write((FIXTURES / "compare_always_matches.py.txt").read_text())
    stub = repo / "attention_numpy.py"
    stub.write_text(re.sub(r"raise NotImplementedError\(.*\)$", "return 0.0", stub.read_text(), flags=re.M))
    return Planted(repo, command=(sys.executable, "-m", "pytest"))


def _build_in_repo(built, repo: Path, tmp_path: Path) -> Planted:
    shutil.copytree(built.out, repo / "dist" / "attention-numpy")
    return Planted(repo / "dist" / "attention-numpy", dist=repo / "dist" / "attention-numpy")


# with the instructor's own -c, but for the configuration files: pytest found them because it ran in the repo
CONFIGS = {"pytest.ini": _config_file("pytest.ini"), "tox.ini": _config_file("tox.ini"),
           "setup.cfg": _config_file("setup.cfg"), "pyproject.toml": _config_file("pyproject.toml"),
           "release pytest.ini": lambda built, repo, tmp_path: Planted(repo / "pytest.ini")}
OTHERS = {"plugin": _plugin, "folder on path": _folder_on_path, "build in repo": _build_in_repo}


@pytest.mark.parametrize("case", [*CONFIGS, *OTHERS])
def test_what_the_repo_could_run_in_the_grader_stops_the_run(built_numpy_same, tmp_path, case):
    """pytest run inside the student's repository (as GitHub Classroom does): whatever there could run code in
    the grader's process, or choose the answers, is a one-line usage error naming it, and no score."""
    repo = student_repo(built_numpy_same, tmp_path)
    planted = (CONFIGS.get(case) or OTHERS[case])(built_numpy_same, repo, tmp_path)
    extra = () if case in CONFIGS else ("-c", str(own_ini(tmp_path)))
    run = run_pytest(repo, planted.dist or built_numpy_same.out, repo / "attention_numpy.py", *extra, env=planted.env,
                     command=planted.command)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout[-2000:] + run.stderr[-2000:]
    errors = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {planted.named.resolve()}: "), run.stderr[-2000:]
    assert "qkv score" not in run.stdout
