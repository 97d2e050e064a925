"""autograder/sandbox/worker/confine.py: the Guard the zygote works out once, and a child's filter made from it."""

from __future__ import annotations

import errno
import os
import signal
import time

import pytest

from autograder.sandbox.worker import seccomp
from autograder.sandbox.worker.confine import PR_SET_NO_NEW_PRIVS, guard_of, prctl


def stand_in(group_of_its_own: bool) -> int:
    """A process that sleeps, as the handler does between jobs."""
    pid = os.fork()
    if pid == 0:
        try:
            if group_of_its_own:
                os.setpgid(0, 0)
            time.sleep(60)
        finally:
            os._exit(0)
    return pid


def ended(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_the_guard_names_the_zygote_the_handler_the_pool_their_groups_and_pid_1() -> None:
    handler = stand_in(group_of_its_own=True)
    try:
        for _ in range(100):  # its own group once it has run setpgid
            if os.getpgid(handler) == handler:
                break
            time.sleep(0.01)
        guard = guard_of(handler)
    finally:
        ended(handler)
    wanted = {os.getpid(), handler, os.getppid(), os.getpgid(0), os.getpgid(os.getppid()), 1}
    assert set(guard.pids) == wanted and list(guard.pids) == sorted(wanted)
    assert guard.filter == (seccomp.compiled(guard.pids) if seccomp.supported() else b"")


def test_a_handler_gone_before_the_guard_leaves_its_pid_guarded_and_no_error() -> None:
    handler = stand_in(group_of_its_own=False)
    ended(handler)
    assert handler in guard_of(handler).pids


@pytest.mark.skipif(not seccomp.supported(), reason="seccomp filters are built for x86_64 and aarch64 only")
def test_a_child_under_the_guards_filter_cannot_signal_what_it_names_but_can_signal_others() -> None:
    other = stand_in(group_of_its_own=True)
    try:
        guard = guard_of(os.getpid())  # this process stands for the zygote and the handler at once
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                os.close(read_end)
                prctl(PR_SET_NO_NEW_PRIVS, 1)
                seccomp.install(guard.filter)
                answers = []
                for target in (os.getppid(), -os.getpgid(os.getppid()), other):
                    try:
                        os.kill(target, 0)
                        answers.append("sent")
                    except OSError as err:
                        answers.append(errno.errorcode[err.errno])
                os.write(write_end, ",".join(answers).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        answer = os.read(read_end, 100).decode()
        os.close(read_end)
        os.waitpid(child, 0)
    finally:
        ended(other)
    assert answer == "EPERM,EPERM,sent"
