"""One job as the handler reads it from the grader: the program, the problems' calls, the limits, the inputs.

The job comes from the trusted grader on the handler's stdin, so it is decoded
without suspicion (none of the checks of frames from student code: a handler per
job decodes it, and they cost a few milliseconds a job); its arrays are read-only
views of the frame's bytes, and each call copies its inputs.
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


def read_job(fd: int, config: Dict[str, Any]) -> Optional[Job]:
    """The next job on `fd`, or None at the end of input."""
    head = read_exact(fd, FRAME_HEAD.size)
    if head is None:
        return None
    head_len, blob_len = FRAME_HEAD.unpack(head)
    header = json.loads(read_exact(fd, head_len) or b"")
    blob = read_exact(fd, blob_len) or b""
    return Job(
        program=Program.from_json(header["program"]),
        problems=header["problems"],
        limits=Limits.from_json(header["limits"]),
        arrays=inputs(blob, header["arrays"]),
        uid=config["uid"],
        scratch=config["scratch"],
        track=config["track"],
    )
