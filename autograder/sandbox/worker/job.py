"""One job: the program, and the problem set it runs (the problems' calls, the limits, the inputs).

Both come from the trusted grader on the handler's stdin, as two kinds of frame. A
"problems" frame is the class's: the handler keeps what supervising needs of it
(`ProblemSet.problems`, `.limits`) and hands the frame to the zygote, which decodes
it once (`read_problem_set`) and holds it, so each child it forks inherits it
decoded; it is the same for every student, so holding it keeps nothing of one
student for the next. A "job" frame is one submission's program: the handler passes
its bytes on, unchanged, to the job's child, which decodes it (`read_job`) before
any student code runs. Neither is decoded with suspicion (none of the checks of
frames from student code); the arrays are read-only views of the set's bytes, and
each call copies its inputs.
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


def inputs(blob: bytes | memoryview, layout: List[List[Any]]) -> Tuple[np.ndarray, ...]:
    """The job's arrays, as the grader packed them (qkv_runtime.wire.pack_arrays): read-only views of `blob`."""
    arrays: List[np.ndarray] = []
    offset = 0
    dtypes: Dict[str, np.dtype] = {}
    for name, shape in layout:
        dtype = dtypes.get(name) or dtypes.setdefault(name, np.dtype(name))
        count = math.prod(shape)
        arrays.append(np.frombuffer(blob, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    return tuple(arrays)


@dataclass(frozen=True)
class ProblemSet:
    """A "problems" frame: its bytes (to hand to the zygote), and what supervising and running its jobs take."""

    data: bytes
    problems: List[Dict[str, Any]]
    limits: Limits
    arrays: Tuple[np.ndarray, ...] = ()


def read_frame(fd: int) -> Optional[Tuple[bytes, Dict[str, Any], int]]:
    """The next frame on `fd` whole, its header decoded, and where its blob starts; None at the end of input."""
    head = read_exact(fd, FRAME_HEAD.size)
    if head is None:
        return None
    head_len, blob_len = FRAME_HEAD.unpack(head)
    rest = read_exact(fd, head_len + blob_len)
    if rest is None:
        return None
    return head + rest, json.loads(rest[:head_len]), FRAME_HEAD.size + head_len


def problem_set_of(data: bytes, header: Dict[str, Any]) -> ProblemSet:
    """The handler's view of a "problems" frame: no arrays, which only a child uses."""
    return ProblemSet(data, header["problems"], Limits.from_json(header["limits"]))


def read_problem_set(fd: int) -> Optional[ProblemSet]:
    """The zygote's read of the problem set the handler hands it, arrays and all; None when it did not come whole."""
    frame = read_frame(fd)
    if frame is None or frame[1].get("kind") != "problems":
        return None
    data, header, blob_start = frame
    return ProblemSet(data, header["problems"], Limits.from_json(header["limits"]),
                      inputs(memoryview(data)[blob_start:], header["arrays"]))


def read_job(fd: int, held: ProblemSet, config: Dict[str, Any]) -> Optional[Job]:
    """The child's read of its job on `fd` (the pipe from the handler), or None when it did not come whole;
    it runs the problem set `held`, which the zygote holds."""
    frame = read_frame(fd)
    if frame is None:
        return None
    return Job(
        program=Program.from_json(frame[1]["program"]),
        problems=held.problems,
        limits=held.limits,
        arrays=held.arrays,
        uid=config["uid"],
        scratch=config["scratch"],
        track=config["track"],
    )
