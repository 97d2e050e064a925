"""The fast path (all problems in one process) gives exactly what running each problem alone gives."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.bundle import read_bundle
from autograder.grade.execute import ALL_PROBLEMS, combined_calls, isolated_calls, run_many, split_combined
from autograder.sandbox import SandboxPool
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
    assert batch.status == "load_error" and split_combined(batch, bundle) is batch


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
