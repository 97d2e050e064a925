"""The demo's sample class still earns what each sample is meant to show (regenerate with examples/regenerate.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autograder.routes.class_grading import grade_class

pytestmark = pytest.mark.slow  # grades the demo's sample class

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "submissions" / "attention-numpy"


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
    # ben's attention functions call his softmax_rows: one mistake, three problems
    ("ben", {"softmax-rows", "scaled-dot-product-attention", "multi-head-attention"}, {"column-softmax"}),
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
                if test.misconception and not test.cause:  # a mistake upstream: the next test
                    assert test.message.split(" (")[0] in outcome.message
                compared += 1
    assert compared > 50


def test_the_release_names_an_upstream_mistake_in_the_graders_words(built_numpy, results):
    """What the self-check needs to say "fix softmax_rows first" as `qkv grade` does is in the release: the public
    tests' digests of the reference with each upstream mistake inside, each problem's `builds_on` (function and
    messages), and qkv_runtime.diagnosis. Run on ben's functions as the self-check runs them, they give the grader's
    sentence, word for word (qkv_check.PublicCheck calls them so: docs/feedback.md)."""
    import sys

    sys.path.insert(0, str(built_numpy.out / "student"))
    try:
        import qkv_check
        from qkv_runtime import sealed
        from qkv_runtime.compare import compare, select
        from qkv_runtime.diagnosis import mistake_text, name_mistake
        from qkv_runtime.values import to_arrays
    finally:
        sys.path.pop(0)
    data = qkv_check.load_data(built_numpy.out / "student" / "selfcheck.json")
    entries = {p["id"]: p for p in data["problems"]}
    namespace = qkv_check.load_submission(SAMPLES / "ben.py").namespace
    shown: dict[str, set[str]] = {}
    upstream_named = 0
    for problem in results["ben"].problems:  # the assignment's order: what a problem builds on comes first
        entry = entries[problem.problem_id]
        for test in (t for t in problem.tests if t.visibility == "public" and entry["kind"] == "implement"):
            spec = next(t for t in entry["public_tests"] if t["name"] == test.name)
            if spec["expect_error"]:
                continue  # nothing to name: it raises or it does not
            got = select(to_arrays(namespace[entry["function"]](*[qkv_check._decode(a) for a in spec["args"]],
                                                                  **{k: qkv_check._decode(v) for k, v in spec["kwargs"].items()})),
                         spec["output"])
            mismatch = compare(got, [qkv_check._decode(e) for e in spec["expected"]], spec["tolerance"]["abs"],
                               spec["tolerance"]["rel"])
            if mismatch is None:
                assert test.passed
                continue
            digest = sealed.outputs_digest([np.asarray(o, dtype=float) for o in got])
            built_on = {u: (function, messages) for u, function, messages in entry["builds_on"]}
            named = name_mistake(lambda d: d == digest, spec["mutants"],
                                 [(u, spec["upstream"].get(u, {})) for u in built_on], lambda p, m: m in shown.get(p, ()))
            assert (named and named.mistake, named and named.cause) == (test.misconception, test.cause), test.name
            if named is None:
                continue
            if named.cause is None:
                shown.setdefault(problem.problem_id, set()).add(named.mistake)
            function, messages = built_on[named.cause] if named.cause else ("", entry["misconceptions"])
            assert mistake_text(named, entry["function"], messages[named.mistake], mismatch.reason, function) == test.message
            upstream_named += named.cause is not None
    assert upstream_named == 5  # scaled_dot_product_attention's four public tests and multi_head_attention's one
