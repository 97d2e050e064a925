"""The supervisor of one job, as a state machine: the child's frames, output and exit, and clock ticks in; actions out.

Trusted (the handler's tier) and pure: it reads no pipe and kills nothing itself.
The handler (handler.py) feeds it events and carries out what it returns: `Kill`
a set of process groups, or `Answer` with the frames for the grader. Every frame
from the child is checked against the expected sequence; one that does not fit
ends the submission as "crashed" instead of confusing us.

Phases: LOAD (the module or notebook is loading) -> BETWEEN (waiting for the next
problem to start) <-> PROBLEM (one problem's calls) -> AFTER (done; the child is
given a moment to exit). Deadlines: load_seconds for LOAD, problem_seconds per
problem, GRACE_SECONDS for bookkeeping in BETWEEN and AFTER. A phase that got too
little CPU to have used its time (a neighbour's fork bomb) may run on, up to
STARVED_FACTOR times its limit. The whole attempt has a budget (qkv_runtime.limits.
job_seconds): when its cap, attempt_seconds, runs out the submission is stopped,
starved or not, and the problems it left are not run. An attempt that has run LONG_SECONDS of its own time (its wall
time less what its processes waited for a CPU) or used LONG_CPU_SECONDS of CPU (a starved attempt is not a long
one, a looping or sleeping one is) is lowered to the lowest CPU priority (`Lower`), so that it takes the CPU only from no one, and the grader is told
(a "long" frame): it may then ask the attempt to yield its worker to fresh work (`preempt`), which stops it and keeps
the problems it finished; the grader runs the rest again later, on what is left of its budget.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

from qkv_runtime.values import MAX_ANSWER_STR, clean_text, fmt_bytes, plain_answers, plain_defined
from qkv_runtime.wire import MAX_CALLS_PER_FRAME, MAX_OUTPUTS_PER_CALL, Status, encode_frame
from qkv_runtime.limits import LONG_CPU_SECONDS, LONG_SECONDS, Limits

GRACE_SECONDS = 3.0  # the child's own bookkeeping between problems, and its exit
STARVED_FACTOR = 3.0
STARVED_RECHECK_SECONDS = 0.25
EXIT_WAIT_SECONDS = 0.2  # after the child exits: take what is in the pipe, do not wait for writers it left
STDOUT_KEEP_BYTES = 8000
MAX_CELL_ERRORS = 50
WHERE = "{where}"  # placeholder in problem messages for " while running f()"
LOAD_FAILURES = frozenset({Status.LOAD_ERROR, Status.MEMORY, Status.EXITED, Status.CRASHED})

Verdict = Tuple[Status, str]


YIELDED = "the grader runs it again later"
MAX_PID = 1 << 22  # the kernel's largest pid_max: a bigger "pid" from the child is a lie
# What a problem expects once its last call is in: equal to nothing decoded JSON can hold (null included)
NO_CALL_EXPECTED = object()

class Phase(Enum):
    LOAD = "load"
    BETWEEN = "between"
    PROBLEM = "problem"
    AFTER = "after"


@dataclass(frozen=True)
class Kill:
    groups: Tuple[int, ...]


@dataclass(frozen=True)
class Answer:
    data: bytes  # encoded frames for the grader


@dataclass(frozen=True)
class Lower:
    """Give these process groups the lowest CPU priority (the attempt has run long)."""

    groups: Tuple[int, ...]


Action = Union[Kill, Answer, Lower]


@dataclass
class ProblemState:
    problem: Dict[str, Any]
    functions: Dict[str, str]  # call id -> function name, in the order the calls are made
    pid: int
    call: Optional[str] = None  # the call running now (non-batched problems say so)
    seen: Set[str] = field(default_factory=set)
    order: List[str] = field(default_factory=list)  # call ids, in order: results must come in this order
    spoiled: bool = False  # student code wrote on the channel: nothing more of this problem is taken
    verdict: Optional[Verdict] = None
    memory: bool = False
    sysexit: Optional[str] = None
    done: bool = False


@dataclass
class State:
    phase: Phase = Phase.LOAD
    started: float = 0.0
    deadline: float = 0.0
    load: Optional[Verdict] = None  # set once loading failed
    loaded: Optional[Dict[str, Any]] = None  # the child's "loaded" frame, checked
    next_problem: int = 0
    reported: Dict[str, Verdict] = field(default_factory=dict)
    current: Optional[ProblemState] = None
    groups: List[int] = field(default_factory=list)
    child_status: Optional[int] = None  # wait status once the child exited
    failure: Optional[Verdict] = None  # a submission-level failure after loading
    stdout: bytearray = field(default_factory=bytearray)
    phase_output: int = 0
    channel_open: bool = True
    finished: bool = False  # the closing frames were made
    ends: float = 0.0  # when the attempt's budget runs out
    begun: float = 0.0  # when the job began
    long_at: float = 0.0  # the soonest the attempt can be long (then lowered)
    lowered: bool = False
    out_of_budget: bool = False  # stopped when its budget ran out: nothing the child sends after is taken
    yielded: bool = False  # stopped to give its worker to fresh work: nothing the child sends after is taken


class Supervisor:
    """Feed it events; each returns the actions to carry out. `deadline` says when to call `tick`."""

    def __init__(self, problems: List[Dict[str, Any]], limits: Limits, child: int, now: float,
                 cpu_of: Callable[[int], float], seconds: Optional[float] = None,
                 waited: Callable[[Tuple[int, ...]], float] = lambda groups: 0.0, long: bool = False) -> None:
        """`seconds`: what is left of the attempt's budget for this job (earlier jobs of the attempt spent the
        rest), when the grader says; the budget named in messages is the whole attempt's. `waited`: the seconds
        the live processes of these groups spent waiting for a CPU (runnable, not running). `long`: the attempt
        ran long in an earlier job (it yielded, or its fast path ran long), so it is lowered at once."""
        self.problems = problems
        self.limits = limits
        self.cpu_of = cpu_of
        self.waited = waited
        self.long = long
        self.budget = limits.attempt_seconds
        ends = now + (self.budget if seconds is None else min(self.budget, seconds))
        self.state = State(started=now, deadline=now + limits.load_seconds, groups=[child], ends=ends,
                           begun=now, long_at=now if long else now + min(LONG_SECONDS, LONG_CPU_SECONDS))
        self._actions: List[Action] = []

    @property
    def deadline(self) -> float:
        s = self.state
        if s.phase is Phase.AFTER or s.child_status is not None:
            return s.deadline
        return min(s.deadline, s.ends, s.deadline if s.lowered else s.long_at)

    @property
    def waiting(self) -> bool:
        """Whether events may still come: the child runs, or its result channel is open."""
        return self.state.child_status is None or self.state.channel_open

    # -- events

    def frame(self, header: Dict[str, Any], blob: bytes, now: float) -> List[Action]:
        try:
            self._on_frame(header, blob, now)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            self._broken(f"{type(exc).__name__}: {clean_text(str(exc), 200)}")
        return self._take()

    def garbage(self, why: str) -> List[Action]:
        """The result channel carried bytes that are not frames: nothing more on it is read."""
        self._broken(why)
        self.state.channel_open = False
        return self._take()

    def keeps_more_output(self) -> bool:
        return len(self.state.stdout) < STDOUT_KEEP_BYTES

    def keep_output(self, data: bytes) -> None:
        s = self.state
        if len(s.stdout) < STDOUT_KEEP_BYTES:
            s.stdout += data[: STDOUT_KEEP_BYTES - len(s.stdout)]

    def output(self, data: bytes, now: float) -> List[Action]:
        s = self.state
        self.keep_output(data)
        s.phase_output += len(data)
        if s.phase_output > self.limits.max_output_bytes:
            cap = f"printed more than {self.limits.max_output_bytes:,} bytes"
            if s.phase is Phase.LOAD:
                self._kill(s.groups[0])
                s.load = (Status.LOAD_ERROR, f"{cap} while loading (output limit)")
                self._enter_after(now)
            elif s.phase is Phase.PROBLEM and s.current and not s.current.verdict:
                self._kill(s.current.pid)
                s.current.verdict = (Status.OUTPUT_LIMIT, f"{cap}{WHERE} (output limit)")
                s.deadline = now + GRACE_SECONDS
        return self._take()

    def child_exited(self, status: int, now: float) -> List[Action]:
        self.state.child_status = status
        # take what is already in the pipe, but do not wait for writers that outlived the child
        self.state.deadline = min(self.state.deadline, now + EXIT_WAIT_SECONDS)
        return self._take()

    def channel_closed(self) -> List[Action]:
        """EOF on the result channel: nothing more will come."""
        self.state.channel_open = False
        return self._take()

    def tick(self, now: float) -> List[Action]:
        """The deadline passed."""
        s = self.state
        running = s.child_status is None and s.phase is not Phase.AFTER
        if running and now >= s.ends:
            self._out_of_budget(now)
            return self._take()
        if running and not s.lowered and now >= s.long_at:
            own = now - s.begun - self.waited(tuple(s.groups))
            cpu = sum(self.cpu_of(group) for group in s.groups)
            if not self.long and own < LONG_SECONDS and cpu < LONG_CPU_SECONDS:
                # starved so far: looked at again when it may have run or used that much (no sooner than a recheck)
                s.long_at = now + max(STARVED_RECHECK_SECONDS, min(LONG_SECONDS - own, LONG_CPU_SECONDS - cpu))
            else:
                s.lowered = True
                self._actions.append(Lower((s.groups[0],) + ((s.current.pid,) if s.current else ())))
                self._answer({"kind": "long"})
            if now < s.deadline:
                return self._take()
        if s.child_status is not None:
            s.channel_open = False  # the child is gone: stop waiting for what its leftovers might write
        elif s.phase is Phase.LOAD:
            if self._starved(s.groups[0], self.limits.load_seconds, now):
                s.deadline = now + STARVED_RECHECK_SECONDS
            else:
                self._kill(s.groups[0])
                seconds = self.limits.load_seconds
                s.load = (Status.TIMEOUT, f"stopped after {seconds:g} s (time limit) while loading: "
                                          "an infinite loop at the top level?")
                self._enter_after(now)
        elif s.phase is Phase.PROBLEM and s.current and not s.current.verdict:
            if self._starved(s.current.pid, self.limits.problem_seconds, now):
                s.deadline = now + STARVED_RECHECK_SECONDS
            else:
                self._kill(s.current.pid)
                seconds = self.limits.problem_seconds
                s.current.verdict = (Status.TIMEOUT, f"stopped after {seconds:g} s (time limit){WHERE}: an infinite loop?")
                s.deadline = now + GRACE_SECONDS
        else:
            if s.phase is not Phase.AFTER:
                s.failure = s.failure or (Status.CRASHED, "the submission stopped responding to the sandbox")
            self._kill(*s.groups)
            s.deadline = now + GRACE_SECONDS
        return self._take()

    def preempt(self, now: float) -> List[Action]:
        """The grader asks the attempt to yield its worker to fresh work: what runs is stopped, the problems it
        finished are kept, the one it was in and those after it are left for the grader to run again. An attempt
        that has finished running, or was stopped already, has nothing to yield."""
        s = self.state
        if s.phase is Phase.AFTER or s.child_status is not None or s.out_of_budget or s.yielded:
            return self._take()
        s.yielded = True
        self._kill(*s.groups)
        s.current = None
        self._enter_after(now)
        return self._take()

    def stdout_text(self) -> str:
        return bytes(self.state.stdout).decode("utf-8", "replace")

    # -- frames

    def _on_frame(self, header: Dict[str, Any], blob: bytes, now: float) -> None:
        s = self.state
        if s.out_of_budget or s.yielded:
            return  # in the pipe when it was stopped: what ran before is kept, nothing after
        kind = header["kind"]
        if s.phase is Phase.LOAD and kind == "loaded":
            s.loaded = {"answers": plain_answers(header.get("answers")),
                        "defined": plain_defined(header.get("defined")),
                        "cell_errors": [clean_text(e, 300) for e in header.get("cell_errors", [])[:MAX_CELL_ERRORS]
                                        if isinstance(e, str)]}
            self._enter_between(now)
        elif s.phase is Phase.LOAD and kind == "load_failed":
            status = header.get("status")
            status = Status(status) if status in {x.value for x in LOAD_FAILURES} else Status.CRASHED
            s.load = (status, clean_text(str(header.get("message")), 500))
            self._enter_after(now)
        elif s.phase is Phase.BETWEEN and kind == "start" and header.get("index") == s.next_problem:
            self._start_problem(header["pid"], now)
        elif s.phase is Phase.BETWEEN and kind == "fork_failed" and header.get("index") == s.next_problem:
            problem_id = self.problems[s.next_problem]["id"]
            self._report(problem_id, (Status.CRASHED, "could not start: too many of the submission's processes "
                                                      "are still running"))
            s.next_problem += 1
            self._enter_between(now)
        elif s.phase is Phase.PROBLEM and kind != "start":
            self._on_problem_frame(kind, header, blob, now)
        elif kind in ("loaded", "load_failed", "start", "end"):
            raise ValueError(f"unexpected {kind!r} frame")

    def _start_problem(self, pid: Any, now: float) -> None:
        s = self.state
        if type(pid) is not int or not 1 < pid <= MAX_PID:
            raise ValueError(f"bad grandchild pid {pid!r}")
        problem = self.problems[s.next_problem]
        s.groups.append(pid)
        s.current = ProblemState(problem, {c["id"]: c["fn"] for c in problem["calls"]}, pid,
                                 order=[c["id"] for c in problem["calls"]])
        s.phase, s.phase_output = Phase.PROBLEM, 0
        s.started = now
        s.deadline = now + self.limits.problem_seconds

    def _on_problem_frame(self, kind: str, header: Dict[str, Any], blob: bytes, now: float) -> None:
        current = self.state.current
        assert current is not None
        call_id = header.get("call_id")
        expected = current.order[len(current.seen)] if len(current.seen) < len(current.order) else NO_CALL_EXPECTED
        if kind == "begin" and call_id == expected:
            current.call = call_id
        elif kind in ("begin", "call") and call_id != expected:
            # Calls are made in order, so a result out of order was written by student code: it spoils
            # this problem (only), and what came before it stays.
            self._spoil(current)
        elif kind == "call" and not current.spoiled and isinstance(call_id, str):  # it is: it equals `expected`
            current.seen.add(call_id)
            result = _checked_result(header, call_id)
            self._answer({"kind": "call", "problem": current.problem["id"], **result}, blob if result["ok"] else b"")
        elif kind == "calls" and not current.spoiled:
            self._on_results(current, header.get("results"), blob)
        elif kind == "memory":
            current.memory = True
        elif kind == "sysexit":
            current.sysexit = clean_text(str(header.get("code")), 100)
        elif kind == "done":
            current.done = True
        elif kind == "garbled":
            self._spoil(current)
        elif kind == "end" and header.get("index") == self.state.next_problem:
            self._end_problem(header.get("signal"), header.get("exit"), now)

    def _on_results(self, current: ProblemState, results: Any, blob: bytes) -> None:
        """A batch's "calls" frame: results in call order, each with the length of its arrays in `blob`. What
        comes before a result out of order (or a length that does not add up) is passed on, then the problem
        is spoiled."""
        if not isinstance(results, list) or not 0 < len(results) <= MAX_CALLS_PER_FRAME:
            self._spoil(current)
            return
        first = len(current.seen)
        expected_ids = current.order[first:first + len(results)]
        passed: List[Dict[str, Any]] = []
        kept: List[Tuple[int, int]] = []  # where the arrays of the ok results lie in `blob`
        offset, end = 0, len(blob)
        for entry, expected in zip(results, expected_ids):
            size = entry.get("bytes") if type(entry) is dict else None
            if type(size) is not int or entry.get("call_id") != expected or size < 0 or offset + size > end:
                break
            result = _checked_result(entry, expected)
            if result["ok"]:
                kept.append((offset, size))
            result["bytes"] = size if result["ok"] else 0
            passed.append(result)
            offset += size
        current.seen.update(expected_ids[:len(passed)])
        if passed:
            # the arrays of results in a row are the blob's bytes in a row: passed on uncut unless some were dropped
            uncut = sum(size for _, size in kept) == offset
            data = blob[:offset] if uncut else b"".join(blob[start:start + size] for start, size in kept)
            self._answer({"kind": "calls", "problem": current.problem["id"], "results": passed}, data)
        if len(passed) < len(results) or offset != end:
            self._spoil(current)

    def _spoil(self, current: ProblemState) -> None:
        if not current.spoiled:
            current.spoiled = True
            self._kill(current.pid)
        if not current.verdict:
            current.verdict = (Status.CRASHED, f"sent malformed results{WHERE}; the rest were discarded")

    def _end_problem(self, signum: Any, exit_code: Any, now: float) -> None:
        s = self.state
        current = s.current
        assert current is not None
        if current.verdict:
            verdict = current.verdict
        elif current.memory:
            verdict = (Status.MEMORY, f"ran out of memory{WHERE} (limit {fmt_bytes(self.limits.memory_bytes)})")
        elif current.sysexit is not None:
            verdict = (Status.EXITED, f"called sys.exit({current.sysexit}){WHERE}")
        elif type(signum) is int:
            verdict = self._signal_verdict(signum)
        elif exit_code != 0 or not current.done:
            verdict = (Status.EXITED, f"exited with code {clean_text(str(exit_code), 20)}{WHERE} (os._exit?)")
        else:
            n = len(current.seen)
            verdict = (Status.OK, f"ran {n} call{'s' if n != 1 else ''}")
        self._report(current.problem["id"], verdict)
        s.current = None
        s.next_problem += 1
        self._enter_between(now)

    def _signal_verdict(self, signum: int) -> Verdict:
        if signum == signal.SIGXCPU:
            return (Status.TIMEOUT, f"used more than {self.limits.cpu_seconds} s of CPU time{WHERE} (CPU limit)")
        if signum == signal.SIGXFSZ:
            size = fmt_bytes(self.limits.max_file_bytes)
            return (Status.CRASHED, f"wrote a file larger than {size}{WHERE} (file size limit)")
        return (Status.CRASHED, f"crashed with {signal_text(signum)}{WHERE}")

    # -- phases

    def _enter_between(self, now: float) -> None:
        s = self.state
        if s.next_problem >= len(self.problems):
            self._enter_after(now)
        else:
            s.phase = Phase.BETWEEN
            s.deadline = now + GRACE_SECONDS

    def _enter_after(self, now: float) -> None:
        self.state.phase = Phase.AFTER
        self.state.deadline = now + GRACE_SECONDS

    def _out_of_budget(self, now: float) -> None:
        """The attempt's budget ran out: what runs is stopped and charged, the problems not reached are not run."""
        s = self.state
        s.out_of_budget = True
        stopped = f"{self._budget_text()} ran out"
        if s.phase is Phase.LOAD:
            s.load = (Status.TIMEOUT, f"stopped: {stopped} while loading")
        elif s.phase is Phase.PROBLEM and s.current and not s.current.verdict:
            s.current.verdict = (Status.TIMEOUT, f"stopped: {stopped}{WHERE}")
        self._kill(*s.groups)
        self._enter_after(now)

    def _budget_text(self) -> str:
        return f"the attempt's time budget of {self.budget:g} s (attempt_seconds)"

    def _starved(self, group: int, limit: float, now: float) -> bool:
        if now - self.state.started >= STARVED_FACTOR * limit:
            return False
        return self.cpu_of(group) < 0.5 * limit

    def _broken(self, why: str) -> None:
        s = self.state
        s.failure = s.failure or (Status.CRASHED, f"the submission broke the sandbox's result channel ({why})")
        self._kill(*s.groups)

    # -- actions

    def _kill(self, *groups: int) -> None:
        self._actions.append(Kill(tuple(groups)))

    def _answer(self, header: Dict[str, Any], blob: bytes = b"") -> None:
        self._actions.append(Answer(encode_frame(header, blob)))

    def _take(self) -> List[Action]:
        actions, self._actions = self._actions, []
        return actions

    def _where(self) -> str:
        current = self.state.current
        call = current.call if current else None
        return f" while running {current.functions[call]}()" if current and call else ""

    def _report(self, problem_id: str, verdict: Verdict) -> None:
        # Where it happened is filled in only now: stdout and the frame naming the
        # running call come through different pipes, so the call may be known late.
        status, message = verdict
        message = message.replace(WHERE, self._where())
        self.state.reported[problem_id] = (status, message)
        self._answer({"kind": "problem", "problem": problem_id, "status": status.value, "message": message})

    # -- the end

    def finish(self, retire: bool = False, cpu: Optional[Dict[str, float]] = None) -> List[Action]:
        """The closing frames: every problem not reported yet, then the submission frame.

        `retire`: the worker ends after this job (what the job left could not be cleared), so the
        grader starts a fresh one before sending another. `cpu`: the seconds the handler and the
        submission's processes used (the handler's own accounting, for `qkv grade --timings`).
        """
        s = self.state
        if s.finished:
            return self._take()
        s.finished = True
        status, message = self._submission_status()
        if s.current is not None:
            self._report(s.current.problem["id"],
                         s.current.verdict or (Status.CRASHED, f"stopped{WHERE}: the submission's main process ended"))
        for problem in self.problems:
            if problem["id"] not in s.reported:
                reason = (YIELDED if s.yielded
                          else f"{self._budget_text()} ran out before this problem" if s.out_of_budget
                          else "the submission stopped before this problem" if s.loaded else "the module did not load")
                self._report(problem["id"], (Status.NOT_RUN, f"not run: {reason}"))
        # After a broken channel nothing the child said can be told apart from forgery.
        loaded = s.loaded if s.loaded and s.load is None and s.failure is None else {}
        self._answer({
            "kind": "submission", "status": status.value, "message": message,
            "answers": loaded.get("answers", {}), "defined": loaded.get("defined", []),
            "cell_errors": loaded.get("cell_errors", []),
            "stdout": clean_text(self.stdout_text(), MAX_ANSWER_STR),
            "retire": retire,
            "yielded": s.yielded,
            "cpu": cpu or {},
        })
        return self._take()

    def _submission_status(self) -> Verdict:
        s = self.state
        if s.yielded:
            return Status.TIMEOUT, f"stopped: it yielded its worker to fresh work ({YIELDED})"
        if s.load is not None:
            return s.load
        if s.loaded is None:
            return self._death_status("while loading")
        if s.out_of_budget:
            return Status.TIMEOUT, f"stopped: {self._budget_text()} ran out"
        if s.failure:
            return s.failure
        if s.next_problem >= len(self.problems):
            n = len(self.problems)
            return Status.OK, f"loaded and ran {n} problem{'s' if n != 1 else ''}"
        return self._death_status("between problems" if s.current is None else "while a problem ran")

    def _death_status(self, when: str) -> Verdict:
        status = self.state.child_status
        if status is None:
            return Status.CRASHED, f"stopped {when} for an unknown reason"
        code = os.waitstatus_to_exitcode(status)
        if code == -signal.SIGXCPU:
            return Status.TIMEOUT, f"used more than {self.limits.cpu_seconds} s of CPU time {when} (CPU limit)"
        if code < 0:
            return Status.CRASHED, f"crashed with {signal_text(-code)} {when}"
        return Status.EXITED, f"exited with code {code} {when} (os._exit?)"


def _checked_result(header: Dict[str, Any], call_id: str) -> Dict[str, Any]:
    """Call `call_id`'s result as the grader gets it: ok with a layout of 1 to MAX_OUTPUTS_PER_CALL arrays, or an
    error. Made for every call of a class, so built in one go."""
    layout = header.get("arrays")
    if header.get("ok") is True and type(layout) is list and 0 < len(layout) <= MAX_OUTPUTS_PER_CALL:
        return {"call_id": call_id, "ok": True, "error": None, "arrays": layout}
    error = header.get("error")
    return {"call_id": call_id, "ok": False, "error": clean_text(str(error), 1000) if error is not None else "no output",
            "arrays": []}


def signal_text(signum: int) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    description = signal.strsignal(signum) or ""
    return f"{name} ({description.lower()})" if description else name
