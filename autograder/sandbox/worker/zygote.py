"""The zygote: pid 1 of the sandbox. Imports numpy (and torch) once, forks the handler, then a child per job.

It never reads a job itself, so nothing of one student's job lingers in memory that
the next student's child, forked from here, inherits. What it does read is the class's
problem set (job.py), which the handler hands it: it holds that decoded, and each
child inherits it, rather than decoding the same calls and inputs per job. The handler (handler.py) lives
as long as the worker and does all the reading: it asks for each child over a socket
pair (link.py) and gets the child's pipes with the reply. The zygote is every child's
parent, so it reports each child's exit to the handler, and it reaps what a
submission leaves: as pid 1 of the sandbox's pid namespace (or, without one, as a
child subreaper) it inherits a submission's orphans, and it kills and collects them
until its only child is the handler again.

It is not dumpable, so no process of the same uid may trace it or open its /proc fds,
and the kernel ignores signals sent to it from inside the namespace unless it handles
them. The grader's pipes are the handler's alone: the zygote keeps no copy for a child
to inherit. A handler that ends abnormally, or that stops (a SIGSTOP from anyone), ends
the zygote: the job stream is no longer in a known state, so the pool charges that job
to the submission it was running and starts a fresh worker.
"""

from __future__ import annotations

import gc
import math
import os
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple, Union

from qkv_runtime.values import exception_text, to_arrays
from qkv_runtime.wire import encode_frame, pack_arrays, unpack_arrays, write_all

from . import link, seccomp
from .child import start_child
from .confine import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, guard_of, prctl
from .handler import EXIT_DIRTY, EXIT_STDIN_CLOSED, serve_jobs
from .job import ProblemSet, read_problem_set
from .proctools import reap

# Small modules students commonly import. Loaded here, they cost nothing per job and
# stay importable when the slot's uid cannot read the Python installation (say, under
# a 0700 /root). Big ones are left out: every megabyte the zygote maps makes each fork slower.
COMMON_MODULES = ("collections", "copy", "dataclasses", "functools", "itertools", "math", "random", "re", "typing")
EXIT_HANDLER_LOST = 5  # the handler stopped or died: the pool reports it and restarts the worker


def main(config: Dict[str, Any]) -> None:
    """Started by the pool's launch line, which has put the worker, the runtime and site-packages on sys.path."""
    import numpy

    if config["track"] == "torch":
        import torch

        torch.set_num_threads(1)
    for name in COMMON_MODULES:
        __import__(name)
    warm_up(numpy)
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # without bwrap's pid namespace, orphans of a submission still come here
    # Keep the collector away from everything imported so far: a collection in
    # a fork would write to (and so copy) every page holding those objects.
    gc.freeze()
    ours, theirs = link.pair()
    write_all(1, encode_frame({"kind": "ready", "pid": os.getpid(), "track": config["track"],
                               "seccomp": seccomp.supported()}))
    handler = os.fork()
    if handler == 0:
        ours.close()
        code = 1
        try:
            code = serve_jobs(config, theirs)
        except BaseException:  # noqa: BLE001 - the handler is ours: a bug here is printed, and the worker restarts
            traceback.print_exc()
        os._exit(code)
    theirs.close()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.exit(serve_handler(config, ours, handler))


class HandlerLost(Exception):
    """The handler ended, stopped, or broke the link's order; `code` is the worker's exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def serve_handler(config: Dict[str, Any], handler_link: socket.socket, handler: int) -> int:
    """Fork, report and reap for the handler until it ends; the worker's exit code.

    One loop waits for both the handler's requests and the children's changes of
    state (SIGCHLD, through a wake-up pipe), so a handler stopped at any moment is
    noticed at once, between jobs as much as during one. What a job's messages and
    waits hold lives in the frames of the functions below, which end before the next
    child is forked: the loop itself keeps only the child's pid and the class's problem set.
    """
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    child: Optional[int] = None
    held: Optional[ProblemSet] = None
    job_started = 0.0
    guard = guard_of(handler)
    watched: List[Union[socket.socket, int]] = [handler_link, wake_r]
    try:
        while True:
            ready, _, _ = select.select(watched, [], [])
            if wake_r in ready:
                drain(wake_r)
            child = collect_changes(handler, child, handler_link)
            if handler_link in ready:
                request, fds = hear(handler_link, handler)
                if request == "hold" and child is None and len(fds) == 1:
                    held = hold(fds[0], handler)
                    tell(handler_link, handler, {"held": True})
                elif request == "fork" and child is None and held is not None:
                    job_started = time.process_time()
                    try:
                        child = start_child(config, guard, held, handler_link, (wake_r, wake_w))
                    except OSError:
                        raise lose(handler) from None
                elif request == "reap" and child is None:
                    try:
                        clean = reap(config["uid"], spare=handler)
                    except OSError:  # no fork for the helper, /proc unreadable: nothing is known clean
                        clean = False
                    tell(handler_link, handler, {"reaped": clean, "cpu": time.process_time() - job_started})
                else:
                    raise lose(handler)
    except HandlerLost as lost:
        return lost.code


def drain(fd: int) -> None:
    try:
        while len(os.read(fd, 4096)) == 4096:
            pass
    except BlockingIOError:
        pass


def collect_changes(handler: int, child: Optional[int], handler_link: socket.socket) -> Optional[int]:
    """Collect every child whose state changed, telling the handler when the job's child exits; gives the
    job's child while it runs, None once its exit is told."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            raise HandlerLost(EXIT_HANDLER_LOST) from None
        if pid == 0:
            return child
        if pid == handler:
            raise HandlerLost(handler_ended(handler, status))
        if pid == child and not os.WIFSTOPPED(status):
            tell(handler_link, handler, {"exited": status, "cpu": usage.ru_utime + usage.ru_stime})
            child = None
        # else an orphan of the submission collected, or a stopped process the handler's deadlines will kill


def hear(handler_link: socket.socket, handler: int) -> Tuple[Optional[str], List[int]]:
    """What the handler asks ("hold", with the problem set's memfd; "fork", "reap"); the handler's end, or anything
    that is not a request, ends the loop."""
    try:
        request, fds = link.receive(handler_link, max_fds=1)
    except (OSError, ValueError):
        raise lose(handler) from None
    do = request.get("do") if isinstance(request, dict) else None
    if do != "hold":
        for fd in fds:
            os.close(fd)  # so that no descriptor but the problem set's is ever held, and none reaches a child
        fds = []
    if request is None:
        raise HandlerLost(handler_ended(handler, os.waitpid(handler, os.WUNTRACED)[1]))
    return do, fds


def hold(fd: int, handler: int) -> ProblemSet:
    """Read and decode the problem set the handler handed over, for every child forked from now on."""
    try:
        held = read_problem_set(fd)
    except (OSError, ValueError, KeyError, TypeError):
        held = None
    finally:
        os.close(fd)
    if held is None:
        raise lose(handler)
    gc.freeze()  # as at the start: no collection in a child writes to (and so copies) the pages holding it
    return held


def tell(handler_link: socket.socket, handler: int, message: Dict[str, Any]) -> None:
    try:
        link.send(handler_link, message)
    except OSError:
        raise lose(handler) from None


def lose(handler: int) -> HandlerLost:
    """Kill the handler, whose link broke or who broke its order; the error that ends the worker."""
    try:
        os.kill(handler, signal.SIGKILL)
        os.waitpid(handler, 0)
    except OSError:
        pass
    return HandlerLost(EXIT_HANDLER_LOST)


def handler_ended(handler: int, status: int) -> int:
    """The worker's exit code for a handler that exited or stopped with `status`."""
    if os.WIFSTOPPED(status):
        os.kill(handler, signal.SIGKILL)
        os.waitpid(handler, 0)
        return EXIT_HANDLER_LOST
    code = os.waitstatus_to_exitcode(status)
    if code == EXIT_STDIN_CLOSED:
        return 0
    return code if code == EXIT_DIRTY else EXIT_HANDLER_LOST


def warm_up(np: Any) -> None:
    """Run each per-job code path once, so its lazy imports happen here and not per fork.

    The same goes for numpy's own first-use costs (type-promotion and loop caches,
    numpy.typing for annotated stubs): the operations attention code is made of run
    once here on small arrays, which takes a quarter off a typical submission's calls.
    """
    unpack_arrays(pack_arrays([np.zeros(2)])[1], [["<f8", [2]]])
    __import__("numpy.typing")
    for dtype in (np.float64, np.float32):
        a, b = np.linspace(0, 1, 24, dtype=dtype).reshape(2, 3, 4), np.ones((2, 4, 3), dtype=dtype)
        scores = np.where(np.tril(np.ones((3, 3), dtype=bool)), (a @ b)[0] / math.sqrt(4), -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        with np.errstate(under="ignore"):
            e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        e / e.sum(axis=-1, keepdims=True)
        (a - a.mean(axis=-1, keepdims=True)) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-5)
        np.maximum(a, 0), np.sin(a), np.cos(a), np.power(10000.0, -a), np.einsum("bij,bjk->bik", a, b)
        np.concatenate([a, a], axis=-1), np.stack([a, a]), np.swapaxes(a, -1, -2).reshape(2, 2, 6), a.astype(np.float64)
        np.issubdtype(a.dtype, np.floating), np.asarray([[1, 2]], dtype=dtype), np.allclose(a, a)
        to_arrays((a, scores))
    try:
        exec(compile("1/0", "submission.py", "exec"), {})
    except ZeroDivisionError as exc:
        exception_text(exc)
    torch = sys.modules.get("torch")
    if torch is not None:
        to_arrays(torch.from_numpy(np.zeros(2)))
