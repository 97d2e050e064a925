"""The fast path (all problems in one process) gives exactly what running each problem alone gives."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from autograder.kinds.model import Tolerance
from autograder.bundle import CodeProblem, GradedTest, GradingBundle, read_bundle
from autograder.grade.execute import ALL_PROBLEMS, combined_calls, isolated_calls, run_many, split_combined
from autograder.sandbox import SandboxPool, SubmissionRun
from conftest import CORE, HOSTILE, SANDBOX_LIMITS, key_module, needs_bwrap, replace_function
from autograder.references import misconceptions


@pytest.fixture(scope="module")
def setting(built_numpy_same):
    bundle = read_bundle(built_numpy_same.out / "autograder")
    with SandboxPool(bundle.track, jobs=2) as pool:
        yield bundle, pool, key_module(built_numpy_same.assignment)


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


class RecordingPool:
    """The real pool, with the order in which its map took each job: (key, whether it was the problem-by-problem
    rerun)."""

    def __init__(self, pool: SandboxPool, bundle: GradingBundle) -> None:
        self.pool, self.isolated, self.taken = pool, isolated_calls(bundle), []

    def map(self, jobs):
        def recorded():
            for key, source, calls, *spent in jobs:
                self.taken.append((key, calls is self.isolated))
                yield key, source, calls, *spent
        return self.pool.map(recorded())


def test_a_failed_fast_path_is_run_again_before_the_rest_of_a_stream_is_taken(setting):
    # the service's graders hand run_many a stream that only runs dry when nobody is waiting: a rerun kept for
    # its end would keep that student waiting while the rest of the class went first
    bundle, pool, key = setting
    broken = key + "\nimport sys\n\ndef causal_mask(n):\n    sys.exit(3)\n"
    recording = RecordingPool(pool, bundle)
    sources = [broken] + [key] * 11
    runs = dict(run_many(recording, bundle, enumerate(sources)))
    assert runs.keys() == set(range(12)) and runs[0].problems["causal-mask"].status == "exited"
    assert recording.taken.index((0, True)) < recording.taken.index((11, False))


# ------------------------------------------- the fast path against hostile code

# The attacks that end the submission's own process, and so the batch: they are rerun problem by problem. What ends
# memory_bomb.py is the memory limit, or on a busy machine the time limit first (filling 512 MiB costs seconds of
# CPU there): either is honest, and either ends the process, so no time limit here needs an idle machine.
BREAK_THE_BATCH = {"exit_in_function.py", "fd_garbage.py", "forged_layout.py", "fork_bomb.py", "fork_exit.py",
                   "ignore_sigterm.py", "loop_in_function.py", "memory_bomb.py", "segfault.py", "stdout_flood.py",
                   "undecodable_name.py"}


def toy_bundle() -> GradingBundle:
    """CORE's softmax_rows(S) and double(x) as a grading bundle (the expected values do not matter here)."""
    code = tuple(
        CodeProblem(p.problem_id, p.problem_id, 1.0, p.calls[0].function, tuple(
            GradedTest(p.problem_id, c.call_id, "hidden", 1.0, Tolerance(), c.args, dict(c.kwargs), (np.zeros(1),))
            for c in p.calls), {})
        for p in CORE
    )
    return GradingBundle("toy", "toy", "numpy", 0, "same", None, code, (), tuple(p.id for p in code))


def answers(run: SubmissionRun) -> str:
    """ANSWERS as sent back, but for the addresses in the reprs of exotic objects."""
    return re.sub(r" at 0x[0-9a-f]+", "", json.dumps(run.answers, sort_keys=True))


@needs_bwrap
@pytest.mark.slow
def test_hostile_submissions_earn_on_the_fast_path_what_they_earn_problem_by_problem():
    bundle = toy_bundle()
    sources = {p.name: p.read_bytes().decode("utf-8", "surrogateescape")
               for p in sorted(HOSTILE.glob("*.py")) if p.name != "good_torch.py"}
    with SandboxPool("numpy", jobs=2, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        batched = dict(pool.map((name, source, combined_calls(bundle)) for name, source in sources.items()))
        apart = dict(pool.map((name, source, isolated_calls(bundle)) for name, source in sources.items()))
    split = {name: split_combined(run, bundle) for name, run in batched.items()}
    assert {name for name, run in split.items() if run is None} == BREAK_THE_BATCH
    for name, f in split.items():
        if f is None:
            continue
        a = apart[name]
        assert (f.status, f.defined, answers(f)) == (a.status, a.defined, answers(a)), name
        assert {p: r.status for p, r in f.problems.items()} == {p: r.status for p, r in a.problems.items()}, name
        assert same(f.problems, a.problems), name


@needs_bwrap
def test_a_function_that_makes_numpy_raise_does_not_change_how_later_calls_score():
    bundle = toy_bundle()
    source = ("import numpy as np\n\n"
              "def softmax_rows(S):\n    np.seterr(all='raise')\n    e = np.exp(S - S.max(axis=1, keepdims=True))\n"
              "    return e / e.sum(axis=1, keepdims=True)\n\n"
              "def double(x):\n    np.exp(np.array(1000.0))  # overflows: a warning, unless the float errors raise\n"
              "    return 2 * x\n")
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        batch = split_combined(pool.run(source, combined_calls(bundle)), bundle)
        apart = pool.run(source, isolated_calls(bundle))
    assert batch is not None and same(batch.problems, apart.problems)
    assert all(result.ok for result in batch.problems["double"].results.values())
