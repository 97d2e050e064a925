"""The fast path (all problems in one process) gives exactly what running each problem alone gives."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from autograder.bank.model import Tolerance
from autograder.bundle import CodeProblem, GradedTest, GradingBundle, read_bundle
from autograder.grade.execute import ALL_PROBLEMS, combined_calls, isolated_calls, run_many, split_combined
from autograder.sandbox import Limits, SandboxPool, SubmissionRun, isolation_available
from conftest import key_module, replace_function
from solutions import misconceptions


@pytest.fixture(scope="module")
def setting(built_numpy):
    bundle = read_bundle(built_numpy.out / "autograder")
    with SandboxPool(bundle.track, jobs=2) as pool:
        yield bundle, pool, key_module(built_numpy.assignment)


def same(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    for problem in a:
        ra, rb = a[problem].results, b[problem].results
        if ra.keys() != rb.keys():
            return False
        for call in ra:
            x, y = ra[call], rb[call]
            if x.ok != y.ok or x.error != y.error or len(x.outputs) != len(y.outputs):
                return False
            if not all(np.array_equal(p, q, equal_nan=True) for p, q in zip(x.outputs, y.outputs)):
                return False
    return True


@pytest.mark.parametrize("mistake", [None, misconceptions.softmax_over_columns])
def test_combined_equals_isolated(setting, mistake):
    bundle, pool, key = setting
    source = key if mistake is None else replace_function(key, "softmax_rows", mistake)
    combined = pool.run(source, combined_calls(bundle))
    assert set(combined.problems) == {ALL_PROBLEMS}
    split = split_combined(combined, bundle)
    isolated = pool.run(source, isolated_calls(bundle))
    assert split is not None and same(split.problems, isolated.problems)


def test_a_submission_that_does_not_load_is_not_rerun(setting):
    bundle, pool, key = setting
    batch = pool.run(key + "\ndef broken(:\n", combined_calls(bundle))
    split = split_combined(batch, bundle)
    assert batch.status == split.status == "load_error"
    assert {p: r.status for p, r in split.problems.items()} == {p.id: "not_run" for p in bundle.code}


@pytest.mark.parametrize("body, status", [
    ("sys.exit(3)", "exited"),
    ("os._exit(0)", "exited"),
    ("ctypes.string_at(0)", "crashed"),
    ("os.write(3, bytes(range(256)) * 4)", "ok"),  # garbage on the result channel, which a problem's own process lacks
])
def test_a_function_that_breaks_the_batch_is_rerun_problem_by_problem(setting, body, status):
    bundle, pool, key = setting
    source = key + f"\nimport ctypes, os, sys\n\ndef causal_mask(n):\n    {body}\n"
    batch = pool.run(source, combined_calls(bundle))
    assert batch.problems[ALL_PROBLEMS].status != "ok"
    assert split_combined(batch, bundle) is None
    (_, run), = list(run_many(pool, bundle, [("s", source)]))
    assert run.status == "ok" and run.problems["causal-mask"].status == status
    assert not any(r.ok for r in run.problems["causal-mask"].results.values())
    honest = pool.run(key, isolated_calls(bundle)).problems
    others = {pid: p for pid, p in run.problems.items() if pid != "causal-mask"}
    assert others and same(others, {pid: honest[pid] for pid in others})


# ------------------------------------------- the fast path against hostile code

HOSTILE = Path(__file__).parent / "fixtures" / "submissions"
S = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 5.0, 2.0]])
X = np.arange(4.0)
SHORT = Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10, memory_bytes=512 * 1024**2,
               max_processes=16, max_output_bytes=100_000, max_file_bytes=1_000_000)


def toy_bundle() -> GradingBundle:
    """softmax_rows(S) and double(x), the two functions every submission in tests/fixtures/submissions/ defines."""
    def test(problem: str, name: str, args: tuple, kwargs: dict | None = None) -> GradedTest:
        return GradedTest(problem, name, "hidden", 1.0, Tolerance(), args, kwargs or {}, (np.zeros(1),))

    code = (
        CodeProblem("softmax", "softmax", 1.0, "softmax_rows", (test("softmax", "s1", (S,)), test("softmax", "s2", (10 * S,))), {}),
        CodeProblem("double", "double", 1.0, "double", (test("double", "d1", (X,)), test("double", "d2", (), {"x": 3})), {}),
    )
    return GradingBundle("toy", "toy", "numpy", 0, "same", None, code, (), ("softmax", "double"))


def answers(run: SubmissionRun) -> str:
    """ANSWERS as sent back, but for the addresses in the reprs of exotic objects."""
    return re.sub(r" at 0x[0-9a-f]+", "", json.dumps(run.answers, sort_keys=True))


@pytest.mark.skipif(isolation_available() != "bwrap" and not os.environ.get("CI"), reason="bubblewrap does not work here")
def test_hostile_submissions_earn_on_the_fast_path_what_they_earn_problem_by_problem():
    bundle = toy_bundle()
    sources = {p.name: p.read_bytes().decode("utf-8", "surrogateescape")
               for p in sorted(HOSTILE.glob("*.py")) if p.name != "good_torch.py"}
    with SandboxPool("numpy", jobs=2, limits=SHORT) as pool:
        fast = dict(run_many(pool, bundle, sources.items()))
        apart = dict(pool.map((name, source, isolated_calls(bundle)) for name, source in sources.items()))
    assert fast.keys() == apart.keys() == sources.keys()
    for name in sources:
        f, a = fast[name], apart[name]
        assert (f.status, f.defined, answers(f)) == (a.status, a.defined, answers(a)), name
        assert {p: r.status for p, r in f.problems.items()} == {p: r.status for p, r in a.problems.items()}, name
        assert same(f.problems, a.problems), name
