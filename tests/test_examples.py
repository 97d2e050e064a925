"""The demo's sample class still earns what each sample is meant to show (regenerate with examples/regenerate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.routes.class_grading import grade_class

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "submissions" / "attention-numpy"


@pytest.fixture(scope="module")
def results(built_numpy, tmp_path_factory):
    run = grade_class(built_numpy.out / "autograder", SAMPLES, tmp_path_factory.mktemp("demo"), jobs=2, timeout=3)
    return {r.student: r for r in run.results}


def lost(result) -> dict[str, float]:
    return {p.problem_id: p.score for p in result.problems if p.score < p.max_score - 1e-9}


def mistakes(result) -> set[str]:
    return {t.misconception for p in result.problems for t in p.tests if t.misconception}


def test_perfect_py_and_notebook(results):
    for student in ("ada", "hua"):
        assert results[student].score == pytest.approx(results[student].max_score), lost(results[student])


@pytest.mark.parametrize("student, problems, recognised", [
    ("ben", {"softmax-rows"}, {"column-softmax"}),
    ("cho", {"softmax-rows", "layer-norm"}, {"zero-after-softmax", "unbiased-variance"}),
    ("dan", {"attention-scores", "heads-reduce-cost"}, {"missing-scale"}),
])
def test_classic_mistakes_are_named(results, student, problems, recognised):
    assert set(lost(results[student])) == problems
    assert recognised <= mistakes(results[student])


def test_broken_and_empty_work(results):
    assert results["eve"].status == "load_error" and "SyntaxError" in results["eve"].message
    assert results["gil"].status == "graded" and results["gil"].score == 0


def test_hostile_sample_loses_only_what_it_broke(results):
    fox = results["fox"]
    assert set(lost(fox)) == {"layer-norm", "feed-forward"}
    feed_forward = next(p for p in fox.problems if p.problem_id == "feed-forward")
    assert "time limit" in feed_forward.message
    layer_norm = next(p for p in fox.problems if p.problem_id == "layer-norm")
    # /etc/shadow is not in the sandbox at all, or not readable by the slot's uid
    assert all("Permission denied" in t.message or "No such file" in t.message for t in layer_norm.tests)


def test_self_check_agrees_with_the_grader_on_public_tests(built_numpy, results):
    """For every sample, each public test passes in the release's self-check exactly when it passes in
    `qkv grade`, and a recognised mistake is named with the same message."""
    import sys

    sys.path.insert(0, str(built_numpy.out / "student"))
    try:
        import qkv_check
    finally:
        sys.path.pop(0)
    data = qkv_check.load_data(built_numpy.out / "student" / "selfcheck.json")
    checks = {c.id: c for c in qkv_check.public_checks(data)}
    compared = 0
    for sample in ("ada", "ben", "cho", "dan", "hua"):
        path = next(SAMPLES.glob(f"{sample}.*"))
        submission = qkv_check.load_submission(path)
        for problem in results[sample].problems:
            for test in problem.tests:
                if test.visibility != "public":
                    continue
                outcome = checks[f"{problem.problem_id}::{test.name}"].run(submission)
                assert outcome.passed == test.passed, (sample, problem.problem_id, test.name, outcome.message)
                if test.misconception:
                    assert test.message.split(" (")[0] in outcome.message
                compared += 1
    assert compared > 50
