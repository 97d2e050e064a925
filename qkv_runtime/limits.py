"""The numbers of the grading policy, shared by every route that runs student code.

The manifest may set them; the build writes them into the grading bundle and into
the release's self-check data, so `qkv grade`, Gradescope, the pytest route, the
self-check and nbgrader all run under the same limits (CLI flags override).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Dict

# An attempt that has run this many seconds of its own time (its wall time less what its processes waited for a
# CPU), or used LONG_CPU_SECONDS of CPU, is a long one: it runs on at the lowest CPU priority, no longer holds one
# of the pool's slots, and yields its worker when fresh attempts find none (sandbox/fair.py, worker/supervisor.py).
# An honest attempt of a whole assignment takes well under a second of CPU: one starved by a busy machine waits
# for a CPU, which is neither its own time nor CPU it used, so it is not long; a loop uses CPU, a sleep is its own.
LONG_SECONDS = 3.0
LONG_CPU_SECONDS = 1.0
LOWEST_PRIORITY = 19  # the nice value a long attempt's processes get


@dataclass(frozen=True)
class Limits:
    load_seconds: float = 10.0  # wall time to load the module (run the notebook's cells)
    problem_seconds: float = 10.0  # wall time for all the calls of one problem
    attempt_seconds: float = 60.0  # the most wall time one whole attempt may take, loading included
    cpu_seconds: int = 20
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 16
    max_output_bytes: int = 1_000_000  # printed by one phase (loading, or one problem)
    max_file_bytes: int = 10_000_000

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> "Limits":
        """Limits from plain data; unknown keys are ignored, missing ones take the defaults."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name: f.type for f in fields(cls)}
        values: Dict[str, Any] = {}  # each field's own type: int or float
        for name, value in data.items():
            if name in known and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                values[name] = int(value) if known[name] == "int" else float(value)
        return cls(**values)


def job_seconds(limits: Limits, spent: float) -> float:
    """The wall seconds one sandbox job of an attempt may take when earlier jobs of the same attempt (a fast path
    that failed) took `spent`: what is left of `attempt_seconds`.

    An attempt's budget is the sum of its limits (loading and each problem: each phase is stopped at its own)
    capped by `attempt_seconds`, a hard wall-clock bound; only the cap needs a clock of its own. It is hard
    where a phase's limit is not: a phase starved of CPU may run past its limit (worker/supervisor.py), the
    attempt never past the cap. What the budget leaves no time for is not run."""
    return max(0.0, limits.attempt_seconds - spent)
