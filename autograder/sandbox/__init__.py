"""Runs untrusted student code in isolation and hands back plain arrays.

Takes a submission's program (a module's source or a notebook's steps) and the
calls to make (plain arrays and scalars); gives a `SubmissionRun` with each call's
outputs as numeric numpy arrays, or a status and a message a student can read.
Expected values never enter the sandbox: comparing is the grader's job, in its
own process.

`pool.py` (trusted) keeps warm workers; `fair.py` says which waiting job starts next
(fresh work before work that ran long); `policy.py` says, as data, what a worker
sees; `protocol.py` encodes jobs and checks answers; `worker/` is what runs inside.
"""

from autograder.sandbox.isolation import SandboxError
from autograder.sandbox.pool import SandboxPool, default_slots, isolation_available
from autograder.sandbox.protocol import (
    ArgValue,
    Call,
    CallResult,
    Limits,
    ProblemCalls,
    ProblemRun,
    Program,
    SandboxCpu,
    SubmissionRun,
)

__all__ = [
    "ArgValue",
    "Call",
    "CallResult",
    "Limits",
    "ProblemCalls",
    "ProblemRun",
    "Program",
    "SandboxCpu",
    "SandboxError",
    "SandboxPool",
    "SubmissionRun",
    "default_slots",
    "isolation_available",
]
