"""The sandbox pool's fairness rule (autograder/sandbox/fair.py) on a fake clock: which waiting job starts when."""

from __future__ import annotations

from autograder.sandbox.fair import FairQueue
from qkv_runtime.limits import LONG_SECONDS


def started(queue: FairQueue, now: float) -> list[str]:
    return [job for _, job in queue.start(now)]


def test_fresh_jobs_fill_the_slots_and_wait_for_one_to_end_or_to_run_long():
    queue = FairQueue(slots=2, most=4)
    for job in "abc":
        queue.add(job, long=False)
    assert started(queue, 0.0) == ["a", "b"]
    assert queue.wait(0.0) == LONG_SECONDS  # "c" waits: looked at again when a and b count as long
    assert started(queue, LONG_SECONDS - 0.1) == []
    assert started(queue, LONG_SECONDS) == ["c"]  # a and b ran long: they hold no slot


def test_long_jobs_hold_at_most_the_spare_workers_beside_the_slots():
    queue = FairQueue(slots=1, most=2)
    for job in "abc":
        queue.add(job, long=False)
    assert started(queue, 0.0) == ["a"]
    assert started(queue, LONG_SECONDS) == ["b"]
    assert started(queue, 2 * LONG_SECONDS) == []  # a and b both ran long: every worker is held
    assert queue.wait(2 * LONG_SECONDS) is None  # nothing to look at until one ends


def test_a_job_that_comes_long_waits_while_fresh_ones_wait_and_never_runs_beside_the_slots():
    queue = FairQueue(slots=1, most=2)
    queue.add("first", long=False)
    [(first, _)] = queue.start(0.0)
    queue.add("rerun", long=True)
    queue.add("fresh", long=False)
    assert started(queue, 0.0) == []
    queue.ended(first)
    assert started(queue, 0.0) == ["fresh"]
    assert started(queue, LONG_SECONDS) == []  # fresh ran long, but a rerun takes no spare worker
    assert queue.waiting


def test_a_job_that_comes_long_starts_at_once_on_an_idle_pool():
    queue = FairQueue(slots=2, most=4)
    queue.add("rerun", long=True)
    assert started(queue, 0.0) == ["rerun"]
    assert not queue.waiting


def test_the_stream_is_read_until_as_many_fresh_jobs_wait_as_there_are_slots():
    queue = FairQueue(slots=2, most=4)
    queue.add("rerun", long=True)
    assert queue.wants_more()
    queue.add("a", long=False)
    queue.add("b", long=False)
    assert not queue.wants_more()
