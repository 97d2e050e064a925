"""The whole attempt's budget (attempt_seconds) and the pool's fairness to fresh work, on real sandbox workers.

A submission whose every function loops (tests/fixtures/budget/every_function_loops.py) ran each problem to its own
time limit, one after the other; now the budget stops it, and the problems it left score 0 with a message naming
the budget. An attempt that has run LONG_SECONDS of its own time no longer holds a slot: one handed in after it is
graded first, beside it or, when long attempts hold every worker, in the worker one of them yields. Assertions are
on states, messages and order, never on wall times.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autograder.assemble import build
from autograder.routes.class_grading import grade_class
from autograder.sandbox import SandboxPool
from conftest import CORE, HOSTILE, SANDBOX_LIMITS
from served_course import every_function_loops

pytestmark = pytest.mark.slow  # waits out time limits

FIXTURES = Path(__file__).parents[1] / "fixtures" / "budget"
LOOPS = (FIXTURES / "every_function_loops.py").read_text()
SLEEPS = (FIXTURES / "every_function_sleeps.py").read_text()
BUDGET = "the attempt's time budget of {seconds:g} s (attempt_seconds) ran out"


def test_a_submission_whose_every_function_loops_is_stopped_by_the_attempts_budget() -> None:
    # each problem's limit alone would let it run 2 x 5 s; the budget stops it at 6, in the second problem or
    # (on a machine so busy that the first one ran starved past its limit) before it
    limits = dataclasses.replace(SANDBOX_LIMITS, problem_seconds=5.0, attempt_seconds=6.0)
    with SandboxPool("numpy", jobs=1, limits=limits, isolation="allow-rlimits") as pool:
        run = pool.run(LOOPS, CORE)
    assert run.status == "timeout" and BUDGET.format(seconds=6) in run.message
    assert BUDGET.format(seconds=6) in run.problems["double"].message
    assert run.problems["double"].status in ("timeout", "not_run")


def test_the_budget_is_the_whole_attempts_a_rerun_gets_what_the_first_run_left() -> None:
    limits = dataclasses.replace(SANDBOX_LIMITS, attempt_seconds=6.0)
    with SandboxPool("numpy", jobs=1, limits=limits, isolation="allow-rlimits") as pool:
        run = pool.run(LOOPS, CORE, spent=6.0)
    assert run.status == "timeout" and BUDGET.format(seconds=6) in run.message
    assert all(p.status == "not_run" and BUDGET.format(seconds=6) in p.message for p in run.problems.values())


def test_with_its_only_worker_on_a_loop_a_job_taken_after_it_is_run_first() -> None:
    # one worker, held by a loop that runs to its 30 s limit: the job taken after it used to wait for it
    limits = dataclasses.replace(SANDBOX_LIMITS, problem_seconds=30.0, cpu_seconds=60)
    good = (HOSTILE / "good.py").read_text()
    jobs = [("loop", (HOSTILE / "loop_in_function.py").read_text(), CORE), ("honest", good, CORE)]
    with SandboxPool("numpy", jobs=1, limits=limits, isolation="allow-rlimits") as pool:
        finished = [(key, run) for key, run in pool.map(iter(jobs))]
    assert [key for key, _ in finished] == ["honest", "loop"]
    runs = dict(finished)
    assert runs["honest"].status == "ok" and runs["loop"].problems["softmax"].status == "timeout"


def test_when_loops_hold_every_worker_one_yields_to_a_fresh_job_and_both_still_end_by_their_budget() -> None:
    # one slot and a spare worker, both held by loops that ran long (by their own time: they sleep, which takes
    # as long on a busy machine as on an idle one): the honest job taken after them used to wait for a loop's
    # budget to run out; now the loop that ran long first yields its worker to it, runs again once no fresh work
    # waits, and is stopped when its budget, the time of both its runs, runs out
    # (a budget that leaves the spare worker time to start, numpy and all, on a machine as busy as any)
    limits = dataclasses.replace(SANDBOX_LIMITS, problem_seconds=60.0, cpu_seconds=60, attempt_seconds=30.0)
    good = (HOSTILE / "good.py").read_text()
    jobs = [("first loop", SLEEPS, CORE), ("second loop", SLEEPS, CORE), ("honest", good, CORE)]
    with SandboxPool("numpy", jobs=1, limits=limits, isolation="allow-rlimits") as pool:
        finished = list(pool.map(iter(jobs)))
    assert [key for key, _ in finished] == ["honest", "second loop", "first loop"]
    runs = dict(finished)
    assert runs["honest"].status == "ok"
    for key in ("first loop", "second loop"):
        assert runs[key].status == "timeout" and BUDGET.format(seconds=30) in runs[key].message, runs[key].message
        assert not runs[key].yielded
        assert all(p.status in ("timeout", "not_run") and BUDGET.format(seconds=30) in p.message
                   for p in runs[key].problems.values()), runs[key].problems


def test_a_rerun_of_an_attempt_that_ran_long_waits_behind_fresh_work() -> None:
    # while the only worker runs the first job, the problem-by-problem rerun of an attempt whose first run already
    # ran long is taken, then a fresh job: the fresh one goes first
    good = (HOSTILE / "good.py").read_text()
    jobs = [("first", good, CORE), ("rerun", good, CORE, 10.0), ("fresh", good, CORE)]
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="allow-rlimits") as pool:
        finished = [key for key, _ in pool.map(iter(jobs))]
    assert finished == ["first", "fresh", "rerun"]


@pytest.fixture(scope="module")
def budgeted(bank, tmp_path_factory):
    """The fixture's assignment (three code problems, problem_seconds 2, attempt_seconds 4), built."""
    return build(str(FIXTURES / "attempt-budget.yaml"), tmp_path_factory.mktemp("budget") / "dist", bank=bank)


def test_qkv_grade_stops_a_looping_submission_at_its_budget_and_grades_the_rest_of_the_class(
        budgeted, tmp_path: Path) -> None:
    functions = [p.problem.function for p in budgeted.assignment.implement]
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "looper.py").write_text(every_function_loops(functions))
    key = (budgeted.out / "key" / f"{budgeted.assignment.module_name}.py").read_text()
    (subs / "honest.py").write_text(key)
    run = grade_class(budgeted.out / "autograder", subs, tmp_path / "out", jobs=1, isolation="allow-rlimits")
    results = {r.student: r for r in run.results}
    assert results["honest"].score == pytest.approx(run.bundle.max_points)
    looper = results["looper"]
    assert looper.score == 0
    messages = [p.message for p in looper.problems] + [t.message for p in looper.problems for t in p.tests]
    assert any(BUDGET.format(seconds=4) in m for m in messages), messages
    assert all("\n" not in m for m in messages)
