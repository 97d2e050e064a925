"""Where a grading run's CPU went, stage by stage: what `qkv grade --timings FILE` writes (and benchmarks/grade.py reads).

The grader's own stages are CPU seconds of the thread that ran them (`time.thread_time`), so time spent
waiting for the sandbox counts nowhere: start (the process up to its first submission: imports, the bundle,
the course), intake (reading the hand-ins, choosing what to grade), score, gradebook, pages (each
submission's), class (late outcomes, history, the class's files), and the pool's threads on the wire (send:
encoding and writing jobs; receive: reading and checking what came back); other is the rest of the process's CPU
(starting the sandbox, the progress display, the collector). The sandbox's figures are the handler's
accounting per job (sandbox/protocol.py `SandboxCpu`): the trusted processes (the handler, and the zygote's fork
of the job's child and its reaping), and the submission's processes while loading and during their calls. With
`--cluster` the sandbox runs on Dask workers and is not counted here.
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from autograder.sandbox import SandboxCpu

GRADER_STAGES = ("start", "intake", "send", "receive", "score", "gradebook", "pages", "class", "other")


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Timings:
    """Filled in by the run as it goes; thread-safe."""

    stages: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GRADER_STAGES, 0.0))
    jobs: int = 0
    sandbox_cpu: SandboxCpu = SandboxCpu()
    began: float = field(default_factory=time.perf_counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.stages[stage] += seconds

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.thread_time()
        try:
            yield
        finally:
            self.add(name, time.thread_time() - started)

    def started(self) -> None:
        """The process is about to take its first hand-in: what it used so far was its start."""
        self.add("start", process_cpu())

    def job(self, cpu: SandboxCpu) -> None:
        with self._lock:
            self.jobs += 1
            s = self.sandbox_cpu
            self.sandbox_cpu = SandboxCpu(s.handler + cpu.handler, s.load + cpu.load, s.calls + cpu.calls)

    def to_json(self, submissions: int, sandboxed: bool) -> dict:
        cpu = process_cpu()
        stages = dict(self.stages)
        stages["other"] = max(0.0, cpu - sum(v for k, v in stages.items() if k != "other"))
        s = self.sandbox_cpu
        return {
            "submissions": submissions,
            "wall_s": round(time.perf_counter() - self.began, 3),
            "cpu_s": round(cpu, 3),
            "grader": {k: round(v, 3) for k, v in stages.items()},
            "sandbox": {"jobs": self.jobs, "handler_cpu_s": round(s.handler, 3), "load_cpu_s": round(s.load, 3),
                        "calls_cpu_s": round(s.calls, 3)} if sandboxed else None,
        }
