"""The pytest route (`pytest --qkv NAME --qkv-submission FILE`) gives the same scores as `qkv grade`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.routes.class_grading import grade_class
from conftest import ROOT, key_module, replace_function
from autograder.references import misconceptions

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


def pytest_route(folder: Path, dist: Path, submission: Path, *extra: str) -> tuple[float, float, str]:
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--qkv", "attention-numpy",
                          "--qkv-dist", str(dist), "--qkv-submission", str(submission), *extra],
                         cwd=folder, capture_output=True, text=True, timeout=180)
    match = re.search(r"qkv score: ([\d.]+) / ([\d.]+)", run.stdout)
    assert match, run.stdout[-2000:] + run.stderr[-2000:]
    return float(match.group(1)), float(match.group(2)), run.stdout


@pytest.mark.parametrize("mistake", [None, misconceptions.softmax_over_columns, misconceptions.softmax_zero_after])
def test_same_scores_as_qkv_grade(built_numpy, tmp_path, mistake):
    source = key_module(built_numpy.assignment)
    if mistake is not None:
        source = replace_function(source, "softmax_rows", mistake)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text(source)
    graded = grade_class(built_numpy.out / "autograder", subs, tmp_path / "out", jobs=1)
    score, maximum, output = pytest_route(tmp_path, built_numpy.out, subs / "alice.py")
    assert maximum == pytest.approx(graded.bundle.max_points)
    assert score == pytest.approx(graded.results[0].score, abs=1e-3)
    if mistake is not None:
        assert "failed" in output and score < maximum


def test_a_failed_test_says_what_qkv_grade_says(built_numpy, tmp_path):
    """The sample student whose attention builds on his column softmax: each failure reads as qkv grade's sentence."""
    sample = ROOT / "examples" / "submissions" / "attention-numpy" / "ben.py"
    (tmp_path / "subs").mkdir()
    shutil.copy(sample, tmp_path / "subs" / "ben.py")
    graded = grade_class(built_numpy.out / "autograder", tmp_path / "subs", tmp_path / "out", jobs=1).results[0]
    _, _, output = pytest_route(tmp_path, built_numpy.out, tmp_path / "subs" / "ben.py")
    failed = [t for p in graded.problems for t in p.tests if not t.passed]
    # every test his column softmax breaks, in the three problems that build on it, and nothing else
    assert {t.problem_id for t in failed} == {"softmax-rows", "scaled-dot-product-attention", "multi-head-attention"}
    assert len(failed) >= 10 and all(t.message in output for t in failed)
    assert "fix softmax_rows first: your multi_head_attention matches the reference with that same mistake" in output


def test_custom_checks_add_points_and_run_in_the_sandbox(built_numpy, tmp_path):
    (tmp_path / "alice.py").write_text(key_module(built_numpy.assignment))
    (tmp_path / "test_custom.py").write_text(CUSTOM_CHECKS)
    score, maximum, _ = pytest_route(tmp_path, built_numpy.out, tmp_path / "alice.py", "test_custom.py")
    assert maximum == pytest.approx(built_numpy.assignment.max_points + 3)
    assert score == pytest.approx(maximum)
    broken = replace_function(key_module(built_numpy.assignment), "softmax_rows", misconceptions.softmax_over_columns)
    (tmp_path / "bob.py").write_text(broken)
    score, maximum, _ = pytest_route(tmp_path, built_numpy.out, tmp_path / "bob.py", "test_custom.py")
    assert score <= maximum - 2


def test_junit_xml_carries_points(built_numpy, tmp_path):
    (tmp_path / "alice.py").write_text(key_module(built_numpy.assignment))
    pytest_route(tmp_path, built_numpy.out, tmp_path / "alice.py", f"--junitxml={tmp_path / 'report.xml'}")
    xml = (tmp_path / "report.xml").read_text()
    assert xml.count('name="max_points"') == len(built_numpy.assignment.problems) + sum(
        len(a.problem.public_tests) + len(a.problem.hidden_tests) - 1 for a in built_numpy.assignment.implement)
