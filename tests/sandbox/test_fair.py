"""The sandbox pool's fairness rule (autograder/sandbox/fair.py), pure: which waiting job starts when, and which
running one yields its worker. A job runs long only when its worker says so (by its own time), never by a clock."""

from __future__ import annotations

from autograder.sandbox.fair import FairQueue


def started(queue: FairQueue) -> list[str]:
    return [job for _, job in queue.start()]


def numbers(queue: FairQueue) -> dict[str, int]:
    """Start what the queue starts; each job's number."""
    return {job: number for number, job in queue.start()}


def test_fresh_jobs_fill_the_slots_and_wait_for_one_to_end_or_to_run_long():
    queue = FairQueue(slots=2, most=4)
    for job in "abc":
        queue.add(job, long=False)
    ran = numbers(queue)
    assert sorted(ran) == ["a", "b"]
    assert started(queue) == []  # "c" waits
    queue.ran_long(ran["a"])
    assert started(queue) == ["c"]  # a ran long: it holds no slot


def test_a_job_its_worker_has_not_called_long_keeps_its_slot_however_long_it_runs():
    # a job starved by a busy machine is slow by the wall clock, not long: only its worker's word makes it long
    queue = FairQueue(slots=1, most=2)
    for job in "ab":
        queue.add(job, long=False)
    assert started(queue) == ["a"]
    assert started(queue) == [] and queue.to_yield() == []
    assert list(queue.fresh) == ["b"]


def test_long_jobs_hold_at_most_the_spare_workers_beside_the_slots():
    queue = FairQueue(slots=1, most=2)
    for job in "abc":
        queue.add(job, long=False)
    a = numbers(queue)["a"]
    queue.ran_long(a)
    b = numbers(queue)["b"]
    queue.ran_long(b)
    assert started(queue) == []  # a and b both ran long: every worker is held


def test_when_fresh_work_finds_every_worker_held_by_long_jobs_the_one_long_longest_yields():
    queue = FairQueue(slots=1, most=2)
    for job in "abc":
        queue.add(job, long=False)
    a = numbers(queue)["a"]
    queue.ran_long(a)
    b = numbers(queue)["b"]
    queue.ran_long(b)
    assert queue.to_yield() == [a]
    assert queue.to_yield() == []  # asked once; its worker comes free when it ends
    queue.ended(a)
    assert started(queue) == ["c"]


def test_no_long_job_yields_while_a_worker_is_free_or_no_fresh_work_waits():
    queue = FairQueue(slots=2, most=4)
    for job in "ab":
        queue.add(job, long=False)
    for number in numbers(queue).values():
        queue.ran_long(number)
    assert queue.to_yield() == []  # nothing waits
    queue.add("c", long=False)
    assert started(queue) == ["c"] and queue.to_yield() == []  # a spare worker took it


def test_as_many_yield_as_fresh_jobs_wait_for_a_slot_and_no_more():
    queue = FairQueue(slots=2, most=3)
    for job in "abc":
        queue.add(job, long=False)
    ran = numbers(queue)
    queue.ran_long(ran["a"])
    queue.ran_long(ran["b"])
    ran.update(numbers(queue))  # c, on the spare worker
    queue.ran_long(ran["c"])
    for job in "defg":
        queue.add(job, long=False)
    assert queue.to_yield() == [ran["a"], ran["b"]]  # two slots for four waiting: two yield, the third long one runs on


def test_a_job_that_yielded_comes_back_behind_fresh_work_and_yields_again_for_it():
    queue = FairQueue(slots=1, most=1)
    queue.add("loop", long=False)
    loop = numbers(queue)["loop"]
    queue.ran_long(loop)
    queue.add("fresh", long=False)
    assert queue.to_yield() == [loop]
    queue.ended(loop)
    queue.add("loop again", long=True)
    fresh = numbers(queue)["fresh"]
    assert fresh and started(queue) == []
    queue.ended(fresh)
    again = numbers(queue)["loop again"]  # long from its start: fresh work that comes makes it yield at once
    queue.add("next", long=False)
    assert queue.to_yield() == [again]


def test_a_job_that_comes_long_waits_while_fresh_ones_wait_and_never_runs_beside_the_slots():
    queue = FairQueue(slots=1, most=2)
    queue.add("first", long=False)
    [(first, _)] = queue.start()
    queue.add("rerun", long=True)
    queue.add("fresh", long=False)
    assert started(queue) == []
    queue.ended(first)
    fresh = numbers(queue)["fresh"]
    queue.ran_long(fresh)
    assert started(queue) == []  # fresh ran long, but a rerun takes no spare worker
    assert queue.waiting


def test_a_job_that_comes_long_starts_at_once_on_an_idle_pool():
    queue = FairQueue(slots=2, most=4)
    queue.add("rerun", long=True)
    assert started(queue) == ["rerun"]
    assert not queue.waiting


def test_the_stream_is_read_until_as_many_fresh_jobs_wait_as_there_are_slots():
    queue = FairQueue(slots=2, most=4)
    queue.add("rerun", long=True)
    assert queue.wants_more()
    queue.add("a", long=False)
    queue.add("b", long=False)
    assert not queue.wants_more()
