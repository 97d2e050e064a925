"""The wire format between the trusted grader and the sandbox, and between the sandbox's own processes.

A frame is ``struct ">II"`` (header length, blob length), a UTF-8 JSON header (an
object with a "kind"), and an optional blob of raw array bytes. Arrays travel as
bytes plus a layout, a list of ``[dtype, shape]`` packed one after another: only
numeric or bool dtype strings pass, the declared sizes must add up to the bytes
received before anything is allocated, and nothing is ever unpickled.

Every decoder here is bounded: frame sizes, JSON nesting (a deep header is a
`ProtocolError`, never a RecursionError), dimensions and element counts. Whoever
reads frames written by student code gets a `ProtocolError` for any bytes at all.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import struct
import time
from enum import Enum
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

FRAME_HEAD = struct.Struct(">II")
MAX_HEADER_BYTES = 4 * 1024 * 1024
# One call's outputs: Transformer exercises return kilobytes; this leaves room for a
# generous attention map while keeping a hostile return cheap to refuse.
MAX_CALL_OUTPUT_BYTES = 32 * 1024 * 1024
MAX_OUTPUTS_PER_CALL = 64
MAX_DIMENSIONS = 32
MAX_DIMENSION = 2**31 - 1
# Frames inside the sandbox carry one call's outputs plus their header.
MAX_CHILD_BLOB = MAX_CALL_OUTPUT_BYTES + 64 * 1024
# A frame from the sandbox to the grader: the largest call frame, with room for its header.
MAX_RESULT_BLOB = MAX_CALL_OUTPUT_BYTES + (1 << 20)
MAX_JSON_DEPTH = 64
# A batched problem's results travel as "calls" frames of up to this many results, flushed once their arrays
# reach CALLS_FRAME_BYTES: one frame (one JSON header to check, one write) instead of one per call. A call's own
# output may still fill a frame alone.
MAX_CALLS_PER_FRAME = 128
CALLS_FRAME_BYTES = 1 << 20
NUMERIC_KINDS = frozenset("biufc")

_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}")
Frame = Tuple[Dict[str, Any], bytes]


class Status(str, Enum):
    """How running a submission, or one of its problems, ended (as the frames say it)."""

    OK = "ok"
    LOAD_ERROR = "load_error"  # the module raised while loading (a notebook's cells never do: see notebook.py)
    TIMEOUT = "timeout"
    MEMORY = "memory"
    CRASHED = "crashed"
    EXITED = "exited"
    OUTPUT_LIMIT = "output_limit"  # a problem printed too much
    NOT_RUN = "not_run"  # a problem that never started


SUBMISSION_STATUSES = frozenset(s.value for s in Status) - {"output_limit", "not_run"}
PROBLEM_STATUSES = frozenset(s.value for s in Status) - {"load_error"}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame or layout."""


# ---------------------------------------------------------------- frames


def encode_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def encode_frame(header: Dict[str, Any], blob: bytes = b"") -> bytes:
    return frame_of(encode_json(header), blob)


def frame_of(head: bytes, blob: bytes = b"") -> bytes:
    """A frame of a header already encoded as JSON (an object with a "kind")."""
    return FRAME_HEAD.pack(len(head), len(blob)) + head + blob


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = np.zeros(256, dtype=np.int8)
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1


def json_depth_ok(text: bytes) -> bool:
    """Whether brackets nest at most MAX_JSON_DEPTH deep (counted over the raw bytes, strings included:
    a cheap upper bound, so a deep header is refused before the recursive decoder sees it)."""
    brackets = text.translate(None, _NOT_BRACKETS)
    if len(brackets) <= MAX_JSON_DEPTH:
        return True
    # vectorised: the intake runs this over every notebook of the class, ~100 kB each
    return int(np.cumsum(_STEP[np.frombuffer(brackets, dtype=np.uint8)], dtype=np.int64).max()) <= MAX_JSON_DEPTH


def decode_header(raw: bytes) -> Dict[str, Any]:
    if not json_depth_ok(raw):
        raise ProtocolError(f"frame header nests deeper than {MAX_JSON_DEPTH}")
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"frame header is not JSON ({type(exc).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
        raise ProtocolError("frame header is not a JSON object with a kind")
    return header


class FrameBuffer:
    """Splits a byte stream into frames. Garbage sets `error` for good: `feed` then gives the frames
    before it and nothing after, so a caller handles what came in order, then the break."""

    def __init__(self, max_blob: int) -> None:
        self._buf = bytearray()
        self._max_blob = max_blob
        self.error: Optional[str] = None

    def feed(self, data: bytes) -> List[Frame]:
        if self.error is not None:
            return []
        self._buf += data
        frames: List[Frame] = []
        start = 0
        try:
            while len(self._buf) - start >= FRAME_HEAD.size:
                head_len, blob_len = FRAME_HEAD.unpack_from(self._buf, start)
                if head_len > MAX_HEADER_BYTES or blob_len > self._max_blob:
                    raise ProtocolError(f"frame of {head_len} + {blob_len} bytes")
                end = start + FRAME_HEAD.size + head_len + blob_len
                if len(self._buf) < end:
                    break
                body = start + FRAME_HEAD.size
                header = decode_header(bytes(self._buf[body : body + head_len]))
                frames.append((header, bytes(self._buf[body + head_len : end])))
                start = end
        except ProtocolError as exc:
            self.error = str(exc)
            self._buf.clear()
            return frames
        del self._buf[:start]
        return frames


class FrameReader:
    """Reads frames from a pipe with a deadline, without trusting the sizes it is told."""

    def __init__(self, fd: int, max_blob: int) -> None:
        self._fd = fd
        self._frames = FrameBuffer(max_blob)
        self._ready: List[Frame] = []

    def read(self, deadline: float) -> Frame:
        """The next frame; raises EOFError, TimeoutError or ProtocolError."""
        while not self._ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            if self._frames.error is not None:
                raise ProtocolError(self._frames.error)
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                raise EOFError
            self._ready.extend(self._frames.feed(chunk))
        return self._ready.pop(0)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, n: int) -> Optional[bytes]:
    chunks, have = [], 0
    while have < n:
        chunk = os.read(fd, min(n - have, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- arrays


def pack_arrays(arrays: Sequence[np.ndarray]) -> Tuple[List[list], bytes]:
    """Numeric arrays as ([[dtype, shape], ...], their bytes one after another, each in C order)."""
    layout = [[array.dtype.str, list(array.shape)] for array in arrays]
    return layout, b"".join(array.tobytes() for array in arrays)


# Checked layout entries, by (dtype, shape): a class's outputs have the same few shapes again and again, so each is
# checked once. Bounded, and filled only with entries that passed.
_CHECKED: Dict[Tuple[str, Tuple[int, ...]], Tuple[np.dtype, Tuple[int, ...], int, int]] = {}
MAX_CHECKED_LAYOUTS = 4096


def _layout_entry(index: int, entry: Any) -> Tuple[np.dtype, Tuple[int, ...], int, int]:
    """One [dtype, shape] entry, checked: (dtype, shape, element count, bytes)."""
    if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is str and type(entry[1]) is list
            and len(entry[1]) <= MAX_DIMENSIONS and all(type(n) is int for n in entry[1])):
        raise ProtocolError(f"array {index} has a bad layout")
    key = (entry[0], tuple(entry[1]))
    known = _CHECKED.get(key)
    if known is not None:
        return known
    if not (_DTYPE.fullmatch(entry[0]) and all(0 <= n <= MAX_DIMENSION for n in entry[1])):
        raise ProtocolError(f"array {index} has a bad layout")
    try:
        dtype = np.dtype(entry[0])
    except TypeError:
        raise ProtocolError(f"array {index} has dtype {entry[0]}") from None
    if dtype.kind not in NUMERIC_KINDS:
        raise ProtocolError(f"array {index} has dtype {dtype}")
    count = math.prod(key[1])
    checked = (dtype, key[1], count, count * dtype.itemsize)
    if len(_CHECKED) < MAX_CHECKED_LAYOUTS:
        _CHECKED[key] = checked
    return checked


def unpack_arrays(blob: bytes | memoryview, layout: Any, copy: bool = True, limit: int = MAX_OUTPUTS_PER_CALL) -> Tuple[np.ndarray, ...]:
    """Arrays from bytes and their layout; refuses odd dtypes, absurd shapes and forged sizes.

    `copy=False` gives read-only views of `blob` (the sandbox's inputs, from the grader).
    """
    if not isinstance(layout, list) or len(layout) > limit:
        raise ProtocolError("bad array layout")
    arrays, offset = [], 0
    for index, entry in enumerate(layout):
        dtype, shape, count, nbytes = _layout_entry(index, entry)
        if offset + nbytes > len(blob):
            raise ProtocolError(f"array {index} declares more data than it holds")
        try:
            array = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
        except (ValueError, TypeError, OverflowError, MemoryError) as exc:
            # e.g. a shape of [0, 10**9, 10**9]: no bytes, but more elements than numpy can index
            raise ProtocolError(f"array {index} has an impossible shape ({type(exc).__name__})") from None
        arrays.append(array.copy() if copy else array)
        offset += nbytes
    if offset != len(blob):
        raise ProtocolError("the blob holds bytes no array declares")
    return tuple(arrays)
