"""One job: the program, the problems' calls, the limits, the inputs.

The job comes from the trusted grader on the handler's stdin; the handler reads the
frame, keeps what supervising needs (`JobFrame`: the problems and the limits) and passes
the frame's bytes on, unchanged, to the job's child, which decodes the whole of it
(`read_job`) before any student code runs. So it is decoded without suspicion (none of
the checks of frames from student code); its arrays are read-only views of the frame's
bytes, and each call copies its inputs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from qkv_runtime.limits import Limits
from qkv_runtime.notebook import Step
from qkv_runtime.wire import FRAME_HEAD, read_exact


@dataclass(frozen=True)
class Program:
    """What to load: a module's source, or a notebook's steps (qkv_runtime.notebook)."""

    source: Optional[str] = None
    steps: Tuple[Step, ...] = ()

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Program":
        if "steps" in data:
            return cls(steps=tuple(Step.from_json(s) for s in data["steps"]))
        return cls(source=data["source"])


@dataclass(frozen=True)
class Job:
    program: Program
    problems: List[Dict[str, Any]]  # {"id", "calls": [{"id", "fn", "args", "kwargs"}], "batched"}
    limits: Limits
    arrays: Tuple[np.ndarray, ...]
    uid: Optional[int]  # the slot's uid when the worker runs as root
    scratch: str
    track: str


def inputs(blob: bytes, layout: List[List[Any]]) -> Tuple[np.ndarray, ...]:
    """The job's arrays, as the grader packed them (qkv_runtime.wire.pack_arrays): read-only views of `blob`."""
    arrays, offset, dtypes = [], 0, {}
    for name, shape in layout:
        dtype = dtypes.get(name) or dtypes.setdefault(name, np.dtype(name))
        count = math.prod(shape)
        arrays.append(np.frombuffer(blob, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    return tuple(arrays)


@dataclass(frozen=True)
class JobFrame:
    """A job as the handler holds it: its frame's bytes, to pass on, and what supervising it takes."""

    data: bytes
    problems: List[Dict[str, Any]]
    limits: Limits


def _read_frame(fd: int) -> Optional[Tuple[bytes, Dict[str, Any], int]]:
    """The next frame on `fd` whole, its header decoded, and where its blob starts; None at the end of input."""
    head = read_exact(fd, FRAME_HEAD.size)
    if head is None:
        return None
    head_len, blob_len = FRAME_HEAD.unpack(head)
    rest = read_exact(fd, head_len + blob_len)
    if rest is None:
        return None
    return head + rest, json.loads(rest[:head_len]), FRAME_HEAD.size + head_len


def read_job_frame(fd: int) -> Optional[JobFrame]:
    """The handler's read of the next job on `fd` (the grader's pipe), or None at the end of input."""
    frame = _read_frame(fd)
    if frame is None:
        return None
    data, header, _ = frame
    return JobFrame(data, header["problems"], Limits.from_json(header["limits"]))


def read_job(fd: int, config: Dict[str, Any]) -> Optional[Job]:
    """The child's read of its job on `fd` (the pipe from the handler), or None when it did not come whole."""
    frame = _read_frame(fd)
    if frame is None:
        return None
    data, header, blob_start = frame
    blob = memoryview(data)[blob_start:]
    return Job(
        program=Program.from_json(header["program"]),
        problems=header["problems"],
        limits=Limits.from_json(header["limits"]),
        arrays=inputs(blob, header["arrays"]),
        uid=config["uid"],
        scratch=config["scratch"],
        track=config["track"],
    )
