"""The child's confinement, set up in this order before any student code runs.

1. file descriptors: 0 is /dev/null, 1 and 2 the output pipe, 3 the result pipe to
   the handler, nothing else (no grader pipe is inherited);
2. its own session and process group (the handler kills the group);
3. resource limits: address space, CPU seconds, processes, file size, open files, no core;
4. a new session keyring, so no key of the grader's login session is possessed;
5. the slot's own uid and gid when the worker runs as root (no supplementary groups);
6. no new privileges, then the seccomp filter (seccomp.py), which protects the
   zygote, the handler and the pool from signals and traces (a `Guard`: the zygote
   works out those pids and builds the filter once, before its first child);
7. a parent-death signal, an empty working folder of its own, a minimal environment.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import sys
from dataclasses import dataclass
from typing import Tuple

from . import seccomp
from .job import Job
from .proctools import read_proc, status_field, threads_of

MAIN_FD = 3
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}
SHARED_UID_MARGIN = 64  # threads the user's other processes may start during a job

LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    LIBC.prctl(option, value, 0, 0, 0)


def vm_size() -> int:
    return status_field(read_proc("self/status"), b"VmSize") * 1024


def join_new_session_keyring() -> None:
    """Leave the inherited session keyring for a new, empty one (keys of the grader's login stay behind)."""
    number = KEYCTL_SYSCALL.get(platform.machine())
    if number is not None:
        LIBC.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None)  # ENOSYS without keyrings: nothing to leave


@dataclass(frozen=True)
class Guard:
    """What every child of a worker protects: the zygote, the handler, the pool when it is visible, their process
    groups and pid 1, and the seccomp filter that guards them (empty where seccomp is not supported). None of it
    changes while the worker lives, so the zygote makes it once; a child inherits it with the fork."""

    pids: Tuple[int, ...]
    filter: bytes


def guard_of(handler: int) -> Guard:
    """Run by the zygote, once it has forked the handler."""
    pids = {os.getpid(), handler}
    above = os.getppid()  # the pool; 0 under bwrap, whose pid namespace starts with the zygote
    if above > 0:
        pids.add(above)
    for pid in list(pids):
        try:
            pids.add(os.getpgid(pid))
        except OSError:
            pass  # gone: no group of its to protect
    pids.add(1)
    ordered = tuple(sorted(p for p in pids if p > 0))
    return Guard(ordered, seccomp.compiled(ordered) if seccomp.supported() else b"")


def confine(job: Job, main_w: int, out_w: int, guard: Guard) -> str:
    """Confine this process (the child) for student code; returns its working folder."""
    limits = job.limits
    if main_w != MAIN_FD:
        os.dup2(main_w, MAIN_FD)
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.closerange(MAIN_FD + 1, 65536)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the cap fail with EFBIG instead
    nproc = limits.max_processes
    if job.uid is None:
        # Without a uid of its own the submission shares RLIMIT_NPROC, which
        # counts threads, with everything else running as this user, and that
        # goes on starting threads while the job runs (a browser, other graders).
        uid = os.getuid()
        nproc += threads_of(uid) + SHARED_UID_MARGIN
    for which, soft, hard in (
        (resource.RLIMIT_AS, vm_size() + limits.memory_bytes, None),
        (resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1),
        (resource.RLIMIT_NPROC, nproc, None),
        (resource.RLIMIT_FSIZE, limits.max_file_bytes, None),
        (resource.RLIMIT_NOFILE, 256, None),
        (resource.RLIMIT_CORE, 0, None),
    ):
        resource.setrlimit(which, (soft, soft if hard is None else hard))
    if job.uid is not None:
        os.setgroups([])
        os.setresgid(job.uid, job.uid, job.uid)
        os.setresuid(job.uid, job.uid, job.uid)
    join_new_session_keyring()  # as the slot's uid, so the new keyring is the submission's own
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if guard.filter:
        seccomp.install(guard.filter)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    workdir = os.path.join(job.scratch, f"submission-{os.getpid()}")
    os.mkdir(workdir, 0o700)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = sys.stdout
    sys.argv = ["submission.py"]
    return workdir
