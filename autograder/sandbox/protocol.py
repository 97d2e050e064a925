"""Data types and wire format between the trusted grader and the sandbox worker.

Takes the grader's calls (plain arrays and scalars) and turns them into one job
frame for `worker.py`; takes the frames the worker sends back and turns them into
`SubmissionRun` values, refusing anything malformed, oversized, or executable
(arrays travel as raw bytes with a [dtype, shape] layout in the JSON header; only
numeric/bool dtype strings pass, declared sizes must match the bytes, nothing is
unpickled). No student code runs here.

A frame is ``struct ">II"`` (header length, blob length), a UTF-8 JSON header, and
an optional blob of raw array bytes. `worker.py` is standalone and carries its own
copy of this framing; keep the two in step.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

ArgValue = np.ndarray | int | float | bool | str | None

FRAME_HEAD = struct.Struct(">II")
MAX_HEADER_BYTES = 4 * 1024 * 1024
# One call's outputs; Transformer exercises return kilobytes, this leaves room
# for a generous attention map while keeping a hostile return cheap to refuse.
MAX_CALL_OUTPUT_BYTES = 32 * 1024 * 1024
MAX_OUTPUTS_PER_CALL = 64
MAX_ERROR_CHARS = 1000
MAX_MESSAGE_CHARS = 500
MAX_STDOUT_CHARS = 2000
MAX_DEFINED = 1000
MAX_ANSWER_NODES = 20000
MAX_ANSWER_DEPTH = 20
MAX_ANSWER_STR = 10000

SUBMISSION_STATUSES = frozenset({"ok", "load_error", "timeout", "memory", "crashed", "exited"})
PROBLEM_STATUSES = frozenset({"ok", "timeout", "memory", "crashed", "exited", "output_limit", "not_run"})
_NUMERIC_KINDS = frozenset("biufc")


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
    error: str | None = None


@dataclass(frozen=True)
class ProblemRun:
    status: str
    message: str
    results: Mapping[str, CallResult]


@dataclass(frozen=True)
class SubmissionRun:
    status: str
    message: str
    problems: Mapping[str, ProblemRun]
    answers: Mapping[str, object]
    defined: tuple[str, ...]
    stdout: str


@dataclass(frozen=True)
class Limits:
    load_seconds: float = 10.0
    problem_seconds: float = 10.0
    cpu_seconds: int = 20
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 16
    max_output_bytes: int = 1_000_000
    max_file_bytes: int = 10_000_000


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame."""


def encode_frame(header: Mapping[str, object], blob: bytes = b"") -> bytes:
    head = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode()
    return FRAME_HEAD.pack(len(head), len(blob)) + head + blob


class FrameReader:
    """Reads frames from a pipe with a deadline, without trusting the sizes it is told."""

    def __init__(self, fd: int, max_blob_bytes: int) -> None:
        self._fd = fd
        self._max_blob = max_blob_bytes
        self._buf = bytearray()

    def read(self, deadline: float) -> tuple[dict, bytes]:
        """Next frame; raises EOFError, TimeoutError or ProtocolError."""
        head = self._take(FRAME_HEAD.size, deadline)
        head_len, blob_len = FRAME_HEAD.unpack(head)
        if head_len > MAX_HEADER_BYTES or blob_len > self._max_blob:
            raise ProtocolError(f"frame too large ({head_len} + {blob_len} bytes)")
        try:
            header = json.loads(self._take(head_len, deadline))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"frame header is not JSON: {exc}") from None
        if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
            raise ProtocolError("frame header has no kind")
        return header, self._take(blob_len, deadline)

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self._buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(self._fd, max(65536, n - len(self._buf)))
            if not chunk:
                raise EOFError
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out


def _check_value(value: object, where: str) -> object:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{where}: arguments must be numpy arrays, int, float, bool, str or None")


_ENCODED_CALLS: dict[int, tuple[Sequence[ProblemCalls], list, dict, bytes]] = {}
_ENCODED_LOCK = threading.Lock()


def encode_calls(problems: Sequence[ProblemCalls]) -> tuple[list, dict, bytes]:
    """The calls as JSON-ready data, and their arrays as raw bytes with a {key: [dtype, shape, offset]} layout.

    A class sends the same calls with every submission, so the encoding is kept for
    the last few call lists (the list itself is held, so its id cannot be reused).
    """
    with _ENCODED_LOCK:
        cached = _ENCODED_CALLS.get(id(problems))
    if cached is not None and cached[0] is problems:
        return cached[1], cached[2], cached[3]
    arrays: dict[str, np.ndarray] = {}

    def arg(value: ArgValue, where: str) -> dict:
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in _NUMERIC_KINDS:
                raise TypeError(f"{where}: array dtype {value.dtype} is not numeric")
            key = f"k{len(arrays)}"
            arrays[key] = value
            return {"a": key}
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
            calls.append(
                {
                    "id": call.call_id,
                    "fn": call.function,
                    "args": [arg(a, where) for a in call.args],
                    "kwargs": {str(k): arg(v, where) for k, v in call.kwargs.items()},
                }
            )
        encoded.append({"id": problem.problem_id, "calls": calls, "batched": bool(problem.batched)})
    layout, chunks, offset = {}, [], 0
    for key, value in arrays.items():
        data = np.ascontiguousarray(value).tobytes()
        layout[key] = [value.dtype.str, list(value.shape), offset]
        chunks.append(data)
        offset += len(data)
    blob = b"".join(chunks)
    with _ENCODED_LOCK:
        if len(_ENCODED_CALLS) >= 8:
            _ENCODED_CALLS.pop(next(iter(_ENCODED_CALLS)))
        _ENCODED_CALLS[id(problems)] = (problems, encoded, layout, blob)
    return encoded, layout, blob


def encode_job(source: str, problems: Sequence[ProblemCalls], limits: Limits) -> bytes:
    """One job frame: JSON for the calls, scalars and array layout, raw bytes for the arrays."""
    if not isinstance(source, str):
        raise TypeError("source must be str (decode the submission before calling the sandbox)")
    encoded, layout, blob = encode_calls(problems)
    header = {
        "kind": "job",
        "source": source,
        "problems": encoded,
        "arrays": layout,
        "limits": {
            "load_seconds": float(limits.load_seconds),
            "problem_seconds": float(limits.problem_seconds),
            "cpu_seconds": int(limits.cpu_seconds),
            "memory_bytes": int(limits.memory_bytes),
            "max_processes": int(limits.max_processes),
            "max_output_bytes": int(limits.max_output_bytes),
            "max_file_bytes": int(limits.max_file_bytes),
        },
    }
    return encode_frame(header, blob)


_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}")
MAX_DIMENSIONS = 32


def decode_outputs(blob: bytes, layout: object) -> tuple[np.ndarray, ...]:
    """Arrays from raw bytes and their [[dtype, shape], ...] layout; refuses odd dtypes and forged sizes.

    No zip, no pickle, no header parser: only numeric dtype strings are accepted, and the
    declared sizes must add up to the bytes received before anything is allocated.
    """
    if not isinstance(layout, list) or not 0 <= len(layout) <= MAX_OUTPUTS_PER_CALL:
        raise ProtocolError("bad output layout")
    if len(blob) > MAX_CALL_OUTPUT_BYTES:
        raise ProtocolError("outputs too large")
    outputs, offset = [], 0
    for index, entry in enumerate(layout):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and _DTYPE.fullmatch(entry[0]) and isinstance(entry[1], list)
                and len(entry[1]) <= MAX_DIMENSIONS and all(type(n) is int and n >= 0 for n in entry[1])):
            raise ProtocolError(f"output {index} has a bad layout")
        try:
            dtype = np.dtype(entry[0])
        except TypeError:
            raise ProtocolError(f"output {index} has dtype {entry[0]}") from None
        if dtype.kind not in _NUMERIC_KINDS:
            raise ProtocolError(f"output {index} has dtype {dtype}")
        count = math.prod(entry[1])
        nbytes = count * dtype.itemsize
        if offset + nbytes > len(blob):
            raise ProtocolError(f"output {index} declares more data than it holds")
        outputs.append(np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(entry[1]).copy())
        offset += nbytes
    if offset != len(blob):
        raise ProtocolError("outputs hold bytes no array declares")
    return tuple(outputs)


def clean_text(value: object, limit: int, mark_cut: bool = True) -> str:
    """`value` if it is a str, as valid UTF-8 and at most `limit` chars (a cut marked with …); else ""."""
    if not isinstance(value, str):
        return ""
    text = value.encode("utf-8", "replace").decode("utf-8", "replace")
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "\u2026" if mark_cut else text[:limit]


def clean_answers(value: object) -> dict[str, object]:
    """Keep ANSWERS as plain JSON data within size caps; anything else becomes {}."""
    if not isinstance(value, dict):
        return {}
    budget = [MAX_ANSWER_NODES]

    def clean(item: object, depth: int) -> object:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_ANSWER_DEPTH:
            return "\u2026"
        if item is None or isinstance(item, bool) or isinstance(item, int):
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else repr(item)
        if isinstance(item, str):
            return clean_text(item, MAX_ANSWER_STR)
        if isinstance(item, list):
            return [clean(v, depth + 1) for v in item]
        if isinstance(item, dict):
            return {clean_text(k, 200): clean(v, depth + 1) for k, v in item.items()}
        return "\u2026"

    return {clean_text(k, 200): clean(v, 1) for k, v in value.items()}


def clean_defined(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    names = [v for v in value[:MAX_DEFINED] if isinstance(v, str) and v.isidentifier()]
    return tuple(sorted(set(names)))
