"""autograder/sandbox/worker/confine.py: the Guard the zygote works out once, and a child's filter made from it."""

from __future__ import annotations

import errno
import os
import signal
import time
from typing import Optional

import pytest

from autograder.sandbox.worker import seccomp
from autograder.sandbox.worker.confine import PR_SET_NO_NEW_PRIVS, guard_of, prctl


def stand_in(group: Optional[int]) -> int:
    """A process that sleeps, as the handler does between jobs: in process group `group` (0: one of its own;
    None: this one's)."""
    pid = os.fork()
    if pid == 0:
        try:
            if group is not None:
                os.setpgid(0, group)
            time.sleep(60)
        finally:
            os._exit(0)
    for _ in range(500):
        if group is None or os.getpgid(pid) == (group or pid):
            return pid
        time.sleep(0.01)
    raise AssertionError(f"the stand-in {pid} never joined group {group}")


def ended(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_the_guard_names_the_zygote_the_handler_the_pool_their_groups_and_pid_1() -> None:
    leader = stand_in(group=0)
    handler = stand_in(group=leader)  # a group its own pid does not name: only its group's id covers it
    try:
        guard = guard_of(handler)
    finally:
        ended(handler)
        ended(leader)
    zygote, pool = os.getpid(), os.getppid()
    assert {zygote, handler, pool, leader, os.getpgid(zygote), os.getpgid(pool), 1} == set(guard.pids)
    assert list(guard.pids) == sorted(guard.pids)
    assert guard.filter == (seccomp.compiled(guard.pids) if seccomp.supported() else b"")


def test_a_handler_gone_before_the_guard_leaves_its_pid_guarded_and_no_error() -> None:
    handler = stand_in(group=None)
    ended(handler)
    assert handler in guard_of(handler).pids


@pytest.mark.skipif(not seccomp.supported(), reason="seccomp filters are built for x86_64 and aarch64 only")
def test_a_child_under_the_guards_filter_cannot_signal_what_it_names_but_can_signal_others() -> None:
    other = stand_in(group=0)
    try:
        guard = guard_of(os.getpid())  # this process stands for the zygote and the handler at once
        pool = os.getppid()
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                os.close(read_end)
                prctl(PR_SET_NO_NEW_PRIVS, 1)
                seccomp.install(guard.filter)
                zygote = os.getppid()
                answers = []
                for target in (zygote, -os.getpgid(zygote), pool, other):
                    try:
                        os.kill(target, 0)
                        answers.append("sent")
                    except OSError as err:
                        answers.append(errno.errorcode[err.errno])
                os.write(write_end, ",".join(answers).encode())
            except BaseException as exc:  # noqa: BLE001 - said to the test, not lost with this process
                os.write(write_end, repr(exc).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        answer = os.read(read_end, 1000).decode()
        os.close(read_end)
        os.waitpid(child, 0)
    finally:
        ended(other)
    assert answer == "EPERM,EPERM,EPERM,sent"
