"""The handler: one per worker, forked from the zygote before any job. Trusted: it never runs student code.

It reads the grader's frames on fd 0. A problem set it keeps, and hands to the zygote
to hold (link.py); per job it asks the zygote for a fresh child, passes the job's bytes
(the program) to it, and drives the supervisor (supervisor.py)
with what happens: frames on the result pipe, bytes on the output pipe, the child's
exit as the zygote reports it, deadlines. It carries out the supervisor's actions
(kill, answer the grader on fd 1, written once per wake-up), has the zygote reap every
process the submission left, and empties its folder.

It lives as long as its worker, so what it read of one job stays in its memory; that
is why it never forks: every child comes from the zygote, which never reads a job (the
problem set it holds is the class's, the same for every student).
Like the zygote it is not dumpable, and it is no child's ancestor.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from qkv_runtime.limits import LOWEST_PRIORITY
from qkv_runtime.wire import MAX_CHILD_BLOB, FrameBuffer, write_all

from . import link
from .confine import PR_SET_PDEATHSIG, prctl
from .job import ProblemSet, problem_set_of, read_frame
from .proctools import (
    empty_folder,
    group_cpu_seconds,
    kill_group,
    kill_processes,
    process_cpu_seconds,
    processes,
    waited_seconds,
)
from .supervisor import MAX_PID, Answer, Kill, Lower, Phase, Supervisor

EXIT_STDIN_CLOSED = 3  # no more jobs: the zygote ends
EXIT_DIRTY = 4  # what a job left (a process, its folder) could not be cleared: the pool starts a fresh worker
EXIT_NO_PROBLEM_SET = 6  # the grader sent a job before any problem set, or a frame of another kind
OUTPUT_CHUNK = 1 << 16
AUTOGROUP_TRIES = 5


class ZygoteGone(Exception):
    """The zygote closed the link or broke its order: the worker is ending."""


def serve_jobs(config: Dict[str, Any], zygote: socket.socket) -> int:
    """Every job of the worker, one after another; the exit code for the zygote."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    held: Optional[ProblemSet] = None
    while True:
        before = time.process_time()  # waiting for the grader costs no CPU; reading the job does
        frame = read_frame(0)
        if frame is None:
            return EXIT_STDIN_CLOSED
        data, header, _ = frame
        if header.get("kind") == "problems":
            held = problem_set_of(data, header)
            hand_over(zygote, held)
        elif header.get("kind") == "yield":
            continue  # asked of a job that ended meanwhile
        elif header.get("kind") != "job" or held is None:
            return EXIT_NO_PROBLEM_SET
        elif not handle_job(data, held, config, zygote, before, job_seconds(header), header.get("long") is True):
            return EXIT_DIRTY


def hand_over(zygote: socket.socket, problem_set: ProblemSet) -> None:
    """Have the zygote hold `problem_set` for the children it forks next: its frame goes in a memfd, which the
    zygote reads whole, whatever its size, before it answers."""
    fd = os.memfd_create("qkv-problem-set", os.MFD_CLOEXEC)
    try:
        write_all(fd, problem_set.data)
        os.lseek(fd, 0, os.SEEK_SET)
        ask(zygote, {"do": "hold"}, "held", give=(fd,))
    finally:
        os.close(fd)


def ask(zygote: socket.socket, message: Dict[str, Any], expect: str, fds: int = 0,
        give: Tuple[int, ...] = ()) -> Tuple[Dict[str, Any], List[int]]:
    link.send(zygote, message, give)
    reply, got = link.receive(zygote, fds)
    if reply is None or expect not in reply or len(got) != fds:
        raise ZygoteGone(f"asked {message.get('do')!r}, got {reply!r}")
    return reply, got


def job_seconds(header: Dict[str, Any]) -> Optional[float]:
    """The wall seconds the grader gives this job (what is left of the attempt's budget), None if it names none."""
    seconds = header.get("seconds")
    # JSON's numbers, not its booleans
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    return float(seconds) if 0 <= seconds < 1e6 else None


def handle_job(job: bytes, held: ProblemSet, config: Dict[str, Any], zygote: socket.socket, started: float,
               seconds: Optional[float] = None, long: bool = False) -> bool:
    """One job (its frame's bytes), from the fork of its child, which runs the problem set `held`, to the grader's
    last frame; False when what it left could not be cleared (a process, or its folder), so that the worker ends.
    `started`: the handler's CPU clock before it read the job; `seconds`: the job's budget, if the grader gave one;
    `long`: the attempt ran long in an earlier job."""
    reply, (job_w, main_r, out_r, pidfd) = ask(zygote, {"do": "fork"}, "pid", fds=4)
    child = Child(int(reply["pid"]), pidfd, config["uid"])
    try:
        deliver(job_w, job, child, time.monotonic() + held.limits.load_seconds)
        supervisor, cpu = supervise(held, child, main_r, out_r, zygote, seconds, long)
        reaped, _ = ask(zygote, {"do": "reap"}, "reaped")
    finally:
        os.close(pidfd)
    clean = reaped["reaped"] is True and empty_folder(config["scratch"])
    cpu["handler"] = time.process_time() - started + float(reaped["cpu"])
    # the last frames go out only now, so the grader knows before its next job whether this worker retires
    write_all(1, b"".join(a.data for a in supervisor.finish(retire=not clean, cpu=cpu) if isinstance(a, Answer)))
    return clean


@dataclass(frozen=True)
class Child:
    """The job's child: its pid, a pidfd that names it even once its pid is reused, and the slot's uid."""

    pid: int
    pidfd: int
    uid: Optional[int]

    def kill(self, groups: tuple) -> None:
        """SIGKILL these process groups: the child's own (its pid), or those of its problems, which the child
        named. Those ids come from the child, which runs student code: with a slot uid only that uid's
        processes are touched, and without one only groups of the child's own session, so a lie hurts no one
        else. The child itself is killed through its pidfd as well, which works before it has a group of its
        own or its slot's uid, and never hits a process that reused its pid."""
        if self.pid in groups:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass  # gone already
        if self.uid is not None:
            kill_processes(self.uid, set(groups))
            return
        try:
            signal.pidfd_send_signal(self.pidfd, 0)
        except OSError:
            return  # the child is gone, and its pid may name another session now: the zygote reaps what is left
        for group in groups:
            try:
                ours = 1 < group <= MAX_PID and os.getsid(group) == self.pid
            except OSError:
                continue  # its leader is gone: what is left of the group is the zygote's to reap
            if ours:
                kill_group(group)

    def lower(self, groups: tuple) -> None:
        """The lowest CPU priority for these process groups (the attempt ran long), under `kill`'s guards: with a
        slot uid only that uid's processes, without one only groups of the child's own session. What they fork
        later inherits it, and an unprivileged process cannot raise it again. The child's session is its own
        autogroup, whose CPU share the kernel weighs against the other sessions' (a worker's and every other
        job's), whatever its members' nice values: it is lowered too."""
        lower_autogroup(self.pid)
        if self.uid is not None:
            for process in processes():
                if process.uid == self.uid and process.group in groups:
                    _lower(os.PRIO_PROCESS, process.pid)
            return
        for group in groups:
            try:
                ours = 1 < group <= MAX_PID and os.getsid(group) == self.pid
            except OSError:
                continue
            if ours:
                _lower(os.PRIO_PGRP, group)


def lower_autogroup(session: int) -> None:
    """The lowest priority for the autogroup of `session`'s leader, where the kernel groups sessions (without it a
    nice value weighs only against the same session's processes). An unprivileged writer may set one autogroup's
    nice in 100 ms, machine-wide: a busy moment is tried again a few times."""
    for _ in range(AUTOGROUP_TRIES):
        try:
            with open(f"/proc/{session}/autogroup", "w") as autogroup:
                autogroup.write(str(LOWEST_PRIORITY))
            return
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            return  # no autogroups here, or a child gone already


def _lower(which: int, who: int) -> None:
    try:
        os.setpriority(which, who, LOWEST_PRIORITY)
    except OSError:
        pass  # gone already; or a member it may not touch, which the kernel skips


def deliver(job_w: int, data: bytes, child: Child, deadline: float) -> None:
    """Write the job into the child's pipe; a child that has not read it by `deadline` is killed
    (the supervisor then sees it die while loading)."""
    os.set_blocking(job_w, False)
    view = memoryview(data)
    try:
        while view:
            _, ready, _ = select.select([], [job_w], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                child.kill((child.pid,))
                break
            view = view[os.write(job_w, view):]
    except BrokenPipeError:
        pass  # the child died before it read its job: the zygote reports how
    finally:
        os.close(job_w)


def supervise(job: ProblemSet, child: Child, main_r: int, out_r: int,
              zygote: socket.socket, seconds: Optional[float] = None,
              long: bool = False) -> Tuple[Supervisor, Dict[str, float]]:
    """Run the job's event loop until the child is gone; the supervisor then holds the outcome. Also gives the
    CPU seconds of the submission's processes while loading ("load": read when loading ended) and after ("calls").
    The grader's only frame meanwhile, on fd 0, asks the job to yield its worker."""
    supervisor = Supervisor(job.problems, job.limits, child.pid, time.monotonic(), group_cpu_seconds, seconds,
                            waited_seconds, long)
    frames = FrameBuffer(MAX_CHILD_BLOB)
    link_fd = zygote.fileno()
    open_fds = {main_r, out_r, link_fd, 0}
    outbox: List[bytes] = []
    loaded_cpu: List[float] = []
    spent = 0.0

    def carry_out(actions: list) -> None:
        for action in actions:
            if isinstance(action, Answer):
                outbox.append(action.data)
            elif isinstance(action, Kill):
                child.kill(action.groups)
            elif isinstance(action, Lower):
                child.lower(action.groups)

    while supervisor.waiting:
        now = time.monotonic()
        if supervisor.deadline <= now:
            carry_out(supervisor.tick(now))
            if outbox:  # a "long" frame the grader waits for
                write_all(1, b"".join(outbox))
                outbox.clear()
            continue
        watched = [fd for fd in (main_r, out_r, link_fd, 0) if fd in open_fds]
        ready, _, _ = select.select(watched, [], [], supervisor.deadline - now)
        for fd in ready:
            now = time.monotonic()
            if fd == 0:
                asked = read_frame(0)
                if asked is None:
                    open_fds.discard(0)  # the grader is closing: the job runs to its end
                elif asked[1].get("kind") == "yield":
                    carry_out(supervisor.preempt(now))
                continue
            if fd == link_fd:
                exited, _ = link.receive(zygote)
                if exited is None or "exited" not in exited:
                    raise ZygoteGone(f"waited for the child's exit, got {exited!r}")
                spent = float(exited["cpu"])
                carry_out(supervisor.child_exited(int(exited["exited"]), now))
                open_fds.discard(link_fd)
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
                        loaded_cpu.append(loading_cpu(header, child.pid))
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


def loading_cpu(header: Dict[str, Any], child: int) -> float:
    """The child's CPU seconds when its loading ended, for `qkv grade --timings`: its own clock, sent in its
    "loaded" frame, else (a frame without one, a failed load) /proc's now, which also holds whatever the child
    did while this process had yet to wake. A child may lie: the figure is capped at its exact total once it has
    ended, and it decides nothing (limits are the kernel's and the supervisor's deadlines)."""
    said = header.get("cpu")
    if type(said) is float and 0.0 <= said < 1e6:
        return said
    return process_cpu_seconds(child)


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
