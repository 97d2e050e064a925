"""The trusted side of the wire: the calls in, problem-set and job frames out; the worker's frames in, a `SubmissionRun` out.

Arrays travel as raw bytes plus a [dtype, shape] layout (`qkv_runtime.wire`); only
numeric dtypes pass, declared sizes must match the bytes, nothing is unpickled.
Everything the worker says is checked against the job: an unknown call, a second
result for one call, a status that does not exist, is a `ProtocolError`; strings
are cut and made valid UTF-8; ANSWERS are made plain data again. No student code
runs here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

from qkv_runtime.limits import Limits
from qkv_runtime.notebook import Step
from qkv_runtime.values import clean_text, plain_answers, plain_defined
from qkv_runtime.wire import (
    MAX_CALLS_PER_FRAME,
    NUMERIC_KINDS,
    PROBLEM_STATUSES,
    SUBMISSION_STATUSES,
    ProtocolError,
    encode_json,
    frame_of,
    pack_arrays,
    unpack_arrays,
)

ArgValue = Union[np.ndarray, int, float, bool, str, None]
MAX_ERROR_CHARS = 1000
MAX_MESSAGE_CHARS = 500
MAX_STDOUT_CHARS = 2000
MAX_CELL_ERRORS = 50

__all__ = ["ArgValue", "Call", "CallResult", "Limits", "ProblemCalls", "ProblemRun", "Program", "ProtocolError",
           "RunCollector", "SandboxCpu", "SubmissionRun", "encode_job", "encode_problem_set"]


@dataclass(frozen=True)
class Program:
    """What a submission is to run: a module's source, or a notebook's steps (qkv_runtime.notebook)."""

    source: Optional[str] = None
    steps: Optional[tuple[Step, ...]] = None

    def to_json(self) -> dict:
        if self.steps is not None:
            return {"steps": [s.to_json() for s in self.steps]}
        return {"source": self.source or ""}


@dataclass(frozen=True)
class Call:
    """One call of a student function."""

    call_id: str
    function: str
    args: tuple[ArgValue, ...] = ()
    kwargs: Mapping[str, ArgValue] = field(default_factory=dict)


@dataclass(frozen=True)
class ProblemCalls:
    """The calls of one problem, with their own time budget.

    By default they run in a process of their own and each call's result is sent as
    soon as it is made, so a crash keeps the results before it, names the call that
    was running, and leaves the other problems running. `batched` runs them in the
    submission's main process and sends every result in one write at the end: no
    fork and one message instead of dozens, but all or nothing, since any failure
    ends the whole run (for callers that then rerun the problems one by one).
    """

    problem_id: str
    calls: tuple[Call, ...]
    batched: bool = False


@dataclass(frozen=True)
class CallResult:
    ok: bool
    outputs: tuple[np.ndarray, ...] = ()
    error: Optional[str] = None


@dataclass(frozen=True)
class ProblemRun:
    status: str
    message: str
    results: Mapping[str, CallResult]


@dataclass(frozen=True)
class SandboxCpu:
    """CPU seconds of one job in the sandbox, by the handler's accounting: the trusted processes' (the handler's,
    and the zygote's fork of the job's child and its reaping), and the submission's processes while loading and
    after (its calls). Figures for `qkv grade --timings`, never for scores."""

    handler: float = 0.0
    load: float = 0.0
    calls: float = 0.0

    @staticmethod
    def from_json(data: object) -> "SandboxCpu":
        data = data if isinstance(data, dict) else {}

        def seconds(key: str) -> float:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):  # JSON's numbers, not its booleans
                return 0.0
            return float(value) if 0 <= value < 1e6 else 0.0

        return SandboxCpu(seconds("handler"), seconds("load"), seconds("calls"))


@dataclass(frozen=True)
class SubmissionRun:
    status: str
    message: str
    problems: Mapping[str, ProblemRun]
    answers: Mapping[str, object]
    defined: tuple[str, ...]
    stdout: str
    cell_errors: tuple[str, ...] = ()  # a notebook's cells that failed while it loaded
    cpu: SandboxCpu = SandboxCpu()
    seconds: float = 0.0  # wall time of its job, sent to last frame (what it spent of the attempt's budget)
    yielded: bool = False  # stopped to give its worker to fresh work: the problems it did not run are to run again


# ---------------------------------------------------------------- jobs


def _check_value(value: object, where: str) -> object:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{where}: arguments must be numpy arrays, int, float, bool, str or None")


_ENCODED_SETS: dict[int, tuple[Sequence[ProblemCalls], Limits, bytes]] = {}
_ENCODED_LOCK = threading.Lock()


def encode_problem_set(problems: Sequence[ProblemCalls], limits: Limits) -> bytes:
    """The class's side of its jobs as one "problems" frame: JSON for the calls, their scalars, the arrays' layout
    and the limits; raw bytes for the arrays. A worker holds the last set it was sent, so it travels once per
    worker and call list, not with every submission (`encode_job`).

    A class sends the same calls with every submission, so the encoding is kept for
    the last few call lists (the list itself is held, so its id cannot be reused).
    """
    with _ENCODED_LOCK:
        cached = _ENCODED_SETS.get(id(problems))
    if cached is not None and cached[0] is problems and cached[1] == limits:
        return cached[2]
    arrays: list[np.ndarray] = []

    def arg(value: ArgValue, where: str) -> dict:
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in NUMERIC_KINDS:
                raise TypeError(f"{where}: array dtype {value.dtype} is not numeric")
            arrays.append(value)
            return {"a": len(arrays) - 1}
        return {"v": _check_value(value, where)}

    seen_problems: set[str] = set()
    seen_calls: set[str] = set()
    encoded = []
    for problem in problems:
        if problem.problem_id in seen_problems:
            raise ValueError(f"duplicate problem_id {problem.problem_id!r}")
        seen_problems.add(problem.problem_id)
        calls = []
        for call in problem.calls:
            if call.call_id in seen_calls:
                raise ValueError(f"duplicate call_id {call.call_id!r}")
            seen_calls.add(call.call_id)
            where = f"call {call.call_id!r}"
            calls.append({"id": call.call_id, "fn": call.function, "args": [arg(a, where) for a in call.args],
                          "kwargs": {str(k): arg(v, where) for k, v in call.kwargs.items()}})
        encoded.append({"id": problem.problem_id, "calls": calls, "batched": bool(problem.batched)})
    layout, blob = pack_arrays(arrays)
    frame = frame_of(b'{"kind":"problems","problems":' + encode_json(encoded) + b',"arrays":' + encode_json(layout)
                     + b',"limits":' + encode_json(limits.to_json()) + b"}", blob)
    with _ENCODED_LOCK:
        if len(_ENCODED_SETS) >= 8:
            _ENCODED_SETS.pop(next(iter(_ENCODED_SETS)))
        _ENCODED_SETS[id(problems)] = (problems, limits, frame)
    return frame


def encode_job(program: Program, seconds: float, long: bool = False) -> bytes:
    """One submission's job frame: its program and the wall seconds it may take (what is left of the attempt's
    budget, qkv_runtime.limits.job_seconds); it runs the calls of the problem set its worker holds. `long`: the
    attempt ran long in an earlier job (it runs at the lowest priority from the start)."""
    return frame_of(b'{"kind":"job","seconds":' + encode_json(round(seconds, 3)) + (b',"long":true' if long else b"")
                    + b',"program":' + encode_json(program.to_json()) + b"}")


YIELD_FRAME = frame_of(b'{"kind":"yield"}')  # the grader asks the running job to yield its worker to fresh work


# ---------------------------------------------------------------- answers


class RunCollector:
    """Builds a SubmissionRun from the worker's frames, checking each against the job."""

    def __init__(self, problems: Sequence[ProblemCalls], ran_long: Callable[[], None] = lambda: None) -> None:
        """`ran_long`: called when the worker says the job has run long (a "long" frame)."""
        self.problems = problems
        self.ran_long = ran_long
        self.call_ids = {p.problem_id: {c.call_id for c in p.calls} for p in problems}
        self.results: dict[str, dict[str, CallResult]] = {p.problem_id: {} for p in problems}
        self.runs: dict[str, ProblemRun] = {}
        self.retire = False  # the worker ends after this job

    def add(self, header: dict, blob: bytes) -> Optional[SubmissionRun]:
        """Take one frame; gives the run once its closing frame arrived. Raises ProtocolError."""
        kind = header["kind"]
        if kind == "call":
            self._add_call(header.get("problem"), header, blob)
        elif kind == "calls":
            self._add_calls(header, blob)
        elif kind == "problem":
            problem, status = header.get("problem"), header.get("status")
            status = status if isinstance(status, str) else None
            if not isinstance(problem, str) or problem not in self.results or status not in PROBLEM_STATUSES:
                raise ProtocolError(f"bad problem frame for {clean_text(str(problem), 80)!r}")
            message = clean_text(header.get("message"), MAX_MESSAGE_CHARS)
            self.runs[problem] = ProblemRun(status, message, self.results[problem])
        elif kind == "long":
            self.ran_long()
        elif kind == "submission":
            status = header.get("status")
            if not isinstance(status, str) or status not in SUBMISSION_STATUSES:
                raise ProtocolError(f"bad submission status {clean_text(str(status), 40)!r}")
            self.retire = header.get("retire") is True
            cells = header.get("cell_errors")
            return SubmissionRun(
                status=status,
                message=clean_text(header.get("message"), MAX_MESSAGE_CHARS),
                problems=self._problem_runs("not run: the sandbox did not report this problem"),
                answers=plain_answers(header.get("answers")),
                defined=tuple(plain_defined(header.get("defined"))),
                stdout=clean_text(header.get("stdout"), MAX_STDOUT_CHARS, mark_cut=False),
                cell_errors=tuple(clean_text(c, 300) for c in cells[:MAX_CELL_ERRORS]) if isinstance(cells, list) else (),
                cpu=SandboxCpu.from_json(header.get("cpu")),
                yielded=header.get("yielded") is True,
            )
        else:
            raise ProtocolError(f"unexpected {clean_text(kind, 40)!r} frame")
        return None

    def _add_calls(self, header: dict, blob: bytes) -> None:
        """A batch's results, each with the length of its arrays in `blob`, one after another."""
        results = header.get("results")
        if not isinstance(results, list) or not 0 < len(results) <= MAX_CALLS_PER_FRAME:
            raise ProtocolError("bad calls frame")
        offset, view, problem = 0, memoryview(blob), header.get("problem")
        for entry in results:
            size = entry.get("bytes") if isinstance(entry, dict) else None
            if type(size) is not int or size < 0 or offset + size > len(blob):
                raise ProtocolError("bad calls frame: its arrays do not add up")
            self._add_call(problem, entry, view[offset:offset + size])
            offset += size
        if offset != len(blob):
            raise ProtocolError("bad calls frame: bytes no result declares")

    def _add_call(self, problem: object, header: dict, blob: Union[bytes, memoryview]) -> None:
        call_id = header.get("call_id")
        if (not isinstance(problem, str) or not isinstance(call_id, str) or call_id not in self.call_ids.get(problem, ())
                or call_id in self.results[problem]):
            raise ProtocolError(f"unexpected result for call {clean_text(str(call_id), 80)!r}")
        if header.get("ok") is not True:
            error = clean_text(header.get("error"), MAX_ERROR_CHARS) or "failed"
            self.results[problem][call_id] = CallResult(ok=False, error=error)
            return
        try:
            # read-only views of the frame: scoring only reads them, and drops them with the run
            outputs = unpack_arrays(blob, header.get("arrays"), copy=False)
        except ProtocolError as exc:
            self.results[problem][call_id] = CallResult(ok=False, error=f"returned data the grader cannot read ({exc})")
            return
        self.results[problem][call_id] = CallResult(ok=True, outputs=outputs)

    def _problem_runs(self, missing: str) -> dict[str, ProblemRun]:
        return {
            p.problem_id: self.runs.get(p.problem_id) or ProblemRun("not_run", missing, self.results[p.problem_id])
            for p in self.problems
        }

    def broken(self, message: str) -> SubmissionRun:
        runs = self._problem_runs(f"not run: {message}")
        for problem_id, run in runs.items():
            if problem_id not in self.runs and run.results:
                runs[problem_id] = ProblemRun("crashed", message, run.results)
        return SubmissionRun("crashed", message, runs, {}, (), "")
