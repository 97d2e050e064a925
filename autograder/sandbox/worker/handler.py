"""The handler: one per job, forked from the zygote. Trusted: it never runs student code.

Reads the job from the grader (fd 0), forks the child, and drives the supervisor
(supervisor.py) with what happens: frames on the result pipe, bytes on the output
pipe, the child's exit, deadlines. It carries out the supervisor's actions (kill,
answer the grader on fd 1, written once per wake-up), then reaps every process the
submission left and empties its folder. It is a child subreaper, so orphans of the
submission become its children; and, like the zygote, it is not dumpable.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from typing import Any, Dict, List, Tuple

from qkv_runtime.wire import MAX_CHILD_BLOB, FrameBuffer, write_all

from .child import run_child
from .confine import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl
from .job import Job, read_job
from .proctools import empty_folder, group_cpu_seconds, kill_group, kill_processes, process_cpu_seconds, reap
from .supervisor import Answer, Kill, Phase, Supervisor

EXIT_STDIN_CLOSED = 3  # no more jobs: the zygote ends
EXIT_DIRTY = 4  # the job's folder could not be emptied: the zygote ends and the pool starts a fresh worker
OUTPUT_CHUNK = 1 << 16


def handle_job(config: Dict[str, Any]) -> int:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    job = read_job(0, config)
    if job is None:
        return EXIT_STDIN_CLOSED
    main_r, main_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(main_r)
        os.close(out_r)
        run_child(job, main_w, out_w)
    os.close(main_w)
    os.close(out_w)
    supervisor, cpu = supervise(job, pid, main_r, out_r)
    reap(job.uid, supervisor.state.groups)
    clean = empty_folder(job.scratch)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu["handler"] = own.ru_utime + own.ru_stime
    # the last frames go out only now, so the grader knows before its next job whether this worker retires
    write_all(1, b"".join(a.data for a in supervisor.finish(retire=not clean, cpu=cpu) if isinstance(a, Answer)))
    return 0 if clean else EXIT_DIRTY


def kill(job: Job, groups: tuple) -> None:
    """SIGKILL the process groups the child named. The ids come from the child, which runs student code;
    with a slot uid only that uid's processes are touched, so a lie hurts no one else."""
    if job.uid is None:
        for group in groups:
            kill_group(group)
    else:
        kill_processes(job.uid, set(groups))


def supervise(job: Job, child: int, main_r: int, out_r: int) -> Tuple[Supervisor, Dict[str, float]]:
    """Run the job's event loop until the child is gone; the supervisor then holds the outcome. Also gives the
    CPU seconds of the submission's processes while loading ("load": read when loading ended) and after ("calls")."""
    supervisor = Supervisor(job.problems, job.limits, child, time.monotonic(), group_cpu_seconds)
    child_fd = os.pidfd_open(child)
    frames = FrameBuffer(MAX_CHILD_BLOB)
    open_fds = {main_r, out_r, child_fd}
    outbox: List[bytes] = []
    loaded_cpu: List[float] = []
    spent = 0.0

    def carry_out(actions: list) -> None:
        for action in actions:
            if isinstance(action, Answer):
                outbox.append(action.data)
            elif isinstance(action, Kill):
                kill(job, action.groups)

    while supervisor.waiting:
        now = time.monotonic()
        if supervisor.deadline <= now:
            carry_out(supervisor.tick(now))
            continue
        watched = [fd for fd in (main_r, out_r, child_fd) if fd in open_fds]
        ready, _, _ = select.select(watched, [], [], supervisor.deadline - now)
        for fd in ready:
            now = time.monotonic()
            if fd == child_fd:
                _, status, usage = os.wait4(child, 0)
                spent = usage.ru_utime + usage.ru_stime
                carry_out(supervisor.child_exited(status, now))
                open_fds.discard(child_fd)
                os.close(child_fd)
                continue
            data = os.read(fd, OUTPUT_CHUNK)
            if not data:
                open_fds.discard(fd)
                if fd == main_r:
                    carry_out(supervisor.channel_closed())
            elif fd == out_r:
                carry_out(supervisor.output(data, now))
            else:
                for header, blob in frames.feed(data):
                    carry_out(supervisor.frame(header, blob, now))
                    if not loaded_cpu and supervisor.state.phase is not Phase.LOAD:
                        loaded_cpu.append(process_cpu_seconds(child))
                if frames.error is not None:
                    carry_out(supervisor.garbage(frames.error))
                    open_fds.discard(main_r)
        if outbox:
            write_all(1, b"".join(outbox))
            outbox.clear()
    drain_output(supervisor, out_r)
    os.close(main_r)
    os.close(out_r)
    load = min(loaded_cpu[0], spent) if loaded_cpu else spent
    return supervisor, {"load": load, "calls": spent - load}


def drain_output(supervisor: Supervisor, out_r: int) -> None:
    """What the submission printed and is still in the pipe (not waiting for writers it left behind)."""
    os.set_blocking(out_r, False)
    try:
        while supervisor.keeps_more_output():
            data = os.read(out_r, OUTPUT_CHUNK)
            if not data:
                break
            supervisor.keep_output(data)
    except BlockingIOError:
        pass
