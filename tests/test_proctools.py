"""autograder/sandbox/worker/proctools.py: reading a process's CPU time as the handler does when loading ends."""

from __future__ import annotations

import os
import time

import pytest

from autograder.sandbox.worker.proctools import process_cpu_seconds


def has_schedstat() -> bool:
    try:
        with open(f"/proc/self/task/{os.getpid()}/schedstat") as schedstat:
            return int(schedstat.read().split()[0]) > 0
    except (OSError, ValueError, IndexError):
        return False


@pytest.mark.skipif(not has_schedstat(), reason="this kernel keeps no schedstat: only clock ticks can be read")
def test_a_process_cpu_time_is_read_to_the_millisecond_not_cut_to_clock_ticks() -> None:
    """A child that has used 15.5 ms of CPU, says exactly how much (its own clock), and waits: /proc/PID/stat's
    ticks would say 10 ms (cut down to a whole hundredth)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            started = time.process_time()
            while time.process_time() - started < 0.0155:
                pass
            os.write(ready_w, repr(time.process_time()).encode())
            os.read(go_r, 1)
        finally:
            os._exit(0)
    try:
        used = float(os.read(ready_r, 100))
        read = process_cpu_seconds(child)
    finally:
        os.write(go_w, b"x")
        os.waitpid(child, 0)
        for fd in (ready_r, ready_w, go_r, go_w):
            os.close(fd)
    assert used >= 0.0155 and used <= read < used + 0.002, (read, used)


def test_a_process_that_is_gone_has_used_nothing() -> None:
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert process_cpu_seconds(child) == 0.0
