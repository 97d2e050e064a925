"""The child: loads the submission and makes its calls. Student code runs here, so all it says is merely checked.

Forked by the zygote per job, so its memory holds nothing of an earlier job, and the
class's problem set decoded (the zygote's); reads its job (the program) from the handler, confines itself (confine.py), loads the module or
runs the notebook's steps, reports what it defines and its ANSWERS as plain data,
then per problem either forks a grandchild that makes the calls (a crash, loop or
exit then costs that problem only) or, for a batched problem, makes them itself.
Frames go to the handler on fd 3; every result is raw bytes plus a layout.
"""

from __future__ import annotations

import builtins
import os
import select
import signal
import socket
import sys
import time
import types
from typing import Any, Dict, List, Tuple

import numpy as np

from qkv_runtime.notebook import run_steps
from qkv_runtime.values import (
    SUBMISSION_FILE,
    exception_text,
    exit_code_text,
    is_out_of_memory,
    plain_answers,
    raised_at,
    to_arrays,
    to_track,
)
from qkv_runtime.wire import (
    CALLS_FRAME_BYTES,
    MAX_CALLS_PER_FRAME,
    MAX_CHILD_BLOB,
    FrameBuffer,
    encode_frame,
    pack_arrays,
    write_all,
)

from . import link, seccomp
from .confine import MAIN_FD, PR_SET_PDEATHSIG, Guard, confine, prctl
from .job import Job, ProblemSet, read_job
from .proctools import kill_group

FORK_TRIES = 50
PROCESS_TIME = time.process_time  # taken before any student code runs, which may replace the module's


def send(header: Dict[str, Any], blob: bytes = b"") -> None:
    write_all(MAIN_FD, encode_frame(header, blob))


def flush_std() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:  # sys.__stdout__ is, without a console
                stream.flush()
        except BaseException:  # noqa: BLE001 - student code may have replaced or closed the streams
            pass


def load_failure(exc: BaseException) -> Dict[str, Any]:
    if isinstance(exc, SystemExit):
        where = raised_at(exc)  # so the feedback can say where: a stray sys.exit() is easy to miss
        return {"kind": "load_failed", "status": "exited",
                "message": f"called sys.exit({exit_code_text(exc.code)}) while loading" + (f", {where}" if where else "")}
    if is_out_of_memory(exc):
        return {"kind": "load_failed", "status": "memory",
                "message": f"ran out of memory while loading: {exception_text(exc, limit=300)}"}
    return {"kind": "load_failed", "status": "load_error", "message": exception_text(exc)}


def start_child(config: Dict[str, Any], guard: Guard, held: ProblemSet, handler_link: socket.socket,
                wake: Tuple[int, int]) -> int:
    """The zygote's fork of a job's child, which runs the problem set `held`; hands the handler the child's pipes and
    a pidfd, and gives its pid."""
    job_r, job_w = os.pipe()
    main_r, main_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            # first of all, what is the zygote's alone: its link to the handler and its wake-up pipe
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            handler_link.close()
            for fd in (*wake, job_w, main_r, out_r):
                os.close(fd)
            job = read_job(job_r, held, config)
            if job is not None:
                os.close(job_r)
                run_child(job, main_w, out_w, guard)
        finally:
            os._exit(1)  # never back into the zygote's loop
    for fd in (job_r, main_w, out_w):
        os.close(fd)
    # the pidfd names this child even after the zygote collects it and its pid is reused
    pidfd = os.pidfd_open(pid)
    try:
        link.send(handler_link, {"pid": pid}, (job_w, main_r, out_r, pidfd))
    finally:
        for fd in (job_w, main_r, out_r, pidfd):
            os.close(fd)
    return pid


def run_child(job: Job, main_w: int, out_w: int, guard: Guard) -> None:
    """Never returns. Everything after the program starts runs beside student code."""
    try:
        workdir = confine(job, main_w, out_w, guard)
    except BaseException as exc:  # noqa: BLE001 - reported, then this process ends
        send({"kind": "load_failed", "status": "crashed", "message": f"sandbox setup failed: {exc!r}"})
        os._exit(1)
    me = os.getpid()
    module = types.ModuleType("submission")
    module.__file__ = os.path.join(workdir, SUBMISSION_FILE)
    module.__dict__["__builtins__"] = builtins
    sys.modules["submission"] = module
    namespace = module.__dict__
    cell_errors: List[str] = []
    try:
        if job.program.steps:
            cell_errors = run_steps(job.program.steps, namespace)
        else:
            # dont_inherit: compiled as Python compiles it, not under this module's own `from __future__` imports
            exec(compile(job.program.source or "", SUBMISSION_FILE, "exec", dont_inherit=True), namespace)
    except BaseException as exc:  # noqa: BLE001 - the submission failed to load
        failure = load_failure(exc)
        flush_std()
        if os.getpid() == me:
            send(failure)
        os._exit(0)
    flush_std()
    if os.getpid() != me:
        os._exit(0)  # a copy forked at the top level of the module
    answers = plain_answers(namespace.get("ANSWERS"))
    try:
        defined = [k for k, v in list(namespace.items()) if type(k) is str and not k.startswith("__") and callable(v)]
    except BaseException:  # noqa: BLE001 - a namespace value whose type lies about being callable
        defined = []
    send({"kind": "loaded", "answers": answers, "defined": sorted(defined)[:1000], "cell_errors": cell_errors,
          "cpu": PROCESS_TIME()})  # what loading took: handler.loading_cpu
    for index, problem in enumerate(job.problems):
        run_problem(job, namespace, index, problem, me)
    os._exit(0)


# ---------------------------------------------------------------- problems


def run_problem(job: Job, namespace: Dict[str, Any], index: int, problem: Dict[str, Any], me: int) -> None:
    """Fork the grandchild for one problem and relay its frames to the handler.

    A batched problem runs here instead: the caller reruns everything problem by
    problem when anything goes wrong, so it needs no process of its own.
    """
    if os.getpid() != me:
        os._exit(0)
    if problem.get("batched") is True:
        send({"kind": "start", "index": index, "pid": me})
        run_calls(job, namespace, problem, MAIN_FD)
        send({"kind": "end", "index": index, "signal": None, "exit": 0})
        return
    read_fd, write_fd = os.pipe()
    for _ in range(FORK_TRIES):
        try:
            pid = os.fork()
            break
        except BlockingIOError:
            # Processes of a killed fork bomb still count against RLIMIT_NPROC
            # until they are reaped, which takes a moment.
            time.sleep(0.02)
    else:
        os.close(read_fd)
        os.close(write_fd)
        send({"kind": "fork_failed", "index": index})
        return
    if pid == 0:
        # Only the child talks to the handler; the problem's own pipe is all a grandchild can spoil,
        # and it may not stop or kill the child either (a problem fails alone, as in a batch).
        os.close(read_fd)
        os.close(MAIN_FD)
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            os.setpgid(0, 0)
            if seccomp.supported():
                seccomp.install(seccomp.compiled([me]))
            run_calls(job, namespace, problem, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # already exited, or already its own group
    send({"kind": "start", "index": index, "pid": pid})
    relay(pid, read_fd)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    send({"kind": "end", "index": index, "signal": -code if code < 0 else None, "exit": max(code, 0)})


def relay(pid: int, read_fd: int) -> None:
    """Forward whole frames until the grandchild exits; drop a torn last frame."""
    frames = FrameBuffer(MAX_CHILD_BLOB)
    exited = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([read_fd, exited], [], [])
            if exited in ready and read_fd not in ready:
                break
            data = os.read(read_fd, 1 << 16)
            if not data:
                break
            for header, blob in frames.feed(data):
                send(header, blob)
            if frames.error is not None:
                kill_group(pid)
                send({"kind": "garbled"})
                break
    finally:
        os.close(exited)


def argument(spec: Dict[str, Any], job: Job) -> Any:
    return to_track(job.arrays[spec["a"]], job.track) if "a" in spec else spec["v"]


def run_calls(job: Job, namespace: Dict[str, Any], problem: Dict[str, Any], write_fd: int) -> None:
    me = os.getpid()
    batched = problem.get("batched") is True
    pending: List[bytes] = []
    results: List[Dict[str, Any]] = []  # a batch's results not yet framed, and their arrays
    blobs: List[bytes] = []
    framed_bytes = 0

    def frame_results() -> None:
        nonlocal framed_bytes
        if results:
            pending.append(encode_frame({"kind": "calls", "results": list(results)}, b"".join(blobs)))
            results.clear()
            blobs.clear()
            framed_bytes = 0

    def emit(header: Dict[str, Any], blob: bytes = b"") -> None:
        if os.getpid() != me:
            os._exit(0)  # a copy the student forked: only the original reports
        frame_results()
        pending.append(encode_frame(header, blob))
        # Endings (done, exit, memory) always flush.
        if not batched or header.get("kind") in ("done", "sysexit", "memory"):
            write_all(write_fd, b"".join(pending))
            pending.clear()

    def result(entry: Dict[str, Any], blob: bytes = b"") -> None:
        """A call's result: a frame of its own, or in a batch, an entry of the next "calls" frame. A batch's
        frames are written with its ending: one write instead of one per call, which would wake three processes
        per call."""
        nonlocal framed_bytes
        if not batched:
            emit({"kind": "call", **entry}, blob)
            return
        if os.getpid() != me:
            os._exit(0)
        if results and (len(results) >= MAX_CALLS_PER_FRAME or framed_bytes + len(blob) > CALLS_FRAME_BYTES):
            frame_results()
        entry["bytes"] = len(blob)
        results.append(entry)
        blobs.append(blob)
        framed_bytes += len(blob)

    # Every call starts with the float error handling and default dtype the module left after
    # loading: a function that changes them (np.seterr(all="raise")) must not change how the
    # calls after it score, whether they share its process (a batch) or not.
    float_errors = np.geterr()
    torch = sys.modules.get("torch") if job.track == "torch" else None
    default_dtype = torch.get_default_dtype() if torch is not None else None
    for call in problem["calls"]:
        call_id = call["id"]
        if not batched:  # it only names the call a crash interrupted; batched runs are rerun for that
            emit({"kind": "begin", "call_id": call_id})
        function = namespace.get(call["fn"])
        if not callable(function):
            result({"call_id": call_id, "ok": False, "error": f"{call['fn']} is not defined"})
            continue
        try:
            np.seterr(**float_errors)
            if torch is not None:
                torch.set_default_dtype(default_dtype)
            args = [argument(a, job) for a in call["args"]]
            kwargs = {k: argument(v, job) for k, v in call["kwargs"].items()} if call["kwargs"] else {}
            outputs = to_arrays(function(*args, **kwargs))
        except SystemExit as exc:
            flush_std()
            emit({"kind": "sysexit", "code": exit_code_text(exc.code)})
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - the student's exception is this call's result
            if not batched:
                flush_std()
            result({"call_id": call_id, "ok": False, "error": exception_text(exc)})
            if is_out_of_memory(exc):
                flush_std()
                emit({"kind": "memory"})
                os._exit(0)
            continue
        # what a call printed goes out before its result when it has a process of its own, whose crash would
        # lose the rest; a batch that fails is run again problem by problem, so it flushes once, at its end
        if not batched:
            flush_std()
        if isinstance(outputs, str):
            result({"call_id": call_id, "ok": False, "error": outputs})
            continue
        layout, blob = pack_arrays(outputs)
        result({"call_id": call_id, "ok": True, "arrays": layout}, blob)
    flush_std()
    emit({"kind": "done"})
