"""The numbers of the grading policy, shared by every route that runs student code.

The manifest may set them; the build writes them into the grading bundle and into
the release's self-check data, so `qkv grade`, Gradescope, the pytest route, the
self-check and nbgrader all run under the same limits (CLI flags override).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Dict


@dataclass(frozen=True)
class Limits:
    load_seconds: float = 10.0  # wall time to load the module (run the notebook's cells)
    problem_seconds: float = 10.0  # wall time for all the calls of one problem
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
        values = {}
        for name, value in data.items():
            if name in known and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                values[name] = int(value) if known[name] == "int" else float(value)
        return cls(**values)
