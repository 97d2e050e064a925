"""Sandbox worker: runs inside bwrap (or alone, rlimits-only) and executes student code.

Standalone on purpose: it imports only the standard library, numpy and (torch track)
torch, and nothing of the project, so student code has nothing of the grader in
reach. Started once per pool slot as ``python -I -S -B worker.py CONFIG_JSON``.

Takes job frames on stdin (see protocol.py; framing duplicated here) and gives
frames on stdout: "ready" once, then per job zero or more "call" frames, one
"problem" frame per problem, and a closing "submission" frame.

Process tree, and who may be trusted:
  zygote   imports numpy/torch once and never reads a job, so nothing of one
           student's job lingers in memory that the next student's fork inherits;
  handler  forked per job from the zygote; reads the job, enforces wall time and
           output caps, reaps, and writes the answer frames (trusted, never runs
           student code);
  child    forked by the handler; limits itself, drops to the slot uid, execs the
           source, then forks one grandchild per problem and relays its frames,
           or runs a batched problem's calls itself (runs student code, so
           everything it says is merely checked);
  grandchild  runs the calls of one problem and streams one frame per call.
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback
import types
from collections.abc import Iterator
from typing import NamedTuple

FRAME_HEAD = struct.Struct(">II")
MAX_HEADER_BYTES = 4 * 1024 * 1024
MAX_CALL_OUTPUT_BYTES = 32 * 1024 * 1024
MAX_OUTPUTS_PER_CALL = 64
MAX_CHILD_BLOB = MAX_CALL_OUTPUT_BYTES + 64 * 1024
STDOUT_KEEP_BYTES = 8000
# Time the child may take for its own bookkeeping between problems.
GRACE_SECONDS = 3.0
STARVED_FACTOR = 3.0
WHERE = "{where}"  # placeholder in problem messages for " while running f()"
STARVED_RECHECK_SECONDS = 0.25
EXIT_STDIN_CLOSED = 3
MAIN_FD = 3
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
NUMERIC_KINDS = frozenset("biufc")
COMMON_MODULES = ("collections", "copy", "dataclasses", "functools", "itertools", "math", "random", "re", "typing")

np = None  # set in main(), once sys.path points at the venv
torch = None


# ---------------------------------------------------------------- framing


def encode_frame(header: dict, blob: bytes = b"") -> bytes:
    head = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode()
    return FRAME_HEAD.pack(len(head), len(blob)) + head + blob


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, n: int) -> bytes | None:
    chunks, have = [], 0
    while have < n:
        chunk = os.read(fd, min(n - have, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


class FrameBuffer:
    """Splits a byte stream into frames; `error` is set once the stream is garbage."""

    def __init__(self, max_blob: int) -> None:
        self.buf = bytearray()
        self.max_blob = max_blob
        self.error: str | None = None

    def feed(self, data: bytes) -> list[tuple[dict, bytes]]:
        self.buf += data
        frames = []
        while self.error is None and len(self.buf) >= FRAME_HEAD.size:
            head_len, blob_len = FRAME_HEAD.unpack_from(self.buf)
            if head_len > MAX_HEADER_BYTES or blob_len > self.max_blob:
                self.error = f"frame of {head_len} + {blob_len} bytes"
                break
            end = FRAME_HEAD.size + head_len + blob_len
            if len(self.buf) < end:
                break
            try:
                header = json.loads(bytes(self.buf[FRAME_HEAD.size : FRAME_HEAD.size + head_len]))
            except ValueError:
                header = None
            if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
                self.error = "frame header is not a JSON object with a kind"
                break
            frames.append((header, bytes(self.buf[FRAME_HEAD.size + head_len : end])))
            del self.buf[:end]
        return frames


# ---------------------------------------------------------------- small helpers


LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    LIBC.prctl(option, value, 0, 0, 0)


def vm_size() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def signal_text(signum: int) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    description = signal.strsignal(signum) or ""
    return f"{name} ({description.lower()})" if description else name


def exception_text(exc: BaseException, limit: int = 1000) -> str:
    try:
        detail = str(exc)
    except BaseException:  # a student exception whose __str__ raises
        detail = "<unprintable>"
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.lineno and f"line {exc.lineno}" not in text:
        text += f" (line {exc.lineno})"
    elif not isinstance(exc, SyntaxError):
        line = submission_line(exc)
        if line:
            text += f" (line {line})"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def submission_line(exc: BaseException) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "submission.py":
            line = lineno
    return line


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    # torch reports allocator failures as RuntimeError.
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def kill_group(pgid: int | None) -> None:
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


# ---------------------------------------------------------------- zygote


def main() -> None:
    global np, torch
    config = json.loads(sys.argv[1])
    sys.path[:] = [p for p in sys.path if p] + config["site"]
    import numpy

    np = numpy
    if config["track"] == "torch":
        import torch as torch_module

        torch = torch_module
        torch.set_num_threads(1)
    # Small modules students commonly import. Loaded here, they cost nothing per
    # job and stay importable in rlimits-only mode when the slot's uid cannot read
    # the Python installation (say, under a 0700 /root). Big ones are left out:
    # every megabyte the zygote maps makes each of its forks slower.
    for name in COMMON_MODULES:
        __import__(name)

    warm_up()

    prctl(PR_SET_DUMPABLE, 0)  # same-uid processes cannot read our memory or fds
    # Keep the collector away from everything imported so far: a collection in
    # a fork would write to (and so copy) every page holding those objects.
    gc.freeze()
    write_all(1, encode_frame({"kind": "ready", "pid": os.getpid(), "track": config["track"]}))
    while True:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = handle_job(config)
            except BaseException:
                traceback.print_exc()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == EXIT_STDIN_CLOSED:
            sys.exit(0)
        if status != 0:
            # The handler died mid-job: our position in the job stream is unknown.
            sys.exit(1)


def warm_up() -> None:
    """Run each per-job code path once, so its lazy imports happen here and not per fork.

    The same goes for numpy's own first-use costs (type-promotion and loop caches,
    numpy.typing for annotated stubs): the operations attention code is made of run
    once here on small arrays, which takes a quarter off a typical submission's calls.
    """
    np.frombuffer(np.zeros(2).tobytes(), dtype=np.dtype("<f8"), count=2, offset=0).reshape([2]).copy()
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
    try:
        exec(compile("1/0", "submission.py", "exec"), {})
    except ZeroDivisionError as exc:
        exception_text(exc)
    if torch is not None:
        torch.from_numpy(np.zeros(2)).detach().cpu().resolve_conj().resolve_neg().numpy()


# ---------------------------------------------------------------- handler


def handle_job(config: dict) -> int:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    head = read_exact(0, FRAME_HEAD.size)
    if head is None:
        return EXIT_STDIN_CLOSED
    head_len, blob_len = FRAME_HEAD.unpack(head)
    header = json.loads(read_exact(0, head_len))
    blob = read_exact(0, blob_len)
    # raw bytes and a layout from the trusted grader: views, no zip to parse (that was 9 ms a job)
    arrays = {key: np.frombuffer(blob, dtype=np.dtype(dtype), count=math.prod(shape), offset=offset).reshape(shape)
              for key, (dtype, shape, offset) in header.get("arrays", {}).items()}
    job = Job(header, arrays, config)
    main_r, main_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(main_r)
        os.close(out_r)
        run_child(job, main_w, out_w)
    os.close(main_w)
    os.close(out_w)
    Supervisor(job, pid, main_r, out_r).run()
    return 0


class Job:
    def __init__(self, header: dict, arrays: dict, config: dict) -> None:
        self.source: str = header["source"]
        self.problems: list[dict] = header["problems"]
        self.limits: dict = header["limits"]
        self.arrays = arrays
        self.uid: int | None = config["uid"]
        self.scratch: str = config["scratch"]
        self.track: str = config["track"]


class Supervisor:
    """The handler's side of one job: deadlines, output caps, statuses, answer frames.

    Every frame from the child is checked; a frame that does not fit the
    expected sequence ends the submission as "crashed" instead of confusing us.
    """

    def __init__(self, job: Job, child: int, main_r: int, out_r: int) -> None:
        self.job = job
        self.limits = job.limits
        self.child = child
        self.child_fd = os.pidfd_open(child)
        self.main_r, self.out_r = main_r, out_r
        self.open = {main_r, out_r, self.child_fd}
        self.frames = FrameBuffer(MAX_CHILD_BLOB)
        self.phase = "load"  # load | between | problem | after
        self.started = time.monotonic()
        self.deadline = self.started + self.limits["load_seconds"]
        self.load: tuple[str, str] | None = None  # set once loading failed
        self.loaded: dict | None = None  # the child's "loaded" frame
        self.next_problem = 0
        self.problem_states: dict[str, tuple[str, str]] = {}
        self.current: dict | None = None
        self.groups: list[int] = [child]
        self.child_wait: int | None = None
        self.failure: tuple[str, str] | None = None  # a submission-level failure after loading
        self.stdout = bytearray()
        self.phase_output = 0
        self.outbox: list[bytes] = []  # answer frames, written once per wake-up: one write, one wake-up of the grader

    # -- loop

    def run(self) -> None:
        while self.child_wait is None or self.main_r in self.open:
            timeout = self.deadline - time.monotonic()
            if timeout <= 0:
                self.on_deadline()
                continue
            ready, _, _ = select.select(list(self.open), [], [], timeout)
            for fd in ready:
                if fd == self.child_fd:
                    self.child_wait = os.waitpid(self.child, 0)[1]
                    self.open.discard(fd)
                    os.close(fd)
                    # Take what is already in the pipe, but do not wait for writers
                    # that outlived the child (a student process holding it open).
                    self.deadline = min(self.deadline, time.monotonic() + 0.2)
                    continue
                data = os.read(fd, 1 << 16)
                if not data:
                    self.open.discard(fd)
                elif fd == self.out_r:
                    self.on_output(data)
                elif self.main_r in self.open:
                    self.on_data(data)
            self.flush()
        self.keep_output()
        self.finish()
        self.flush()

    def answer(self, header: dict, blob: bytes = b"") -> None:
        self.outbox.append(encode_frame(header, blob))

    def flush(self) -> None:
        if self.outbox:
            write_all(1, b"".join(self.outbox))
            self.outbox.clear()

    def on_data(self, data: bytes) -> None:
        try:
            for header, blob in self.frames.feed(data):
                self.on_frame(header, blob)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.frames.error = f"{type(exc).__name__}: {exc}"
        if self.frames.error:
            self.protocol_broken(self.frames.error)
            self.open.discard(self.main_r)

    def keep_output(self) -> None:
        os.set_blocking(self.out_r, False)
        try:
            while len(self.stdout) < STDOUT_KEEP_BYTES:
                data = os.read(self.out_r, 1 << 16)
                if not data:
                    break
                self.stdout += data[: STDOUT_KEEP_BYTES - len(self.stdout)]
        except BlockingIOError:
            pass

    # -- events

    def on_output(self, data: bytes) -> None:
        if len(self.stdout) < STDOUT_KEEP_BYTES:
            self.stdout += data[: STDOUT_KEEP_BYTES - len(self.stdout)]
        self.phase_output += len(data)
        if self.phase_output <= self.limits["max_output_bytes"]:
            return
        cap = f"printed more than {self.limits['max_output_bytes']:,} bytes"
        if self.phase == "load":
            self.kill(self.child)
            self.load = ("load_error", f"{cap} while loading (output limit)")
            self.enter_after()
        elif self.phase == "problem" and not self.current["verdict"]:
            self.kill(self.current["pid"])
            self.current["verdict"] = ("output_limit", f"{cap}{WHERE} (output limit)")
            self.deadline = time.monotonic() + GRACE_SECONDS

    def on_frame(self, header: dict, blob: bytes) -> None:
        kind = header["kind"]
        if self.phase == "load" and kind == "loaded":
            self.loaded = header
            self.enter_between()
        elif self.phase == "load" and kind == "load_failed":
            status = header["status"] if header.get("status") in LOAD_FAILURES else "crashed"
            self.load = (status, str(header.get("message"))[:500])
            self.enter_after()
        elif self.phase == "between" and kind == "start" and header.get("index") == self.next_problem:
            self.start_problem(header["pid"])
        elif self.phase == "between" and kind == "fork_failed" and header.get("index") == self.next_problem:
            problem_id = self.job.problems[self.next_problem]["id"]
            message = "could not start: too many of the submission's processes are still running"
            self.send_problem(problem_id, "crashed", message)
            self.next_problem += 1
            self.enter_between()
        elif self.phase == "problem" and kind != "start":
            self.on_problem_frame(kind, header, blob)
        elif kind in ("loaded", "load_failed", "start", "end"):
            raise ValueError(f"unexpected {kind!r} frame")

    def start_problem(self, pid: int) -> None:
        problem = self.job.problems[self.next_problem]
        if not isinstance(pid, int) or pid <= 1:
            raise ValueError(f"bad grandchild pid {pid!r}")
        self.groups.append(pid)
        self.current = {
            "problem": problem,
            "functions": {c["id"]: c["fn"] for c in problem["calls"]},
            "pid": pid,
            "call": None,
            "seen": set(),
            "verdict": None,
            "memory": False,
            "sysexit": None,
            "done": False,
        }
        self.phase, self.phase_output = "problem", 0
        self.started = time.monotonic()
        self.deadline = self.started + self.limits["problem_seconds"]

    def on_problem_frame(self, kind: str, header: dict, blob: bytes) -> None:
        current = self.current
        call_id = header.get("call_id")
        if kind == "begin" and call_id in current["functions"]:
            current["call"] = call_id
        elif kind == "call" and call_id in current["functions"] and call_id not in current["seen"]:
            current["seen"].add(call_id)
            layout = header.get("arrays")
            ok = header.get("ok") is True and isinstance(layout, list) and 0 < len(layout) <= MAX_OUTPUTS_PER_CALL
            error = header.get("error")
            frame = {
                "kind": "call",
                "problem": current["problem"]["id"],
                "call_id": call_id,
                "ok": ok,
                "error": None if ok else (str(error)[:1000] if error is not None else "no output"),
                "arrays": layout if ok else [],
            }
            self.answer(frame, blob if ok else b"")
        elif kind == "memory":
            current["memory"] = True
        elif kind == "sysexit":
            current["sysexit"] = str(header.get("code"))[:100]
        elif kind == "done":
            current["done"] = True
        elif kind == "garbled" and not current["verdict"]:
            current["verdict"] = ("crashed", f"sent malformed results{WHERE}; the rest were discarded")
        elif kind == "end" and header.get("index") == self.next_problem:
            self.end_problem(header.get("signal"), header.get("exit"))

    def end_problem(self, signum: object, exit_code: object) -> None:
        current = self.current
        if current["verdict"]:
            verdict = current["verdict"]
        elif current["memory"]:
            verdict = ("memory", f"ran out of memory{WHERE} (limit {fmt_bytes(self.limits['memory_bytes'])})")
        elif current["sysexit"] is not None:
            verdict = ("exited", f"called sys.exit({current['sysexit']}){WHERE}")
        elif isinstance(signum, int):
            verdict = self.signal_verdict(signum)
        elif exit_code != 0 or not current["done"]:
            verdict = ("exited", f"exited with code {exit_code}{WHERE} (os._exit?)")
        else:
            n = len(current["seen"])
            verdict = ("ok", f"ran {n} call{'s' if n != 1 else ''}")
        self.send_problem(current["problem"]["id"], *verdict)
        self.current = None
        self.next_problem += 1
        self.enter_between()

    def signal_verdict(self, signum: int) -> tuple[str, str]:
        if signum == signal.SIGXCPU:
            return ("timeout", f"used more than {self.limits['cpu_seconds']} s of CPU time{WHERE} (CPU limit)")
        if signum == signal.SIGXFSZ:
            size = fmt_bytes(self.limits["max_file_bytes"])
            return ("crashed", f"wrote a file larger than {size}{WHERE} (file size limit)")
        return ("crashed", f"crashed with {signal_text(signum)}{WHERE}")

    def where(self) -> str:
        call = self.current["call"] if self.current else None
        return f" while running {self.current['functions'][call]}()" if call else ""

    def enter_between(self) -> None:
        if self.next_problem >= len(self.job.problems):
            self.enter_after()
        else:
            self.phase = "between"
            self.deadline = time.monotonic() + GRACE_SECONDS

    def enter_after(self) -> None:
        self.phase = "after"
        self.deadline = time.monotonic() + GRACE_SECONDS

    def on_deadline(self) -> None:
        if self.child_wait is not None:
            self.open.discard(self.main_r)
        elif self.phase == "load" and self.starved(self.child, self.limits["load_seconds"]):
            self.deadline = time.monotonic() + STARVED_RECHECK_SECONDS
        elif self.phase == "load":
            self.kill(self.child)
            seconds = self.limits["load_seconds"]
            message = f"stopped after {seconds:g} s (time limit) while loading: an infinite loop at the top level?"
            self.load = ("timeout", message)
            self.enter_after()
        elif self.phase == "problem" and not self.current["verdict"]:
            if self.starved(self.current["pid"], self.limits["problem_seconds"]):
                self.deadline = time.monotonic() + STARVED_RECHECK_SECONDS
                return
            self.kill(self.current["pid"])
            seconds = self.limits["problem_seconds"]
            message = f"stopped after {seconds:g} s (time limit){WHERE}: an infinite loop?"
            self.current["verdict"] = ("timeout", message)
            self.deadline = time.monotonic() + GRACE_SECONDS
        else:
            if self.phase != "after":
                self.failure = self.failure or ("crashed", "the submission stopped responding to the sandbox")
            self.kill_all()
            self.deadline = time.monotonic() + GRACE_SECONDS

    def starved(self, group: int, limit: float) -> bool:
        """Whether a phase at its deadline got too little CPU to have used its time.

        Wall-clock limits are unfair when a neighbour (say a fork bomb in another
        slot) takes the cores: such a phase may run on, up to STARVED_FACTOR
        times its limit, until it has had half its limit in CPU time.
        """
        if time.monotonic() - self.started >= STARVED_FACTOR * limit:
            return False
        return group_cpu_seconds(group) < 0.5 * limit

    def protocol_broken(self, why: str) -> None:
        self.failure = self.failure or ("crashed", f"the submission broke the sandbox's result channel ({why})")
        self.kill_all()

    def kill_all(self) -> None:
        self.kill(*self.groups)

    def kill(self, *groups: int) -> None:
        """SIGKILL the process groups the child named.

        The group ids come from the child, which runs student code; with a slot
        uid, only that uid's processes are touched, so a lie hurts no one else.
        """
        if self.job.uid is None:
            for group in groups:
                kill_group(group)
        else:
            kill_processes(self.job.uid, set(groups))

    # -- end of job

    def send_problem(self, problem_id: str, status: str, message: str) -> None:
        # Where it happened is filled in only now: stdout and the frame naming the
        # running call come through different pipes, so the call may be known late.
        message = message.replace(WHERE, self.where())
        self.problem_states[problem_id] = (status, message)
        self.answer({"kind": "problem", "problem": problem_id, "status": status, "message": message})

    def finish(self) -> None:
        os.close(self.main_r)
        os.close(self.out_r)
        reap(self.job, self.groups)
        status, message = self.submission_status()
        if self.current is not None:
            ended = ("crashed", f"stopped{WHERE}: the submission's main process ended")
            verdict = self.current["verdict"] or ended
            self.send_problem(self.current["problem"]["id"], *verdict)
        for problem in self.job.problems:
            if problem["id"] not in self.problem_states:
                reason = "the submission stopped before this problem" if self.loaded else "the module did not load"
                self.send_problem(problem["id"], "not_run", f"not run: {reason}")
        # After a broken channel nothing the child said can be told apart from forgery.
        loaded = self.loaded if self.loaded and self.load is None and self.failure is None else {}
        frame = {
            "kind": "submission",
            "status": status,
            "message": message,
            "answers": loaded.get("answers", {}),
            "defined": loaded.get("defined", []),
            "stdout": bytes(self.stdout).decode("utf-8", "replace"),
        }
        self.answer(frame)

    def submission_status(self) -> tuple[str, str]:
        if self.load is not None:
            return self.load
        if self.loaded is None:
            return self.death_status("while loading")
        if self.failure:
            return self.failure
        if self.next_problem >= len(self.job.problems):
            n = len(self.job.problems)
            return "ok", f"loaded and ran {n} problem{'s' if n != 1 else ''}"
        return self.death_status("between problems" if self.current is None else "while a problem ran")

    def death_status(self, when: str) -> tuple[str, str]:
        if self.child_wait is None:
            return "crashed", f"stopped {when} for an unknown reason"
        code = os.waitstatus_to_exitcode(self.child_wait)
        if code == -signal.SIGXCPU:
            return "timeout", f"used more than {self.limits['cpu_seconds']} s of CPU time {when} (CPU limit)"
        if code < 0:
            return "crashed", f"crashed with {signal_text(-code)} {when}"
        return "exited", f"exited with code {code} {when} (os._exit?)"


LOAD_FAILURES = frozenset({"load_error", "memory", "exited", "crashed"})


def group_cpu_seconds(group: int) -> float:
    """CPU time used by a process group's live members and the children they reaped."""
    ticks = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group:
                ticks += sum(int(f) for f in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def reap(job: Job, groups: list[int]) -> None:
    """Kill every process the submission left behind, collect them, remove its files.

    The handler is a child subreaper, so processes orphaned inside the
    submission end up as its children and are collected here. For the same
    reason, once it has no child left, no process of the submission is left.
    """
    if not children_left():
        empty(job.scratch)
        return
    if job.uid is not None:
        kill_processes(job.uid, None)
    else:
        for group in groups:
            kill_group(group)
    give_up = time.monotonic() + 2.0
    while time.monotonic() < give_up:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if job.uid is None:
                kill_children()
            time.sleep(0.002)
    empty(job.scratch)


def children_left() -> bool:
    """Collect exited children; whether any child is still running."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    except ChildProcessError:
        return False
    return True


def kill_processes(uid: int, groups: set[int] | None) -> None:
    """SIGKILL every live process of `uid` (in `groups`, if given) until none is left.

    Scanning is not atomic, so a forking process can add one behind the scan;
    the next round gets it, and a killed process cannot fork any more.
    """
    give_up = time.monotonic() + 2.0
    while time.monotonic() < give_up:
        found = False
        for process in processes():
            if process.uid == uid and process.state != "Z" and (groups is None or process.group in groups):
                found = True
                try:
                    os.kill(process.pid, signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return


def kill_children() -> None:
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and parent_of(int(entry)) == me:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


class Process(NamedTuple):
    pid: int
    uid: int  # real uid; /proc/PID's owner is root for non-dumpable processes
    group: int
    state: str
    threads: int


def processes() -> Iterator[Process]:
    """Each process we can see in /proc (processes that vanish meanwhile are skipped)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/status") as status:
                lines = dict(line.split(":", 1) for line in status if ":" in line)
            uid, threads = int(lines["Uid"].split()[0]), int(lines["Threads"])
        except (OSError, KeyError, ValueError):
            continue
        yield Process(int(entry), uid, int(fields[2]), fields[0], threads)


def empty(folder: str) -> None:
    """Remove everything in the slot's scratch folder, so no file reaches the next job."""
    entries = os.listdir(folder)
    try:
        for name in entries:  # usually just the submission's folder, left empty
            os.rmdir(os.path.join(folder, name))
        return
    except OSError:
        pass
    # A submission may have taken the permissions off its own folders; give them
    # back (never through a symlink) so that nothing stays behind for the next.
    for root, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


# ---------------------------------------------------------------- child


def run_child(job: Job, main_w: int, out_w: int) -> None:
    """Never returns. Everything after exec(source) runs beside student code."""
    try:
        workdir = confine(job, main_w, out_w)
    except BaseException as exc:
        send({"kind": "load_failed", "status": "crashed", "message": f"sandbox setup failed: {exc!r}"})
        os._exit(1)
    me = os.getpid()
    module = types.ModuleType("submission")
    module.__file__ = os.path.join(workdir, "submission.py")
    module.__builtins__ = builtins
    sys.modules["submission"] = module
    try:
        exec(compile(job.source, "submission.py", "exec"), module.__dict__)
    except BaseException as exc:
        failure = load_failure(exc)
        flush_std()
        if os.getpid() == me:
            send(failure)
        os._exit(0)
    flush_std()
    if os.getpid() != me:
        os._exit(0)  # a copy forked at the top level of the module
    namespace = module.__dict__
    try:
        answers = namespace.get("ANSWERS")
        answers = plain(answers, [20000]) if type(answers) is dict else {}
    except BaseException:
        answers = {}
    defined = [k for k, v in list(namespace.items()) if type(k) is str and not k.startswith("__") and callable(v)]
    send({"kind": "loaded", "answers": answers, "defined": sorted(defined)[:1000]})
    for index, problem in enumerate(job.problems):
        run_problem(job, namespace, index, problem, me)
    os._exit(0)


def confine(job: Job, main_w: int, out_w: int) -> str:
    """Own session, limits, unprivileged uid, empty folder, and only three fds."""
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
    nproc = limits["max_processes"]
    if job.uid is None:
        # Without a uid of its own the submission shares RLIMIT_NPROC, which
        # counts threads, with everything else running as this user.
        uid = os.getuid()
        nproc += sum(p.threads for p in processes() if p.uid == uid)
    address_space = vm_size() + limits["memory_bytes"]
    for which, value in (
        (resource.RLIMIT_AS, address_space),
        (resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1)),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits["max_file_bytes"]),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ):
        soft, hard = value if isinstance(value, tuple) else (value, value)
        resource.setrlimit(which, (soft, hard))
    if job.uid is not None:
        os.setgroups([])
        os.setresgid(job.uid, job.uid, job.uid)
        os.setresuid(job.uid, job.uid, job.uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
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


def flush_std() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def send(header: dict, blob: bytes = b"") -> None:
    write_all(MAIN_FD, encode_frame(header, blob))


def load_failure(exc: BaseException) -> dict:
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else str(exc.code)[:100]
        return {"kind": "load_failed", "status": "exited", "message": f"called sys.exit({code}) while loading"}
    if is_out_of_memory(exc):
        message = f"ran out of memory while loading: {exception_text(exc, 300)}"
        return {"kind": "load_failed", "status": "memory", "message": message}
    return {"kind": "load_failed", "status": "load_error", "message": exception_text(exc)}


def plain(value: object, budget: list[int], depth: int = 0) -> object:
    """ANSWERS as JSON data; anything exotic becomes its (capped) repr."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 20:
        return "\u2026"
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        if kind is int and value.bit_length() > 64:
            return str(value)[:100]
        return value[:10000] if kind is str else value
    if isinstance(value, np.generic) and value.dtype.kind in "biufcU":
        return plain(value.item(), budget, depth)
    if kind is np.ndarray and value.dtype.kind in "biufU" and value.size <= 10000:
        return plain(value.tolist(), budget, depth)
    if kind in (list, tuple):
        return [plain(v, budget, depth + 1) for v in value[:1000]]
    if kind is dict:
        return {
            (k if type(k) is str else safe_repr(k)): plain(v, budget, depth + 1) for k, v in list(value.items())[:1000]
        }
    return safe_repr(value)


def safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except BaseException:
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 200 else text[:199] + "\u2026"


# ---------------------------------------------------------------- grandchild


def run_problem(job: Job, namespace: dict, index: int, problem: dict, me: int) -> None:
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
    for _ in range(50):
        try:
            pid = os.fork()
            break
        except BlockingIOError:
            # Processes of a killed fork bomb still count against RLIMIT_NPROC
            # until they are reaped, which takes a moment.
            time.sleep(0.02)
    else:
        send({"kind": "fork_failed", "index": index})
        return
    if pid == 0:
        # Only the child talks to the handler; the problem's own pipe is all a
        # grandchild can spoil.
        os.close(read_fd)
        os.close(MAIN_FD)
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            os.setpgid(0, 0)
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
    while True:
        ready, _, _ = select.select([read_fd, exited], [], [])
        if exited in ready and read_fd not in ready:
            break
        if read_fd in ready:
            data = os.read(read_fd, 1 << 16)
            if not data:
                break
            for header, blob in frames.feed(data):
                send(header, blob)
            if frames.error:
                kill_group(pid)
                send({"kind": "garbled"})
                break
    os.close(exited)


def run_calls(job: Job, namespace: dict, problem: dict, write_fd: int) -> None:
    me = os.getpid()
    batched = problem.get("batched") is True
    pending: list[bytes] = []

    def emit(header: dict, blob: bytes = b"") -> None:
        if os.getpid() != me:
            os._exit(0)  # a copy the student forked: only the original reports
        pending.append(encode_frame(header, blob))
        # One write per frame wakes three processes per frame; batching them is what makes
        # a class fast. Endings (done, exit, memory) always flush.
        if not batched or header.get("kind") in ("done", "sysexit", "memory"):
            write_all(write_fd, b"".join(pending))
            pending.clear()

    # Every call starts with the float error handling and default dtype the module left after
    # loading: a function that changes them (np.seterr(all="raise")) must not change how the
    # calls after it score, whether they share its process (a batch) or not.
    float_errors = np.geterr()
    default_dtype = torch.get_default_dtype() if torch is not None else None
    for call in problem["calls"]:
        if not batched:  # it only names the call a crash interrupted; batched runs are rerun for that
            emit({"kind": "begin", "call_id": call["id"]})
        function = namespace.get(call["fn"])
        if not callable(function):
            emit({"kind": "call", "call_id": call["id"], "ok": False, "error": f"{call['fn']} is not defined"})
            continue
        try:
            np.seterr(**float_errors)
            if torch is not None:
                torch.set_default_dtype(default_dtype)
            args = [argument(a, job) for a in call["args"]]
            kwargs = {k: argument(v, job) for k, v in call["kwargs"].items()}
            value = function(*args, **kwargs)
            outputs = to_arrays(value)
        except SystemExit as exc:
            flush_std()
            emit({"kind": "sysexit", "code": "" if exc.code is None else str(exc.code)})
            os._exit(0)
        except BaseException as exc:
            flush_std()
            emit({"kind": "call", "call_id": call["id"], "ok": False, "error": exception_text(exc)})
            if is_out_of_memory(exc):
                emit({"kind": "memory"})
                os._exit(0)
            continue
        flush_std()
        if isinstance(outputs, str):
            emit({"kind": "call", "call_id": call["id"], "ok": False, "error": outputs})
            continue
        # raw bytes plus (dtype, shape): the grader decodes them without a zip or a header parser
        layout = [[array.dtype.str, list(array.shape)] for array in outputs]
        emit({"kind": "call", "call_id": call["id"], "ok": True, "arrays": layout},
             b"".join(array.tobytes() for array in outputs))
    emit({"kind": "done"})


def argument(spec: dict, job: Job) -> object:
    if "a" not in spec:
        return spec["v"]
    array = job.arrays[spec["a"]].copy()  # each call gets inputs no earlier call has touched
    return torch.from_numpy(array) if torch is not None else array


def to_arrays(value: object) -> list | str:
    """Returned value -> list of plain numeric arrays, or an error for the student."""
    several = isinstance(value, (tuple, list))
    items = list(value) if several else [value]
    if several and not 1 <= len(items) <= MAX_OUTPUTS_PER_CALL:
        return f"returned a {type(value).__name__} of {len(items)} items; expected 1 to {MAX_OUTPUTS_PER_CALL} arrays"
    arrays, total = [], 0
    for position, item in enumerate(items):
        what = f"item {position} of the returned {type(value).__name__}" if several else "returned value"
        if torch is not None and isinstance(item, torch.Tensor):
            item = item.detach().cpu().resolve_conj().resolve_neg()
            if item.dtype == torch.bfloat16:
                item = item.float()
            item = item.numpy()
        if item is None:
            return "returned None, not an array (missing return?)" if not several else f"{what} is None, not an array"
        if isinstance(item, (str, bytes, dict, set, frozenset)) or callable(item):
            prefix = "returned" if not several else f"{what} is"
            return f"{prefix} {type(item).__name__}, not an array"
        try:
            array = np.asarray(item)
        except Exception as exc:
            return f"{what} could not be converted to an array: {exception_text(exc, 300)}"
        if type(array) is not np.ndarray or array.dtype.kind not in NUMERIC_KINDS:
            prefix = "returned" if not several else f"{what} is"
            return f"{prefix} {type(item).__name__} (dtype {array.dtype}), not a numeric array"
        total += array.nbytes
        if total > MAX_CALL_OUTPUT_BYTES:
            return f"returned {total:,}+ bytes of arrays; the limit is {fmt_bytes(MAX_CALL_OUTPUT_BYTES)}"
        arrays.append(np.array(array, copy=True, order="C"))  # detached from student objects
    return arrays


if __name__ == "__main__":
    main()
