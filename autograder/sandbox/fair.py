"""Which of the sandbox's waiting jobs start next, and which running ones yield: fresh work before work that ran long.

Takes jobs as `SandboxPool.map` takes them from its stream (fresh, or long already: an attempt that yielded its
worker, or the rerun of one whose first run ran long), and what the workers say of the jobs they run (which ran
long, which ended); gives the jobs to start now and the long ones to ask to yield. Pure, with no clock: a job runs
long when its worker says so (worker/supervisor.py: by its own time, so a job starved by a busy machine is not
long), and the pool starts what this says.

The rule: `slots` workers are fresh work's. A job that ran long (a loop, most likely, lowered to the lowest CPU
priority) no longer holds one of them, so fresh jobs start beside it, on up to `most` workers in all. When fresh
work waits for a slot that no worker is free to take, long jobs are asked to yield (stopped, and run again later
on what is left of their budget: SandboxPool.map), the one that has held its worker longest first. A job that comes
long waits while any fresh one waits, and starts only while fewer than `slots` jobs run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class FairQueue(Generic[T]):
    slots: int  # the pool's jobs: fresh work always has as many
    most: int  # workers in all
    fresh: deque[T] = field(default_factory=deque)
    late: deque[T] = field(default_factory=deque)  # long already when taken
    running: dict[int, bool] = field(default_factory=dict)  # a started job's number -> whether it ran long
    yielding: set[int] = field(default_factory=set)  # asked to yield, not ended yet
    _numbers: int = 0

    def wants_more(self) -> bool:
        """Whether to take more from the stream: fewer fresh jobs wait than there are slots."""
        return len(self.fresh) < self.slots

    def add(self, job: T, long: bool) -> None:
        (self.late if long else self.fresh).append(job)

    @property
    def waiting(self) -> bool:
        return bool(self.fresh or self.late)

    def start(self) -> list[tuple[int, T]]:
        """The jobs to start now, each with its number (for `ran_long` and `ended`)."""
        started = []
        while self.fresh and self._fresh_running() < self.slots and len(self.running) < self.most:
            started.append(self._begin(self.fresh.popleft(), long=False))
        while self.late and not self.fresh and len(self.running) < self.slots:
            started.append(self._begin(self.late.popleft(), long=True))
        return started

    def ran_long(self, number: int) -> None:
        if number in self.running:
            self.running[number] = True

    def to_yield(self) -> list[int]:
        """The long jobs to ask to yield now: as many as fresh jobs wait for a slot that no worker, free or being
        yielded, will take. Each is named once."""
        slots_free = min(len(self.fresh), self.slots - self._fresh_running())
        short = slots_free - (self.most - len(self.running)) - len(self.yielding)
        asked = [n for n, long in sorted(self.running.items()) if long and n not in self.yielding][:max(0, short)]
        self.yielding.update(asked)
        return asked

    def ended(self, number: int) -> None:
        del self.running[number]
        self.yielding.discard(number)

    def _fresh_running(self) -> int:
        return sum(1 for long in self.running.values() if not long)

    def _begin(self, job: T, long: bool) -> tuple[int, T]:
        self._numbers += 1
        self.running[self._numbers] = long
        return self._numbers, job
