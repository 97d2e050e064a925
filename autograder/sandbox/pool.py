"""A pool of warm sandbox workers that run student submissions.

Takes a submission's source and its problems' calls; gives a `SubmissionRun`.
Each slot is one long-lived `worker.py` process, inside bubblewrap when it
works here (read-only system and Python installation, nothing of the project,
no network, private /proc, /tmp and pid namespace), otherwise with resource
limits only. A worker that dies is restarted; the submission it was running
comes back as "crashed" rather than as an exception. A worker holds the
problem set it was last sent (the calls, their inputs, the limits: the class's,
the same for each of its submissions), so a job carries the program alone.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import itertools
import json
import logging
import math
import os
import queue
import select
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Generic, Literal, Optional, TypeVar, Union

import qkv_runtime

from autograder.isolation_modes import IsolationMode, IsolationRequest
from autograder.sandbox import isolation as isolation_module
from autograder.sandbox import policy
from autograder.sandbox.fair import FairQueue
from autograder.sandbox.isolation import SandboxError
from autograder.sandbox.protocol import (
    Limits,
    ProblemCalls,
    ProblemRun,
    Program,
    ProtocolError,
    RunCollector,
    YIELD_FRAME,
    SubmissionRun,
    encode_job,
    encode_problem_set,
)
from autograder.sandbox.worker import supervisor
from autograder.sandbox.worker.proctools import empty_folder
from autograder.sandbox.worker.zygote import EXIT_HANDLER_LOST
from qkv_runtime.limits import LONG_SECONDS, job_seconds
from qkv_runtime.wire import MAX_RESULT_BLOB, FrameReader

K = TypeVar("K")
T = TypeVar("T")
# one job of `SandboxPool.map`: (key, program, problems) or (key, program, problems, spent), `spent` being the seconds
# earlier jobs of the same attempt took
MapJob = Union[tuple[K, Union[Program, str], Sequence[ProblemCalls]],
               tuple[K, Union[Program, str], Sequence[ProblemCalls], float]]
logger = logging.getLogger(__name__)

WORKER_DIR = Path(__file__).with_name("worker")
RUNTIME_DIR = Path(qkv_runtime.__file__).parent
# `python -c LAUNCH CONFIG`: the worker package and the runtime are found first on sys.path as
# `qkv_worker` and `qkv_runtime`, in the sandbox and without one alike.
LAUNCH = ("import json,sys; c=json.loads(sys.argv[1]); sys.path[:]=c['lib']+[p for p in sys.path if p]+c['site']; "
          "import qkv_worker.zygote as z; z.main(c)")
READY_SECONDS = 120.0
# The worker may let a CPU-starved phase run to this many times its limit, plus its own
# bookkeeping per problem (worker/supervisor.py: STARVED_FACTOR, GRACE_SECONDS).
PROBLEM_SLACK_SECONDS = 7.0
JOB_SLACK_SECONDS = 30.0
UID_BASE = 1_000_000
# how soon a stream of jobs that had nothing yet is asked again while others run (SandboxPool.map)
IDLE_SECONDS = 0.2
_slot_numbers = itertools.count()


def _project_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").exists() else None


def _policy(scratch_bytes: int) -> policy.SandboxPolicy:
    layout = policy.host_layout(WORKER_DIR, RUNTIME_DIR, _project_root())
    return policy.sandbox_policy(layout, root=os.geteuid() == 0, scratch_bytes=scratch_bytes)


def _bwrap_command(scratch_bytes: int) -> list[str]:
    bwrap = policy.find_bwrap()
    if bwrap is None:
        raise FileNotFoundError("bwrap is not installed")
    return policy.bwrap_argv(bwrap, _policy(scratch_bytes))


def _bwrap_problem() -> str | None:
    """Why bwrap cannot be used here, or None when a sandboxed Python starts fine."""
    try:
        command = _bwrap_command(64 << 20) + [policy.python_executable(), "-I", "-S", "-c", "pass"]
    except (OSError, RuntimeError) as exc:
        return str(exc)
    return isolation_module.probe_bwrap(tuple(command))


def take(stream: Iterator[Optional[T]], most: int) -> tuple[list[T], bool, bool]:
    """Up to `most` items of a stream of work that arrives while earlier work runs (the service's claims): the
    items, whether it had nothing yet (it gave None: ask again once some work is done, or IDLE_SECONDS later),
    and whether it has ended (nothing more will come; an ended stream stays ended)."""
    items: list[T] = []
    while len(items) < most:
        try:
            item = next(stream)
        except StopIteration:
            return items, False, True
        if item is None:
            return items, True, False
        items.append(item)
    return items, False, False


CGROUP_ROOT = Path("/sys/fs/cgroup")


def _quota(folder: Path, version: int) -> float | None:
    """The CPUs one cgroup folder allows (cgroup v2's cpu.max "QUOTA PERIOD", v1's CFS quota), None if no limit."""
    try:
        if version == 2:
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        quota_us = int((folder / "cpu.cfs_quota_us").read_text())
        return None if quota_us < 0 else quota_us / int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError, ZeroDivisionError):
        return None


def cgroup_cpus(membership: str, root: Path = CGROUP_ROOT) -> float | None:
    """The CPUs this process's control groups allow it, by `membership` (/proc/self/cgroup's text): the lowest
    quota of its cgroup and every one above it, in cgroup v2 or v1's cpu controller; None if none sets one."""
    found = []
    for line in membership.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            bases = [(root, 2), (root / "unified", 2)]
        elif "cpu" in controllers.split(","):
            bases = [(root / "cpu", 1), (root / controllers, 1)]
        else:
            continue
        for base, version in bases:
            folder = base / path.strip("/")
            while True:
                found.append(_quota(folder, version))
                if folder == base or base not in folder.parents:
                    break
                folder = folder.parent
    limits = [q for q in found if q is not None and q > 0]
    return min(limits) if limits else None


def default_slots() -> int:
    """Workers when the caller names no number: one per CPU this process may run on, and one more. The grader's
    own process takes a share of the CPUs too (reading results, scoring, writing pages), and a worker waits on it
    between jobs; with a worker per CPU those waits leave CPUs idle (2 cores: 89% busy with 2 workers, 98% with 3).
    The CPUs are those of its affinity, fewer when its control group has a CPU quota (a container's --cpus)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        quota = cgroup_cpus(Path("/proc/self/cgroup").read_text())
    except OSError:
        quota = None
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return cpus + 1


def isolation_available() -> IsolationMode:
    """bwrap when bubblewrap sandboxes work on this machine, else rlimits-only."""
    return IsolationMode.BWRAP if _bwrap_problem() is None else IsolationMode.RLIMITS_ONLY


_Popen = subprocess.Popen[bytes]


class _Spawner:
    """Starts processes from one long-lived thread.

    bwrap --die-with-parent (and the worker's parent-death signal) fire when
    the *thread* that forked them ends, so workers must not be started from
    short-lived threads such as those of `map`.
    """

    def __init__(self) -> None:
        self._requests: queue.Queue[Optional[tuple[Callable[[], _Popen], concurrent.futures.Future[_Popen]]]] = \
            queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="qkv-sandbox-spawner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            make, future = request
            try:
                future.set_result(make())
            except BaseException as exc:
                future.set_exception(exc)

    def call(self, make: Callable[[], _Popen]) -> _Popen:
        future: concurrent.futures.Future[_Popen] = concurrent.futures.Future()
        self._requests.put((make, future))
        return future.result()

    def stop(self) -> None:
        self._requests.put(None)
        self._thread.join()


class _NotDelivered(Exception):
    """The worker was gone before it took the job: safe to retry elsewhere."""


class _WorkerLost(Exception):
    """The worker died or misbehaved mid-job; carries what to report."""

    def __init__(self, run: SubmissionRun) -> None:
        super().__init__(run.message)
        self.run = run


@dataclass(frozen=True)
class _Process:
    """A started worker's process and its pipes: the jobs go in on `stdin`, the frames come back through `reader`."""

    popen: _Popen
    stdin: IO[bytes]
    stdout: IO[bytes]
    reader: FrameReader

    @classmethod
    def of(cls, popen: _Popen) -> _Process:
        if popen.stdin is None or popen.stdout is None:
            raise SandboxError("a sandbox worker started without a pipe for its input or its output")
        return cls(popen, popen.stdin, popen.stdout, FrameReader(popen.stdout.fileno(), MAX_RESULT_BLOB))


class _Worker:
    def __init__(self, pool: SandboxPool, slot: int) -> None:
        self.pool = pool
        self.slot = slot
        self.uid: int | None = None
        self.process: _Process | None = None  # the last one started, kept once ended for its exit code
        self.sending = 0.0  # CPU seconds this job took to write
        self.held: bytes | None = None  # the problem set's frame this worker was last sent, which it holds

    def alive(self) -> bool:
        return self.process is not None and self.process.popen.poll() is None

    def _started(self) -> _Process:
        if self.process is None:
            raise _NotDelivered("the sandbox worker was never started")  # `run` starts a worker that is not alive
        return self.process

    def start(self) -> None:
        pool = self.pool
        spawner = pool._open_spawner()  # before anything is made in the pool's scratch folder, gone once closed
        self.held = None
        # A uid of its own for each start, not each slot: a worker retires when it could not clear what a job
        # left, and without bwrap's namespace a survivor would otherwise share the next worker's uid.
        number = next(_slot_numbers) % 256
        self.uid = UID_BASE + (os.getpid() % 10_000_000) * 256 + number if os.geteuid() == 0 else None
        if pool.isolation == IsolationMode.BWRAP:
            scratch, lib = policy.SCRATCH_INSIDE, [policy.WORKER_LIB]
        else:
            # a fresh folder per start: one a submission left unremovable retires with its worker
            scratch = tempfile.mkdtemp(prefix=f"slot-{self.slot}-", dir=pool._scratch_base)
            if self.uid is not None:
                os.chown(scratch, self.uid, self.uid)
            lib = [pool._lib_dir]
        config = {"track": pool.track, "site": list(policy.site_dirs()), "scratch": scratch, "uid": self.uid,
                  "lib": lib}
        command = [policy.python_executable(), "-I", "-S", "-B", "-c", LAUNCH, json.dumps(config)]
        if pool.isolation == IsolationMode.BWRAP:
            command = _bwrap_command(pool._scratch_bytes) + command
        self.process = process = _Process.of(spawner.call(
            lambda: subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_policy(pool._scratch_bytes).environment,
                cwd="/",
                start_new_session=True,
            )
        ))
        os.set_blocking(process.stdin.fileno(), False)
        try:
            header, _ = process.reader.read(time.monotonic() + READY_SECONDS)
        except (EOFError, TimeoutError, ProtocolError) as exc:
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} did not start ({type(exc).__name__})") from None
        if header.get("kind") != "ready":
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} sent {header.get('kind')!r} instead of ready")
        if header.get("seccomp") is not True:
            logger.warning("no seccomp filter on this architecture: student code is not kept from signalling "
                           "or tracing the sandbox's own processes")

    def kill(self) -> None:
        if self.process is None:
            return
        popen = self.process.popen
        if popen.poll() is None:
            popen.kill()
        popen.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def stop(self, timeout: float) -> None:
        if self.process is None:
            return
        try:
            self.process.stdin.close()  # the worker exits at end of input
            self.process.popen.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def run(self, problem_set: bytes, job: bytes, problems: Sequence[ProblemCalls], seconds: float,
            control: Optional[JobControl] = None) -> SubmissionRun:
        started, self.sending, wall = time.thread_time(), 0.0, time.monotonic()
        try:
            return dataclasses.replace(self._run(problem_set, job, problems, seconds, control or JobControl()),
                                       seconds=time.monotonic() - wall)
        except _WorkerLost as lost:
            lost.run = dataclasses.replace(lost.run, seconds=time.monotonic() - wall)
            raise
        finally:
            self.pool.cpu.add(send=self.sending, receive=time.thread_time() - started - self.sending)

    def _run(self, problem_set: bytes, job: bytes, problems: Sequence[ProblemCalls], seconds: float,
             control: JobControl) -> SubmissionRun:
        process = self._started()
        limits = self.pool.limits
        phases = (supervisor.STARVED_FACTOR * limits.load_seconds
                  + len(problems) * (supervisor.STARVED_FACTOR * limits.problem_seconds + PROBLEM_SLACK_SECONDS))
        # the supervisor stops the job when its budget (`seconds`) runs out, whatever its phases allow
        deadline = time.monotonic() + min(phases, seconds) + JOB_SLACK_SECONDS
        collector = RunCollector(problems, control.ran_long)
        sending = time.thread_time()
        holds = self.held is problem_set or self.held == problem_set
        self._send(process, job if holds else problem_set + job, len(job), deadline, collector)
        self.held = problem_set
        self.sending = time.thread_time() - sending
        with control.running_on(process):
            return self._collect(process, collector, deadline)

    def _collect(self, process: _Process, collector: RunCollector, deadline: float) -> SubmissionRun:
        while True:
            try:
                header, blob = process.reader.read(deadline)
                done = collector.add(header, blob)
            except (EOFError, TimeoutError, ProtocolError, OSError) as exc:
                if isinstance(exc, EOFError):
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.popen.wait(2.0)  # its exit code tells why it ended
                message = _lost_message(exc, process.popen)
                self.kill()
                raise _WorkerLost(collector.broken(message)) from None
            if done is not None:
                if collector.retire:  # it could not clean up after this job: the next one gets a fresh worker
                    self.kill()
                return done

    def _send(self, process: _Process, data: bytes, job_bytes: int, deadline: float, collector: RunCollector) -> None:
        """Write `data`, which ends with the job's `job_bytes`; a worker that takes none of the job is _NotDelivered."""
        fd = process.stdin.fileno()
        view = memoryview(data)
        while view:
            try:
                _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise TimeoutError
                view = view[os.write(fd, view) :]
            except (OSError, TimeoutError) as exc:
                self.kill()
                if len(view) >= job_bytes:
                    raise _NotDelivered from exc
                raise _WorkerLost(collector.broken("the sandbox worker stopped taking input")) from None


@dataclass
class _MapJob(Generic[K]):
    """One attempt's job in `map`: what the caller gave, and what its runs that yielded did."""

    key: K
    program: Union[Program, str]
    problems: Sequence[ProblemCalls]
    spent: float  # seconds earlier jobs of the attempt took (the caller's)
    yielded_seconds: float = 0.0  # wall seconds of its runs that yielded
    kept: dict[str, ProblemRun] = field(default_factory=dict)  # the problems those runs finished

    @staticmethod
    def of(job: MapJob[K]) -> _MapJob[K]:
        if len(job) == 4:
            key, program, problems, spent = job
            return _MapJob(key, program, problems, float(spent))
        key, program, problems = job
        return _MapJob(key, program, problems, 0.0)

    def left(self) -> Sequence[ProblemCalls]:
        """The problems to run: all of them (the caller's list, whose encoding is cached), or those not finished."""
        return [p for p in self.problems if p.problem_id not in self.kept] if self.kept else self.problems

    def yielded(self, run: SubmissionRun) -> None:
        self.yielded_seconds += run.seconds
        self.kept.update((pid, r) for pid, r in run.problems.items() if r.status != "not_run")

    def finished(self, run: SubmissionRun) -> SubmissionRun:
        """The attempt's run: the last one's, with the problems runs before it finished, and their time."""
        if not self.yielded_seconds:
            return run
        problems = {p.problem_id: self.kept.get(p.problem_id) or run.problems[p.problem_id] for p in self.problems}
        return dataclasses.replace(run, problems=problems, seconds=self.yielded_seconds + run.seconds)


class JobControl:
    """The pool's hold on one job of `map` while a worker runs it: told when the job has run long, and the way to
    ask it to yield its worker (a frame on the worker's input, written only between the job's own frame and its
    end, so it never cuts into another; one the worker reads after the job ended is ignored)."""

    def __init__(self, on_long: Callable[[], None] = lambda: None) -> None:
        self._on_long = on_long
        self._lock = threading.Lock()
        self._process: Optional[_Process] = None
        self._asked = False

    def ran_long(self) -> None:
        self._on_long()

    @contextlib.contextmanager
    def running_on(self, process: _Process) -> Iterator[None]:
        with self._lock:
            self._process = process
            asked = self._asked
        if asked:
            self._write(process)
        try:
            yield
        finally:
            with self._lock:
                self._process = None

    def ask_to_yield(self) -> None:
        with self._lock:
            self._asked = True
            process = self._process
            if process is not None:
                self._write(process)

    @staticmethod
    def _write(process: _Process) -> None:
        try:
            os.write(process.stdin.fileno(), YIELD_FRAME)  # a pipe takes a frame this small whole
        except (OSError, ValueError):
            pass  # the worker is gone: the job comes back as lost


def _lost_message(exc: BaseException, process: _Popen) -> str:
    if isinstance(exc, TimeoutError):
        return "the sandbox did not answer in time and was restarted; this submission was not fully run"
    if isinstance(exc, ProtocolError):
        return f"the sandbox sent malformed data ({exc}) and was restarted"
    code = process.poll()
    if code == EXIT_HANDLER_LOST:
        return ("the submission stopped or killed the sandbox's supervisor; nothing it reported is kept, "
                "and the sandbox was restarted")
    how = f" (signal {-code})" if code is not None and code < 0 else f" (exit {code})" if code else ""
    return f"the sandbox worker died{how} while running this submission; it was restarted"


@dataclass
class PoolCpu:
    """CPU seconds the pool's threads spent on the wire, over every job so far (`qkv grade --timings`): encoding and
    writing jobs (`send`), reading and checking what came back (`receive`)."""

    send: float = 0.0
    receive: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, send: float = 0.0, receive: float = 0.0) -> None:
        with self._lock:
            self.send += send
            self.receive += receive


class SandboxPool:
    """Warm workers that run submissions in isolation; thread-safe, use as a context manager."""

    def __init__(
        self,
        track: Literal["numpy", "torch"],
        jobs: int | None = None,
        limits: Limits = Limits(),
        isolation: str = IsolationRequest.REQUIRE,
        protect: Sequence[Path] = (),
    ) -> None:
        """`isolation`: what to insist on (sandbox/isolation.py: require, allow-rlimits, bwrap, rlimits);
        `protect`: paths student code must not read when there are no namespaces (the bundle, the
        submissions, the output folder), besides the engine's own."""
        if track not in ("numpy", "torch"):
            raise ValueError(f"unknown track {track!r}")
        self.track = track
        self.jobs = max(1, jobs or default_slots())
        self.most = 2 * self.jobs  # workers `map` may start: `jobs`, and as many for fresh jobs beside long ones
        self.limits = limits
        chosen = isolation_module.choose(isolation, _bwrap_problem, [Path(p) for p in protect])
        self.isolation = chosen.mode
        self.warning = chosen.warning
        if chosen.warning:
            warnings.warn(chosen.warning, RuntimeWarning, stacklevel=2)
            logger.warning(chosen.warning)
        self._scratch_bytes = max(64 << 20, 4 * limits.max_file_bytes)
        self._scratch_base = ""
        self._lib_dir = ""
        self._lock = threading.RLock()  # start_soon's thread holds it across start(), which takes it too
        self._soon = False  # start_soon was asked, and close has not been since
        self._soon_failed: Exception | None = None  # what start_soon's start met, for the next start to raise
        self._workers: list[_Worker] = []
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._spawner: _Spawner | None = None
        self.cpu = PoolCpu()

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the workers (imports numpy/torch once each); `run` calls this if needed."""
        with self._lock:
            if self._spawner is not None:
                return
            failed, self._soon_failed = self._soon_failed, None
            if failed is not None:
                raise failed  # once, and not paid for twice: the start after it tries afresh
            self._spawner = _Spawner()
            if self.isolation != IsolationMode.BWRAP:
                self._scratch_base = tempfile.mkdtemp(prefix="qkv-sandbox-")
                os.chmod(self._scratch_base, 0o711)
                # the worker imports its package and the runtime by these names, as inside bwrap
                self._lib_dir = os.path.join(self._scratch_base, "lib")
                os.mkdir(self._lib_dir, 0o755)
                os.symlink(WORKER_DIR, os.path.join(self._lib_dir, "qkv_worker"))
                os.symlink(RUNTIME_DIR, os.path.join(self._lib_dir, "qkv_runtime"))
            self._workers = [_Worker(self, slot) for slot in range(self.jobs)]
            try:
                with concurrent.futures.ThreadPoolExecutor(self.jobs) as starter:
                    list(starter.map(_Worker.start, self._workers))
            except BaseException:
                self._stop_workers()  # and forget them, so that the next start begins afresh
                raise
            for worker in self._workers:
                self._idle.put(worker)

    def start_soon(self) -> None:
        """Begin `start` on a thread of its own and return at once, so that the workers import numpy while the
        caller does other work (reading the class); the first job's own `start` waits for them, and raises what
        this start met. `close` waits for it too."""
        with self._lock:
            self._soon = True
        threading.Thread(target=self._start_if_wanted, name="qkv-sandbox-start", daemon=True).start()

    def _start_if_wanted(self) -> None:
        with self._lock:
            if not self._soon:
                return  # closed before this thread got the lock
            try:
                self.start()
            except Exception as err:  # noqa: BLE001 - raised by the next start, where the caller's handling is
                self._soon_failed = err

    def run(self, program: Union[Program, str], problems: Sequence[ProblemCalls], spent: float = 0.0,
            spare: bool = False, control: Optional[JobControl] = None) -> SubmissionRun:
        """Load `program` (or a module's source) in a fresh process and run every problem's calls; blocks.
        `spent`: wall seconds earlier jobs of the same attempt took (a fast path that failed, or a run that
        yielded), which its budget no longer holds (qkv_runtime.limits.job_seconds); the run's `seconds` is what
        this one took. `spare`: with no worker idle, start one more, up to `most` (`map` decides when).
        `control`: `map`'s hold on the job (told when it runs long, the way to ask it to yield)."""
        if isinstance(program, str):
            program = Program(source=program)
        encoding = time.thread_time()
        problem_set = encode_problem_set(problems, self.limits)  # before the copy: it is cached per call list
        seconds = job_seconds(self.limits, spent)
        job = encode_job(program, seconds, long=spent >= LONG_SECONDS)
        self.cpu.add(send=time.thread_time() - encoding)
        problems = tuple(problems)
        self.start()
        worker = self._take_worker(spare)
        try:
            for _ in range(3):
                if not worker.alive():
                    worker.kill()
                    worker.start()
                try:
                    return worker.run(problem_set, job, problems, seconds, control)
                except _NotDelivered:
                    continue
                except _WorkerLost as lost:
                    logger.warning("sandbox worker %d lost: %s", worker.slot, lost.run.message)
                    return lost.run
            raise SandboxError("the sandbox worker keeps dying before it takes a job")
        finally:
            self._idle.put(worker)

    def _take_worker(self, spare: bool) -> _Worker:
        if spare:
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                with self._lock:
                    extra = _Worker(self, len(self._workers)) if len(self._workers) < self.most else None
                    if extra is not None:
                        self._workers.append(extra)
                if extra is not None:
                    return extra  # not started: `run` starts a worker that is not alive
        return self._idle.get()

    def map(self, jobs: Iterable[Optional[MapJob[K]]]) -> Iterator[tuple[K, SubmissionRun]]:
        """Run many submissions; yields (key, run) as each completes. Each job is a MapJob: (key, program, problems)
        or (key, program, problems, spent), `spent` being the seconds earlier jobs of the same attempt took (see
        `run`). `jobs` is read as workers come free (until `jobs` fresh ones wait), so it may be a stream of work
        that arrives meanwhile (see `take`). Fair to fresh work (fair.py): a job that ran long holds no slot, is
        asked to yield its worker when fresh work finds none, and then waits behind fresh work to run the problems
        it had not finished, on what is left of its budget; one that comes long (a rerun of an attempt whose
        first run ran long: `spent`) waits behind fresh ones too."""
        self.start()
        fair: FairQueue[_MapJob[K]] = FairQueue(self.jobs, self.most)
        running: dict[concurrent.futures.Future[SubmissionRun], tuple[int, _MapJob[K], JobControl]] = {}
        ran_long: queue.SimpleQueue[int] = queue.SimpleQueue()  # numbers of jobs their workers said ran long
        source = iter(jobs)
        batch: list[MapJob[K]]
        ended = False
        with concurrent.futures.ThreadPoolExecutor(self.most, thread_name_prefix="qkv-sandbox") as executor:
            while True:
                idle = False
                while not ended and not idle and fair.wants_more():
                    batch, idle, ended = take(source, 1)
                    for taken in batch:
                        fresh = _MapJob.of(taken)
                        fair.add(fresh, long=fresh.spent >= LONG_SECONDS)
                for number, job in fair.start():
                    control = JobControl(functools.partial(ran_long.put, number))
                    future = executor.submit(self.run, job.program, job.left(), job.spent + job.yielded_seconds,
                                             True, control)
                    running[future] = (number, job, control)
                if not ended and not idle and fair.wants_more():
                    continue  # what started made room to take more
                if not running:
                    if ended and not fair.waiting:
                        return
                    time.sleep(IDLE_SECONDS)
                    continue
                while not ran_long.empty():
                    fair.ran_long(ran_long.get())
                controls = {number: control for number, _, control in running.values()}
                for number in fair.to_yield():
                    controls[number].ask_to_yield()
                # woken when a job ends; while fresh work waits, soon again (a running job may say it ran long,
                # and so yield), and to ask a stream that had nothing again
                done, _ = concurrent.futures.wait(running, timeout=IDLE_SECONDS if idle or fair.fresh else None,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    number, job, _ = running.pop(future)
                    fair.ended(number)
                    run = future.result()
                    if run.yielded:
                        job.yielded(run)
                        fair.add(job, long=True)
                    else:
                        yield job.key, job.finished(run)

    def close(self) -> None:
        """Stop the workers and remove their files; the pool can be started again."""
        with self._lock:
            self._soon, self._soon_failed = False, None
            if self._spawner is not None:
                self._stop_workers()

    def _open_spawner(self) -> _Spawner:
        """The spawner of workers; a SandboxError once the pool is closed (a job that took its worker before
        another thread closed the pool, and must start it again)."""
        spawner = self._spawner
        if spawner is None:
            raise SandboxError("the sandbox pool is closed")
        return spawner

    def _stop_workers(self) -> None:
        for worker in self._workers:
            worker.stop(timeout=5.0)
        if self._spawner is not None:
            self._spawner.stop()
        self._spawner = None
        self._workers = []
        self._idle = queue.Queue()
        if self._scratch_base:
            if empty_folder(self._scratch_base):
                os.rmdir(self._scratch_base)
            else:
                logger.warning("could not remove %s (a submission left files there)", self._scratch_base)
            self._scratch_base = ""
