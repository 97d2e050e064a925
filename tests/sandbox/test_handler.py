"""What the sandbox's handler kills when the supervisor says kill (autograder/sandbox/worker/handler.py `Child`).

The process groups to kill come from the child, which runs student code; these are real
processes, started here in sessions of their own as the sandbox's would be.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from autograder.sandbox.worker.handler import Child, loading_cpu
from qkv_runtime.limits import LOWEST_PRIORITY


def sleeper(new_session: bool) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "60"], start_new_session=new_session)


def test_a_group_the_child_names_outside_its_own_session_is_spared():
    child, victim = sleeper(True), sleeper(True)  # the victim: say, the grader's own process group
    try:
        with_pidfd = os.pidfd_open(child.pid)
        try:
            Child(child.pid, with_pidfd, None).kill((child.pid, victim.pid))
        finally:
            os.close(with_pidfd)
        assert child.wait(5) == -9
        assert victim.poll() is None, "a process group outside the child's session was killed"
    finally:
        for process in (child, victim):
            process.kill()
            process.wait()


def test_a_child_without_a_group_of_its_own_yet_is_killed_through_its_pidfd():
    child = sleeper(False)  # as a fresh fork is, before it confines itself: in its parent's group
    try:
        with_pidfd = os.pidfd_open(child.pid)
        try:
            Child(child.pid, with_pidfd, None).kill((child.pid,))
        finally:
            os.close(with_pidfd)
        assert child.wait(5) == -9
    finally:
        child.kill()
        child.wait()


def test_a_pid_no_kernel_gives_is_no_group_to_kill():
    child = sleeper(True)
    try:
        with_pidfd = os.pidfd_open(child.pid)
        try:
            Child(child.pid, with_pidfd, None).kill((2**40,))  # os.killpg would raise OverflowError on it
        finally:
            os.close(with_pidfd)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_reaping_reads_the_children_afresh_after_collecting_one(monkeypatch):
    """A leftover that forks and exits between the zygote's look at its children and its wait: the one it
    collected handed a new child to the zygote just before, which the next look must find and kill."""
    from autograder.sandbox.worker import proctools

    runner, forked = 100, 101
    alive = {runner: False, forked: True}  # the runner exited right after the look; its child lives
    looks = iter([{runner}, {forked}])
    killed = []
    monkeypatch.setattr(proctools, "children", lambda spare: next(looks, set()) if alive[forked] else set())
    monkeypatch.setattr(proctools, "collect", lambda pids: {p for p in pids if alive[p]})

    def kill(pid, sig):
        killed.append(pid)
        alive[pid] = False

    monkeypatch.setattr(proctools.os, "kill", kill)
    monkeypatch.setattr(proctools.time, "sleep", lambda seconds: None)
    assert proctools.reap(None, spare=1) is True
    assert killed == [forked] and not alive[forked]


def test_loadings_cpu_is_the_childs_own_clock_when_it_says_a_plain_number_else_procs() -> None:
    """A float the child sent stands (capped later by its exact total); anything else (missing, text, a bool,
    negative, not finite, absurd) gives /proc's reading of the process, 0 for one that is gone."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert loading_cpu({"kind": "loaded", "cpu": 0.25}, child) == 0.25
    for said in (None, "0.25", True, -1.0, float("nan"), float("inf"), 1e9, [0.25]):
        assert loading_cpu({"kind": "loaded", "cpu": said}, child) == 0.0, said
    assert loading_cpu({"kind": "loaded"}, os.getpid()) > 0


def autogroups() -> bool:
    return Path("/proc/self/autogroup").exists()


@pytest.mark.skipif(not autogroups(), reason="this kernel groups no sessions (no /proc/PID/autogroup)")
def test_a_long_attempts_session_is_lowered_as_a_whole_not_only_its_processes_nice_values():
    # where the kernel groups sessions, a session's CPU share weighs against the other sessions' (the grader's,
    # other jobs') whatever its processes' nice values: at nice 19 alone a loop took as much CPU as an honest job
    child = sleeper(True)
    try:
        with_pidfd = os.pidfd_open(child.pid)
        try:
            Child(child.pid, with_pidfd, None).lower((child.pid,))
        finally:
            os.close(with_pidfd)
        assert Path(f"/proc/{child.pid}/autogroup").read_text().split()[-1] == str(LOWEST_PRIORITY)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == LOWEST_PRIORITY
    finally:
        child.kill()
        child.wait()
