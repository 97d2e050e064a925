"""The CPU seconds of a command's whole process tree, as the kernel counts them: the command is started inside a
control group of its own, whose count takes in every process it starts, the sandbox's children that nobody reaps
included (what RUSAGE_CHILDREN misses, and a /proc sampler sees only in part).

A group is made where this user may make one: cgroup v2 (the unified hierarchy, alone or beside v1) or v1's cpuacct;
as root, or in a delegated subtree. Where none can be made, `seconds()` is None and the figure is left out, never
guessed. benchmarks/grade.py's comparison with --baseline reads it: the grader process's own CPU alone hid a
sandbox that cost 5 ms more a submission (issue 46).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

# (the hierarchy's folder, its file of CPU used, how that file says it)
HIERARCHIES = ((Path("/sys/fs/cgroup/unified"), "cpu.stat", "usage_usec"),
               (Path("/sys/fs/cgroup"), "cpu.stat", "usage_usec"),
               (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage", "nanoseconds"))
WAIT_S = 60.0  # the longest its last processes are waited for, before the count is read
JOIN = 'echo $$ > "$0/cgroup.procs" && exec "$@"'  # the shell joins the group, then becomes the command


class CgroupCpu:
    """One command's group: `wrap` the command, run it, then `seconds()`; `close()` removes the group."""

    def __init__(self, name: str) -> None:
        self.group: Optional[Path] = None
        self._usage = ("", "")
        for root, usage, unit in HIERARCHIES:
            if (root / usage).exists():
                group = root / f"qkv-bench-{name}-{os.getpid()}-{time.monotonic_ns()}"
                try:
                    group.mkdir()
                except OSError:
                    continue
                if (group / usage).exists():
                    self.group, self._usage = group, (usage, unit)
                    return
                group.rmdir()

    def wrap(self, command: list[str]) -> list[str]:
        """`command`, started inside the group (as it is, where there is none)."""
        return command if self.group is None else ["sh", "-c", JOIN, str(self.group), *command]

    def seconds(self) -> Optional[float]:
        """The tree's CPU seconds, read once its processes are gone (at most WAIT_S, a busy machine's worth); None
        without a group."""
        if self.group is None:
            return None
        for _ in range(int(WAIT_S / 0.1)):
            if not (self.group / "cgroup.procs").read_text().strip():
                break
            time.sleep(0.1)
        usage, unit = self._usage
        text = (self.group / usage).read_text()
        if unit == "nanoseconds":
            return int(text) / 1e9
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields[unit]) / 1e6

    def close(self) -> None:
        """Remove the group (once its processes are gone: a sandbox's last ones may take a moment)."""
        for _ in range(int(WAIT_S / 0.1) if self.group is not None else 0):
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)

    def __enter__(self) -> "CgroupCpu":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
