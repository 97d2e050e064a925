"""Which of the sandbox's waiting jobs start next: fresh work before work that already ran long.

Takes jobs as `SandboxPool.map` takes them from its stream (fresh, or long already: the rerun of an attempt whose
first run ran long) and the clock; gives the jobs to start now and how long to wait before asking again. Pure:
the pool starts what it says and tells it when each ends.

The rule: a job still running after LONG_SECONDS (a loop, most likely; the supervisor lowers it to the lowest CPU
priority) no longer holds one of the `slots`, so fresh jobs start beside it, on up to `most` workers in all. A job
that comes long waits while any fresh one waits, and starts only while fewer than `slots` jobs run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Generic, Optional, TypeVar

from qkv_runtime.limits import LONG_SECONDS

T = TypeVar("T")


@dataclass
class FairQueue(Generic[T]):
    slots: int  # the pool's jobs: fresh work always has as many
    most: int  # workers in all
    fresh: deque[T] = field(default_factory=deque)
    late: deque[T] = field(default_factory=deque)  # long already when taken
    running: dict[int, float] = field(default_factory=dict)  # a started job's number -> when it counts as long
    _numbers: int = 0

    def wants_more(self) -> bool:
        """Whether to take more from the stream: fewer fresh jobs wait than there are slots."""
        return len(self.fresh) < self.slots

    def add(self, job: T, long: bool) -> None:
        (self.late if long else self.fresh).append(job)

    @property
    def waiting(self) -> bool:
        return bool(self.fresh or self.late)

    def start(self, now: float) -> list[tuple[int, T]]:
        """The jobs to start now, each with its number (for `ended`)."""
        started = []
        long = sum(1 for at in self.running.values() if at <= now)
        while self.fresh and len(self.running) - long < self.slots and len(self.running) < self.most:
            started.append(self._begin(self.fresh.popleft(), now + LONG_SECONDS))
        while self.late and not self.fresh and len(self.running) < self.slots:
            started.append(self._begin(self.late.popleft(), now))
        return started

    def ended(self, number: int) -> None:
        del self.running[number]

    def wait(self, now: float) -> Optional[float]:
        """How long until a running job turns long while fresh ones wait (it frees a slot); None: until one ends."""
        soonest = [at - now for at in self.running.values() if at > now] if self.fresh else []
        return max(0.0, min(soonest)) if soonest else None

    def _begin(self, job: T, long_at: float) -> tuple[int, T]:
        self._numbers += 1
        self.running[self._numbers] = long_at
        return self._numbers, job
