"""autograder/sandbox/worker/proctools.py: reading a process's CPU time as the handler does when loading ends, and /proc's
processes, parents and threads as the zygote and a child read them per job."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.sandbox.worker.proctools import (children, group_cpu_seconds, parent_of, process_cpu_seconds,
                                                  processes, threads_of, waited_seconds)


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


THREADED = "import sys, threading; [threading.Thread(target=sys.stdin.read, daemon=True).start() for _ in range(4)]; " \
           "print('up', flush=True); sys.stdin.read()"
ODD_NAME = b"\xff) S 1 1 \xfe"  # not UTF-8, with the ')' and spaces that end and split a stat line
UNUSED_UID = 1_900_000_007  # no process has it but the one the test starts


def started(name: bytes = b"", **options) -> subprocess.Popen:
    """A Python with five threads (four waiting on its stdin), once they are all running, that has renamed itself
    `name` (a process may only rename itself); ends when stdin closes."""
    rename = f"open('/proc/self/comm', 'wb').write({name!r}); " if name else ""
    process = subprocess.Popen([sys.executable, "-c", rename + THREADED], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, **options)
    try:
        assert process.stdout.readline() == "up\n"
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def test_a_process_is_read_from_its_stat_and_status_files() -> None:
    process = started(start_new_session=True)
    try:
        found = {p.pid: p for p in processes()}[process.pid]
        assert (found.uid, found.group, found.threads) == (os.getuid(), process.pid, 5)
        assert found.state in ("S", "R")
        assert parent_of(process.pid) == os.getpid()
    finally:
        process.stdin.close()
        process.wait()
    assert process.pid not in {p.pid for p in processes()} and parent_of(process.pid) is None


def test_a_process_whose_name_is_not_text_is_read_and_counted_like_any_other() -> None:
    """A process names itself: any 15 bytes, ')' and spaces included (a student's process can). Each reader parses
    past it; read as text, it raised in the handler's starved check and lost the worker."""
    process = started(ODD_NAME, start_new_session=True)
    try:
        assert b" (" + ODD_NAME + b") " in Path(f"/proc/{process.pid}/stat").read_bytes()
        found = {p.pid: p for p in processes()}[process.pid]
        assert (found.uid, found.group, found.threads) == (os.getuid(), process.pid, 5)
        assert parent_of(process.pid) == os.getpid()
        assert group_cpu_seconds(process.pid) >= 0.0 and process_cpu_seconds(process.pid) > 0.0
    finally:
        process.stdin.close()
        process.wait()


def test_children_are_all_listed_however_long_the_kernel_s_list() -> None:
    """/proc's list of children comes one page a read: 900 children take more than one."""
    release_r, release_w = os.pipe()
    forked = []
    try:
        for _ in range(900):
            pid = os.fork()
            if pid == 0:
                os.close(release_w)
                os.read(release_r, 1)
                os._exit(0)
            forked.append(pid)
        assert len(" ".join(map(str, forked))) > 4096
        assert set(forked) <= children(spare=-1)
    finally:
        os.close(release_w)
        os.close(release_r)
        for pid in forked:
            os.waitpid(pid, 0)


def test_threads_of_counts_every_thread_of_a_real_uid() -> None:
    """What RLIMIT_NPROC counts for a uid: the threads of its processes (a child run as a user of its own's, without
    a uid of its own, sets its limit from this count). As root, exactly those of a process of a uid of its own; as
    a user (or a root that cannot take that uid, in a container), at least this process's and a child's of the
    same uid (other processes of theirs may come and go)."""
    assert threads_of(UNUSED_UID) == 0
    up_r, up_w = os.pipe()
    end_r, end_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(end_w)
            became = b"them"
            try:
                os.setgroups([])
                os.setresgid(UNUSED_UID, UNUSED_UID, UNUSED_UID)
                os.setresuid(UNUSED_UID, UNUSED_UID, UNUSED_UID)
            except OSError:
                became = b"self"  # no root, or a uid the container does not map: the test's own uid
            for _ in range(4):
                threading.Thread(target=os.read, args=(end_r, 1), daemon=True).start()
            os.write(up_w, became)
            os.read(end_r, 1)
        finally:
            os._exit(0)
    os.close(up_w)
    os.close(end_r)
    try:
        became = os.read(up_r, 4)
        assert became in (b"them", b"self")
        if became == b"them":
            assert threads_of(UNUSED_UID) == 5
        else:
            assert threads_of(os.getuid()) >= 5 + len(os.listdir("/proc/self/task"))
    finally:
        os.close(end_w)
        os.close(up_r)
        os.waitpid(child, 0)
    assert threads_of(UNUSED_UID) == 0


@pytest.mark.skipif(not has_schedstat(), reason="this kernel keeps no schedstat: no wait for a CPU can be read")
def test_a_process_kept_waiting_for_a_cpu_is_told_from_one_that_sleeps() -> None:
    """Two loops (groups of one job) made to share one CPU each wait for it about half their time: their wait
    grows; a process that sleeps waits for no CPU, however long it has been alive."""
    cpu = min(os.sched_getaffinity(0))
    loop = ("import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nsys.stdout.write('on\\n')\n"
            "sys.stdout.flush()\nwhile True:\n    pass\n")
    first = subprocess.Popen([sys.executable, "-c", loop, str(cpu)], stdout=subprocess.PIPE,
                             start_new_session=True)
    second = subprocess.Popen([sys.executable, "-c", loop, str(cpu)], stdout=subprocess.PIPE,
                              start_new_session=True)
    sleeping = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        for process in (first, second):
            assert process.stdout.readline() == b"on\n"
        deadline = time.monotonic() + 60  # a bound for a machine busier than any, not an expectation
        job = (first.pid, second.pid)
        while waited_seconds(job) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        starved = waited_seconds(job)
        assert starved >= 0.5
        assert waited_seconds((sleeping.pid,)) < starved
        assert waited_seconds((2**40,)) == 0.0  # no such group
    finally:
        for process in (first, second, sleeping):
            process.kill()
            process.wait()
