"""The supervisor as a state machine, fed fake frames and a fake clock: no processes, no pipes, no bwrap.

Each test plays one sequence a child could send (honest, crashing, lying,
silent) and checks the frames the grader would get and the kills ordered.
"""

from __future__ import annotations

import os
import signal

import pytest

from autograder.sandbox.worker.supervisor import (
    EXIT_WAIT_SECONDS,
    GRACE_SECONDS,
    STARVED_FACTOR,
    Answer,
    Kill,
    Lower,
    Phase,
    Supervisor,
)
from qkv_runtime.limits import LONG_CPU_SECONDS, LONG_SECONDS, Limits
from qkv_runtime.wire import FrameBuffer, pack_arrays

import numpy as np

CHILD, GRANDCHILD = 100, 200
LIMITS = Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10)
PROBLEMS = [
    {"id": "softmax", "calls": [{"id": "s1", "fn": "softmax_rows"}, {"id": "s2", "fn": "softmax_rows"}]},
    {"id": "double", "calls": [{"id": "d1", "fn": "double"}]},
]
EXITED_OK = 0  # a wait status: exit code 0


class Run:
    """A supervisor with a clock, and everything it answered so far."""

    def __init__(self, cpu: float = 100.0, limits: Limits = LIMITS, long: bool = False) -> None:
        self.now = 1000.0
        self.cpu = cpu
        self.waited = 0.0  # seconds the job's processes waited for a CPU
        self.waited_groups: list[tuple[int, ...]] = []
        self.sup = Supervisor(PROBLEMS, limits, CHILD, self.now, lambda group: self.cpu, None, self._waited, long)
        self.frames: list[dict] = []
        self.kills: list[tuple[int, ...]] = []
        self.lowered: list[tuple[int, ...]] = []

    def _waited(self, groups: tuple[int, ...]) -> float:
        self.waited_groups.append(groups)
        return self.waited

    def take(self, actions) -> None:
        buffer = FrameBuffer(1 << 26)
        for action in actions:
            if isinstance(action, Answer):
                self.frames += [h for h, _ in buffer.feed(action.data)]
            elif isinstance(action, Lower):
                self.lowered.append(action.groups)
            else:
                assert isinstance(action, Kill)
                self.kills.append(action.groups)

    def send(self, **header) -> None:
        blob = header.pop("blob", b"")
        self.take(self.sup.frame(header, blob, self.now))

    def later(self, seconds: float) -> None:
        self.now += seconds
        while self.sup.waiting and self.sup.deadline <= self.now:
            self.take(self.sup.tick(self.now))

    def exits(self, status: int = EXITED_OK) -> None:
        self.take(self.sup.child_exited(status, self.now))
        self.take(self.sup.channel_closed())
        self.later(EXIT_WAIT_SECONDS)

    def finish(self) -> dict:
        self.take(self.sup.finish())
        return self.frames[-1]

    def problems(self) -> dict[str, tuple[str, str]]:
        return {f["problem"]: (f["status"], f["message"]) for f in self.frames if f["kind"] == "problem"}


def call(call_id: str, value: np.ndarray) -> dict:
    layout, blob = pack_arrays([value])
    return {"kind": "call", "call_id": call_id, "ok": True, "arrays": layout, "blob": blob}


def honest_problem(run: Run, index: int, pid: int) -> None:
    run.send(kind="start", index=index, pid=pid)
    for c in PROBLEMS[index]["calls"]:
        run.send(kind="begin", call_id=c["id"])
        run.send(**call(c["id"], np.ones(2)))
    run.send(kind="done")
    run.send(kind="end", index=index, signal=None, exit=0)


def test_an_honest_child_gets_every_result_through_in_order():
    run = Run()
    run.send(kind="loaded", answers={"q": 1}, defined=["double", "softmax_rows"], cell_errors=[])
    honest_problem(run, 0, GRANDCHILD)
    honest_problem(run, 1, GRANDCHILD + 1)
    assert run.sup.state.phase is Phase.AFTER
    run.exits()
    closing = run.finish()
    assert [f["call_id"] for f in run.frames if f["kind"] == "call"] == ["s1", "s2", "d1"]
    assert run.problems() == {"softmax": ("ok", "ran 2 calls"), "double": ("ok", "ran 1 call")}
    assert closing["kind"] == "submission" and closing["status"] == "ok" and closing["answers"] == {"q": 1}
    assert run.kills == [] and run.lowered == []


def test_a_loop_in_one_problem_times_out_that_problem_and_names_the_call():
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.send(kind="begin", call_id="s1")
    run.later(LIMITS.problem_seconds + 0.01)
    assert run.kills == [(GRANDCHILD,)]
    run.send(kind="end", index=0, signal=signal.SIGKILL, exit=0)
    honest_problem(run, 1, GRANDCHILD + 1)
    run.exits()
    run.finish()
    status, message = run.problems()["softmax"]
    assert status == "timeout" and "while running softmax_rows()" in message and "2 s" in message
    assert run.problems()["double"][0] == "ok"


def test_a_starved_problem_gets_more_wall_time_but_not_for_ever():
    run = Run(cpu=0.0)  # a neighbour's fork bomb takes the cores: no CPU time at all
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.later(LIMITS.problem_seconds + 0.01)
    assert run.kills == []
    run.later(STARVED_FACTOR * LIMITS.problem_seconds)
    assert run.kills == [(GRANDCHILD,)]


def test_a_top_level_loop_times_out_the_load():
    run = Run()
    run.later(LIMITS.load_seconds + 0.01)
    assert run.kills == [(CHILD,)]
    run.exits(-signal.SIGKILL & 0xFF)
    closing = run.finish()
    assert closing["status"] == "timeout" and "while loading" in closing["message"]
    assert all(status == "not_run" for status, _ in run.problems().values())


def test_garbage_on_the_channel_voids_what_the_child_said_and_kills_everything():
    run = Run()
    run.send(kind="loaded", answers={"forged": "yes"}, defined=["double"], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.take(run.sup.garbage("frame of 4294967295 + 4294967295 bytes"))
    assert run.kills == [(CHILD, GRANDCHILD)]
    assert not run.sup.state.channel_open
    run.take(run.sup.child_exited(EXITED_OK, run.now))
    run.later(EXIT_WAIT_SECONDS)
    closing = run.finish()
    assert closing["status"] == "crashed" and "result channel" in closing["message"]
    assert closing["answers"] == {} and closing["defined"] == []


@pytest.mark.parametrize("lie", [
    {"kind": "start", "index": 0, "pid": 1},  # the zygote as a grandchild: its group must never be killed
    {"kind": "start", "index": 0, "pid": "200"},
    {"kind": "start", "index": 0, "pid": 2**40},  # no pid is that large: os.killpg would overflow on it
    {"kind": "start", "index": 5, "pid": GRANDCHILD},
    {"kind": "loaded", "answers": {}},  # twice
    {"kind": "end", "index": 0},  # before a start
])
def test_frames_out_of_sequence_end_the_submission(lie):
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(**lie)
    assert run.sup.state.failure is not None and run.kills
    assert all(1 not in groups and all(g < 2**22 for g in groups) for groups in run.kills)


@pytest.mark.parametrize("forged", ["s1", "d1", "nope"])  # a second result, another problem's call, no call
def test_a_result_out_of_order_spoils_that_problem_only(forged):
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.send(**call("s1", np.ones(2)))
    run.send(**call(forged, np.zeros(2)))
    run.send(**call("s2", np.zeros(2)))  # in order, but after the forgery: not taken
    assert [f["call_id"] for f in run.frames if f["kind"] == "call"] == ["s1"]
    assert run.kills == [(GRANDCHILD,)]
    run.send(kind="end", index=0, signal=signal.SIGKILL, exit=0)
    honest_problem(run, 1, GRANDCHILD + 1)
    assert run.problems()["softmax"][0] == "crashed" and "malformed" in run.problems()["softmax"][1]
    assert run.problems()["double"][0] == "ok"


def test_printing_too_much_ends_that_problem_with_output_limit():
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.send(kind="begin", call_id="s1")
    run.take(run.sup.output(b"x" * (LIMITS.max_output_bytes + 1), run.now))
    assert run.kills == [(GRANDCHILD,)]
    run.send(kind="end", index=0, signal=signal.SIGKILL, exit=0)
    status, message = run.problems()["softmax"]
    assert status == "output_limit" and "while running softmax_rows()" in message
    assert len(run.sup.stdout_text()) == 8000


def test_a_child_that_ignores_its_end_is_killed_after_the_grace_time():
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    honest_problem(run, 0, GRANDCHILD)
    honest_problem(run, 1, GRANDCHILD + 1)
    run.later(GRACE_SECONDS + 0.01)
    assert run.kills and run.kills[-1][0] == CHILD
    run.exits(-signal.SIGKILL & 0xFF)
    assert run.finish()["status"] == "ok"  # everything it had to do was done


def test_retiring_is_said_in_the_closing_frame():
    run = Run()
    run.send(kind="load_failed", status="load_error", message="SyntaxError")
    run.exits()
    run.take(run.sup.finish(retire=True))
    assert run.frames[-1]["retire"] is True and run.frames[-1]["status"] == "load_error"


def test_a_death_between_problems_is_reported_with_its_signal():
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    honest_problem(run, 0, GRANDCHILD)
    run.exits(signal.SIGSEGV)  # wait status of a process killed by SIGSEGV
    closing = run.finish()
    assert closing["status"] == "crashed" and "SIGSEGV" in closing["message"]
    assert run.problems()["double"] == ("not_run", "not run: the submission stopped before this problem")
    assert os.WIFSIGNALED(signal.SIGSEGV)


# -- a batch's results in "calls" frames (the child sends a batched problem's results a frame of many at a time)


def results_frame(*entries: tuple[str, np.ndarray | None]) -> dict:
    """A "calls" frame: per call its id and arrays (None: the call raised)."""
    results, blobs = [], []
    for call_id, value in entries:
        if value is None:
            results.append({"call_id": call_id, "ok": False, "error": "ValueError: no", "bytes": 0})
            continue
        layout, blob = pack_arrays([value])
        results.append({"call_id": call_id, "ok": True, "arrays": layout, "bytes": len(blob)})
        blobs.append(blob)
    return {"kind": "calls", "results": results, "blob": b"".join(blobs)}


def answered(run: Run) -> list[tuple[dict, bytes]]:
    """Every frame the grader would get, with its bytes (the kills ordered go to run.kills)."""
    frames = []
    for action in run.sup._take():
        if isinstance(action, Answer):
            frames += FrameBuffer(1 << 26).feed(action.data)
        else:
            run.kills.append(action.groups)
    return frames


def test_a_calls_frame_passes_its_results_on_in_one_frame_with_each_ones_bytes():
    run = Run()
    run.send(kind="loaded", answers={}, defined=["softmax_rows"], cell_errors=[])
    run.send(kind="start", index=0, pid=CHILD)
    frame = results_frame(("s1", np.arange(3.0)), ("s2", None))
    run.sup._on_frame(frame, frame.pop("blob"), run.now)
    (header, blob), = answered(run)
    assert header["kind"] == "calls" and header["problem"] == "softmax"
    assert [(r["call_id"], r["ok"], r["bytes"]) for r in header["results"]] == [("s1", True, 24), ("s2", False, 0)]
    assert header["results"][1]["error"] == "ValueError: no" and np.frombuffer(blob).tolist() == [0.0, 1.0, 2.0]
    assert run.sup.state.current.seen == {"s1", "s2"} and not run.sup.state.current.spoiled and run.kills == []


@pytest.mark.parametrize("forgery", ["out of order", "bytes beyond the blob", "bytes no result declares",
                                     "not a list", "too many"])
def test_a_calls_frame_that_does_not_add_up_passes_what_came_before_and_spoils_the_problem(forgery):
    run = Run()
    run.send(kind="loaded", answers={}, defined=["softmax_rows"], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    frame = results_frame(("s1", np.arange(3.0)), ("s2", np.ones(2)))
    blob = frame.pop("blob")
    if forgery == "out of order":
        frame["results"][1]["call_id"] = "s3"
    elif forgery == "bytes beyond the blob":
        frame["results"][1]["bytes"] = 10_000
    elif forgery == "bytes no result declares":
        blob += b"\0" * 8
    elif forgery == "not a list":
        frame["results"] = {"s1": 1}
    else:
        frame["results"] = frame["results"] * 100
    run.sup._on_frame(frame, blob, run.now)
    frames = answered(run)
    passed = [r["call_id"] for header, _ in frames if header["kind"] == "calls" for r in header["results"]]
    assert passed == ({"out of order": ["s1"], "bytes beyond the blob": ["s1"], "bytes no result declares": ["s1", "s2"],
                       "not a list": [], "too many": []}[forgery])
    assert run.sup.state.current.spoiled and run.kills == [(GRANDCHILD,)]


def test_the_bytes_a_failed_call_declares_are_dropped_and_the_other_arrays_passed_on_intact():
    run = Run()
    run.send(kind="loaded", answers={}, defined=["softmax_rows"], cell_errors=[])
    run.send(kind="start", index=0, pid=CHILD)
    frame = results_frame(("s1", None), ("s2", np.arange(3.0)))
    frame["results"][0]["bytes"] = 8  # a failed call's "arrays", which no one may read
    run.sup._on_frame(frame, b"\xff" * 8 + frame.pop("blob"), run.now)
    (header, blob), = answered(run)
    assert [(r["call_id"], r["ok"], r["bytes"]) for r in header["results"]] == [("s1", False, 0), ("s2", True, 24)]
    assert np.frombuffer(blob).tolist() == [0.0, 1.0, 2.0] and not run.sup.state.current.spoiled


@pytest.mark.parametrize("call_id", [None, "s1"])
def test_a_result_after_the_problem_s_last_call_spoils_the_problem(call_id):
    run = Run()
    run.send(kind="loaded", answers={}, defined=["softmax_rows"], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    frame = results_frame(("s1", np.arange(3.0)), ("s2", np.ones(2)), ("s3", np.ones(1)))
    frame["results"][2]["call_id"] = call_id  # the problem has two calls: a third result is forged
    run.sup._on_frame(frame, frame.pop("blob"), run.now)
    frames = answered(run)
    passed = [r["call_id"] for header, _ in frames if header["kind"] == "calls" for r in header["results"]]
    assert passed == ["s1", "s2"] and run.sup.state.current.spoiled and run.kills == [(GRANDCHILD,)]


@pytest.mark.parametrize("call_id", [None, "s1"])
def test_a_single_call_frame_after_the_problem_s_last_call_spoils_the_problem(call_id):
    run = Run()
    run.send(kind="loaded", answers={}, defined=["softmax_rows"], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    for c in PROBLEMS[0]["calls"]:
        run.send(kind="begin", call_id=c["id"])
        run.send(**call(c["id"], np.ones(2)))
    run.send(**{**call("s1", np.ones(1)), "call_id": call_id})  # the problem has two calls: a third is forged
    assert [f["call_id"] for f in run.frames if f["kind"] == "call"] == ["s1", "s2"]
    assert run.sup.state.current.spoiled and run.kills == [(GRANDCHILD,)]


def test_an_attempt_that_runs_long_is_lowered_once_to_the_lowest_priority():
    # it sleeps: no CPU, and no wait for one either, so all its wall time is its own
    run = Run(cpu=0.0, limits=Limits(load_seconds=3.0, problem_seconds=10.0, cpu_seconds=10))
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.send(kind="begin", call_id="s1")
    run.later(LONG_SECONDS - 0.5)
    assert run.lowered == []
    run.later(0.5)
    assert run.lowered == [(CHILD, GRANDCHILD)] and run.kills == []  # lowered, not stopped: its limits still hold
    run.later(0.25)
    assert run.lowered == [(CHILD, GRANDCHILD)]
    assert [f for f in run.frames if f["kind"] == "long"] == [{"kind": "long"}]  # the grader is told, once


def test_a_starved_attempt_is_long_only_once_its_own_time_reaches_long_seconds():
    # a busy machine kept it waiting for a CPU for 2 of its first LONG_SECONDS, and it used little: it is not long,
    # and not lowered, until its wall time less that wait is
    run = Run(cpu=LONG_CPU_SECONDS / 4, limits=Limits(load_seconds=3.0, problem_seconds=10.0, cpu_seconds=10))
    run.waited = 2.0
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.later(LONG_SECONDS)
    assert run.lowered == [] and not [f for f in run.frames if f["kind"] == "long"]
    assert run.waited_groups == [(CHILD, GRANDCHILD)]  # the wait of every process of the job
    run.later(1.0)
    assert run.lowered == []
    run.later(1.0)
    assert run.lowered == [(CHILD, GRANDCHILD)] and [f for f in run.frames if f["kind"] == "long"]


def test_a_starved_loop_is_long_once_it_has_used_long_cpu_seconds():
    # starved too, but what it got of the CPU it used: a loop, not an honest attempt kept waiting
    run = Run(cpu=0.0, limits=Limits(load_seconds=3.0, problem_seconds=10.0, cpu_seconds=10))
    run.waited = 10.0
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.later(LONG_SECONDS)
    assert run.lowered == []
    run.cpu = LONG_CPU_SECONDS
    run.later(LONG_CPU_SECONDS)  # looked at again when it may have used that much
    assert run.lowered == [(CHILD, GRANDCHILD)] and [f for f in run.frames if f["kind"] == "long"]


def test_an_attempt_that_ran_long_in_an_earlier_job_is_lowered_at_once():
    run = Run(long=True)
    run.later(0.0)
    assert run.lowered == [(CHILD,)] and [f for f in run.frames if f["kind"] == "long"]


def test_an_attempt_asked_to_yield_is_stopped_and_keeps_only_the_problems_it_finished():
    run = Run()
    run.send(kind="loaded", answers={"q": 1}, defined=[], cell_errors=[])
    honest_problem(run, 0, GRANDCHILD)
    run.send(kind="start", index=1, pid=GRANDCHILD + 1)
    run.send(kind="begin", call_id="d1")
    run.take(run.sup.preempt(run.now))
    assert run.kills == [(CHILD, GRANDCHILD, GRANDCHILD + 1)]
    run.send(**call("d1", np.ones(2)))  # already in the pipe: taken as nothing
    run.send(kind="end", index=1, signal=signal.SIGKILL, exit=0)
    run.take(run.sup.preempt(run.now))  # asked again: nothing more to do
    assert len(run.kills) == 1
    run.exits(-signal.SIGKILL & 0xFF)
    closing = run.finish()
    assert run.problems() == {"softmax": ("ok", "ran 2 calls"),
                              "double": ("not_run", "not run: the grader runs it again later")}
    assert [f["call_id"] for f in run.frames if f["kind"] == "call"] == ["s1", "s2"]
    assert closing["yielded"] is True and closing["status"] == "timeout"
    assert closing["message"] == "stopped: it yielded its worker to fresh work (the grader runs it again later)"


def test_an_attempt_that_has_finished_running_has_nothing_to_yield():
    run = Run()
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    honest_problem(run, 0, GRANDCHILD)
    honest_problem(run, 1, GRANDCHILD + 1)
    run.take(run.sup.preempt(run.now))
    run.exits()
    closing = run.finish()
    assert run.kills == [] and closing["yielded"] is False and closing["status"] == "ok"


def test_an_attempt_whose_every_function_loops_is_stopped_when_its_budget_runs_out():
    # load 3 s + 2 problems of 2 s, capped at 3 s: the first problem times out at its own limit, the second is
    # stopped by the budget, with the child and everything it started
    run = Run(limits=Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10, attempt_seconds=3.0))
    run.later(0.5)
    run.send(kind="loaded", answers={"q": 1}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.send(kind="begin", call_id="s1")
    run.later(LIMITS.problem_seconds)
    assert run.kills == [(GRANDCHILD,)]
    run.send(kind="end", index=0, signal=signal.SIGKILL, exit=0)
    run.send(kind="start", index=1, pid=GRANDCHILD + 1)
    run.send(kind="begin", call_id="d1")
    run.later(0.5)
    assert run.kills[-1] == (CHILD, GRANDCHILD, GRANDCHILD + 1)
    run.send(kind="end", index=1, signal=signal.SIGKILL, exit=0)  # already in the pipe: taken as nothing
    run.exits(-signal.SIGKILL & 0xFF)
    closing = run.finish()
    assert run.problems()["softmax"][0] == "timeout" and "2 s (time limit)" in run.problems()["softmax"][1]
    assert run.problems()["double"] == (
        "timeout", "stopped: the attempt's time budget of 3 s (attempt_seconds) ran out while running double()")
    assert closing["status"] == "timeout" and "time budget of 3 s" in closing["message"]
    assert closing["answers"] == {"q": 1}  # what it did in budget is kept


def test_the_problems_a_budget_leaves_no_time_for_are_not_run_and_say_why():
    run = Run(limits=Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10, attempt_seconds=1.5))
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.later(1.5)
    assert run.kills == [(CHILD, GRANDCHILD)]
    run.exits(-signal.SIGKILL & 0xFF)
    run.finish()
    assert run.problems() == {
        "softmax": ("timeout", "stopped: the attempt's time budget of 1.5 s (attempt_seconds) ran out"),
        "double": ("not_run", "not run: the attempt's time budget of 1.5 s (attempt_seconds) ran out before this "
                              "problem")}


def test_a_starved_attempt_runs_past_its_limits_but_never_past_attempt_seconds():
    # what a loop lowered to the lowest priority meets on a busy machine: too little CPU to have used its time
    run = Run(cpu=0.0, limits=Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10, attempt_seconds=5.0))
    run.send(kind="loaded", answers={}, defined=[], cell_errors=[])
    run.send(kind="start", index=0, pid=GRANDCHILD)
    run.later(LIMITS.problem_seconds + 0.01)
    assert run.kills == []
    run.later(5.0 - LIMITS.problem_seconds)
    assert run.kills == [(CHILD, GRANDCHILD)]

