"""Runs untrusted student code in isolation and hands back plain arrays.

Takes a submission's Python source and the calls to make (plain arrays and
scalars); gives a `SubmissionRun` with each call's outputs as numeric numpy
arrays, or a status and a message a student can read. Expected values never
enter the sandbox: comparing is the grader's job, in its own process.
"""

from autograder.sandbox.pool import SandboxError, SandboxPool, isolation_available
from autograder.sandbox.protocol import (
    ArgValue,
    Call,
    CallResult,
    Limits,
    ProblemCalls,
    ProblemRun,
    SubmissionRun,
)

__all__ = [
    "ArgValue",
    "Call",
    "CallResult",
    "Limits",
    "ProblemCalls",
    "ProblemRun",
    "SandboxError",
    "SandboxPool",
    "SubmissionRun",
    "isolation_available",
]
