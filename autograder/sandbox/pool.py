"""A pool of warm sandbox workers that run student submissions.

Takes a submission's source and its problems' calls; gives a `SubmissionRun`.
Each slot is one long-lived `worker.py` process, inside bubblewrap when it
works here (read-only system and Python installation, nothing of the project,
no network, private /proc, /tmp and pid namespace), otherwise with resource
limits only. A worker that dies is restarted; the submission it was running
comes back as "crashed" rather than as an exception.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import json
import logging
import os
import queue
import select
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from autograder.sandbox.protocol import (
    MAX_CALL_OUTPUT_BYTES,
    MAX_ERROR_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_STDOUT_CHARS,
    PROBLEM_STATUSES,
    SUBMISSION_STATUSES,
    CallResult,
    FrameReader,
    Limits,
    ProblemCalls,
    ProblemRun,
    ProtocolError,
    SubmissionRun,
    clean_answers,
    clean_defined,
    clean_text,
    decode_outputs,
    encode_job,
)

K = TypeVar("K")
logger = logging.getLogger(__name__)

WORKER_SOURCE = Path(__file__).with_name("worker.py")
WORKER_INSIDE = "/qkv/worker.py"
SCRATCH_INSIDE = "/scratch"
# Importable from site-packages after a non-editable install; never visible inside.
HIDDEN_PACKAGES = ("autograder", "solutions")
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
)
PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
READY_SECONDS = 120.0
# The worker may let a CPU-starved phase run to this many times its limit
# (worker.STARVED_FACTOR), plus its own bookkeeping per problem (GRACE_SECONDS).
STARVED_FACTOR = 3.0
PROBLEM_SLACK_SECONDS = 7.0
JOB_SLACK_SECONDS = 30.0
UID_BASE = 1_000_000
_slot_numbers = itertools.count()


def _project_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").exists() else None


def _python() -> str:
    """This interpreter with any `..` collapsed: inside bwrap the folders such a path goes through may not exist."""
    return os.path.abspath(sys.executable)


def _site_dirs() -> list[str]:
    return [p for p in dict.fromkeys(site.getsitepackages()) if os.path.isdir(p)]


def _python_roots() -> list[str]:
    """Folders the interpreter needs, outermost only, minus what /usr already covers."""
    executable = Path(os.path.realpath(sys.executable))
    candidates = [sys.base_prefix, sys.prefix, str(executable.parent.parent), *_site_dirs()]
    roots: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates}, key=len):
        if path == "/":
            raise RuntimeError("the Python installation is at /; cannot bind it read-only alone")
        if not any(path == r or path.startswith(r.rstrip("/") + "/") for r in ["/usr", *roots]):
            roots.append(path)
    return roots


def _environment() -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LC_ALL": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    return env


def _bwrap_args(scratch_bytes: int) -> list[str]:
    """bwrap and its options, up to (not including) the command."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("bwrap is not installed")
    args = [bwrap, "--die-with-parent", "--new-session"]
    args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        # No user namespace: the worker keeps just enough to drop each
        # submission to its slot's uid, to kill it, and to delete its files.
        args += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_OVERRIDE"):
            args += ["--cap-add", cap]
    else:
        args += ["--unshare-user"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    for name in ETC_FILES:
        args += ["--ro-bind-try", name, name]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--tmpfs", "/tmp"]
    roots = _python_roots()
    made = {"/", "/usr", "/tmp"}
    for path in roots:
        # bwrap would copy the host's modes onto the folders it creates on the
        # way (e.g. /root is 0700), locking the slot's uid out of the stdlib.
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", path, path]
    # Every tmpfs but the scratch one ends read-only: without a uid of its own
    # (bwrap in a user namespace) the submission would own them and could leave
    # files there for the next submission.
    read_only = ["/", "/tmp", "/dev"]
    project = _project_root()
    if project is not None and any(str(project).startswith(r.rstrip("/") + "/") for r in ["/usr", *roots]):
        args += ["--tmpfs", str(project)]
        read_only.append(str(project))
    for folder in _site_dirs():
        for name in HIDDEN_PACKAGES:
            if os.path.isdir(os.path.join(folder, name)):
                args += ["--tmpfs", os.path.join(folder, name)]
                read_only.append(os.path.join(folder, name))
            if os.path.isfile(os.path.join(folder, name + ".py")):
                args += ["--ro-bind", "/dev/null", os.path.join(folder, name + ".py")]
    args += ["--perms", "0755", "--dir", str(Path(WORKER_INSIDE).parent)]
    args += ["--ro-bind", str(WORKER_SOURCE), WORKER_INSIDE]
    args += ["--perms", "1777", "--size", str(scratch_bytes), "--tmpfs", SCRATCH_INSIDE]
    for path in read_only:
        args += ["--remount-ro", path]
    args += ["--clearenv"]
    for key, value in _environment().items():
        args += ["--setenv", key, value]
    return args + ["--chdir", "/"]


@functools.lru_cache(maxsize=1)
def _bwrap_problem() -> str | None:
    """Why bwrap cannot be used here, or None when a sandboxed Python starts fine."""
    try:
        command = _bwrap_args(64 << 20) + [_python(), "-I", "-S", "-c", "pass"]
        done = subprocess.run(command, capture_output=True, timeout=60)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return None


def isolation_available() -> str:
    """Return "bwrap" when bubblewrap sandboxes work on this machine, else "rlimits-only"."""
    return "bwrap" if _bwrap_problem() is None else "rlimits-only"


class SandboxError(RuntimeError):
    """The sandbox itself cannot run here (no usable bwrap when asked for, workers that do not start)."""


class _Spawner:
    """Starts processes from one long-lived thread.

    bwrap --die-with-parent (and the worker's parent-death signal) fire when
    the *thread* that forked them ends, so workers must not be started from
    short-lived threads such as those of `map`.
    """

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
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

    def call(self, make: Callable[[], subprocess.Popen]) -> subprocess.Popen:
        future: concurrent.futures.Future = concurrent.futures.Future()
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


class _Worker:
    def __init__(self, pool: SandboxPool, slot: int) -> None:
        self.pool = pool
        self.slot = slot
        number = next(_slot_numbers) % 256
        self.uid = UID_BASE + (os.getpid() % 10_000_000) * 256 + number if os.geteuid() == 0 else None
        self.process: subprocess.Popen | None = None
        self.reader: FrameReader | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        pool = self.pool
        if pool.isolation == "bwrap":
            scratch = SCRATCH_INSIDE
        else:
            scratch = os.path.join(pool._scratch_base, f"slot-{self.slot}")
            os.makedirs(scratch, mode=0o700, exist_ok=True)
            if self.uid is not None:
                os.chown(scratch, self.uid, self.uid)
        config = {"track": pool.track, "site": _site_dirs(), "scratch": scratch, "uid": self.uid}
        worker = WORKER_INSIDE if pool.isolation == "bwrap" else str(WORKER_SOURCE)
        command = [_python(), "-I", "-S", "-B", worker, json.dumps(config)]
        if pool.isolation == "bwrap":
            command = _bwrap_args(pool._scratch_bytes) + command
        self.process = pool._spawner.call(
            lambda: subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_environment(),
                cwd="/",
                start_new_session=True,
            )
        )
        os.set_blocking(self.process.stdin.fileno(), False)
        self.reader = FrameReader(self.process.stdout.fileno(), MAX_CALL_OUTPUT_BYTES + (1 << 20))
        try:
            header, _ = self.reader.read(time.monotonic() + READY_SECONDS)
        except (EOFError, TimeoutError, ProtocolError) as exc:
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} did not start ({type(exc).__name__})") from None
        if header.get("kind") != "ready":
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} sent {header.get('kind')!r} instead of ready")

    def kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
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
            self.process.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def run(self, job: bytes, problems: Sequence[ProblemCalls]) -> SubmissionRun:
        limits = self.pool.limits
        deadline = (
            time.monotonic()
            + STARVED_FACTOR * limits.load_seconds
            + len(problems) * (STARVED_FACTOR * limits.problem_seconds + PROBLEM_SLACK_SECONDS)
            + JOB_SLACK_SECONDS
        )
        collector = _Collector(problems)
        self._send(job, deadline, collector)
        while True:
            try:
                header, blob = self.reader.read(deadline)
                done = collector.add(header, blob)
            except (EOFError, TimeoutError, ProtocolError, OSError) as exc:
                self.kill()
                raise _WorkerLost(collector.broken(_lost_message(exc, self.process))) from None
            if done is not None:
                return done

    def _send(self, job: bytes, deadline: float, collector: _Collector) -> None:
        fd = self.process.stdin.fileno()
        view = memoryview(job)
        while view:
            try:
                _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise TimeoutError
                view = view[os.write(fd, view) :]
            except (OSError, TimeoutError) as exc:
                self.kill()
                if len(view) == len(job):
                    raise _NotDelivered from exc
                raise _WorkerLost(collector.broken("the sandbox worker stopped taking input")) from None


def _lost_message(exc: BaseException, process: subprocess.Popen | None) -> str:
    if isinstance(exc, TimeoutError):
        return "the sandbox did not answer in time and was restarted; this submission was not fully run"
    if isinstance(exc, ProtocolError):
        return f"the sandbox sent malformed data ({exc}) and was restarted"
    code = process.poll() if process is not None else None
    how = f" (signal {-code})" if code is not None and code < 0 else f" (exit {code})" if code else ""
    return f"the sandbox worker died{how} while running this submission; it was restarted"


class _Collector:
    """Builds a SubmissionRun from the worker's frames, checking each against the job."""

    def __init__(self, problems: Sequence[ProblemCalls]) -> None:
        self.problems = problems
        self.call_ids = {p.problem_id: {c.call_id for c in p.calls} for p in problems}
        self.results: dict[str, dict[str, CallResult]] = {p.problem_id: {} for p in problems}
        self.runs: dict[str, ProblemRun] = {}

    def add(self, header: dict, blob: bytes) -> SubmissionRun | None:
        kind = header["kind"]
        if kind == "call":
            self._add_call(header, blob)
        elif kind == "problem":
            problem, status = header.get("problem"), header.get("status")
            if problem not in self.results or status not in PROBLEM_STATUSES:
                raise ProtocolError(f"bad problem frame for {problem!r}")
            message = clean_text(header.get("message"), MAX_MESSAGE_CHARS)
            self.runs[problem] = ProblemRun(status, message, self.results[problem])
        elif kind == "submission":
            status = header.get("status")
            if status not in SUBMISSION_STATUSES:
                raise ProtocolError(f"bad submission status {status!r}")
            return SubmissionRun(
                status=status,
                message=clean_text(header.get("message"), MAX_MESSAGE_CHARS),
                problems=self._problem_runs("not run: the sandbox did not report this problem"),
                answers=clean_answers(header.get("answers")),
                defined=clean_defined(header.get("defined")),
                stdout=clean_text(header.get("stdout"), MAX_STDOUT_CHARS, mark_cut=False),
            )
        else:
            raise ProtocolError(f"unexpected {kind!r} frame")
        return None

    def _add_call(self, header: dict, blob: bytes) -> None:
        problem, call_id = header.get("problem"), header.get("call_id")
        if call_id not in self.call_ids.get(problem, ()) or call_id in self.results[problem]:
            raise ProtocolError(f"unexpected result for call {call_id!r}")
        if header.get("ok") is not True:
            error = clean_text(header.get("error"), MAX_ERROR_CHARS) or "failed"
            self.results[problem][call_id] = CallResult(ok=False, error=error)
            return
        try:
            outputs = decode_outputs(blob, header.get("arrays"))
        except ProtocolError as exc:
            self.results[problem][call_id] = CallResult(ok=False, error=f"returned data the grader cannot read ({exc})")
            return
        self.results[problem][call_id] = CallResult(ok=True, outputs=outputs)

    def _problem_runs(self, missing: str) -> dict[str, ProblemRun]:
        return {
            p.problem_id: self.runs.get(p.problem_id) or ProblemRun("not_run", missing, self.results[p.problem_id])
            for p in self.problems
        }

    def broken(self, message: str) -> SubmissionRun:
        runs = self._problem_runs(f"not run: {message}")
        for problem_id, run in runs.items():
            if problem_id not in self.runs and run.results:
                runs[problem_id] = ProblemRun("crashed", message, run.results)
        return SubmissionRun("crashed", message, runs, {}, (), "")


class SandboxPool:
    """Warm workers that run submissions in isolation; thread-safe, use as a context manager."""

    def __init__(
        self,
        track: Literal["numpy", "torch"],
        jobs: int | None = None,
        limits: Limits = Limits(),
        isolation: Literal["auto", "bwrap", "rlimits"] = "auto",
    ) -> None:
        if track not in ("numpy", "torch"):
            raise ValueError(f"unknown track {track!r}")
        if isolation not in ("auto", "bwrap", "rlimits"):
            raise ValueError(f"unknown isolation {isolation!r}")
        self.track = track
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.limits = limits
        if isolation == "rlimits":
            self.isolation = "rlimits-only"
        else:
            problem = _bwrap_problem()
            if problem is None:
                self.isolation = "bwrap"
            elif isolation == "bwrap":
                raise SandboxError(f"bwrap isolation was requested but is not usable here: {problem}")
            else:
                self.isolation = "rlimits-only"
                text = (
                    f"bubblewrap is not usable ({problem}); student code runs with resource limits "
                    "ONLY: it can read the file system (including solutions) and use the network"
                )
                warnings.warn(text, RuntimeWarning, stacklevel=2)
                logger.warning(text)
        self._scratch_bytes = max(64 << 20, 4 * limits.max_file_bytes)
        self._scratch_base = ""
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._spawner: _Spawner | None = None

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
            self._spawner = _Spawner()
            if self.isolation != "bwrap":
                self._scratch_base = tempfile.mkdtemp(prefix="qkv-sandbox-")
                os.chmod(self._scratch_base, 0o711)
            self._workers = [_Worker(self, slot) for slot in range(self.jobs)]
            try:
                with concurrent.futures.ThreadPoolExecutor(self.jobs) as starter:
                    list(starter.map(_Worker.start, self._workers))
            except BaseException:
                self._stop_workers()  # and forget them, so that the next start begins afresh
                raise
            for worker in self._workers:
                self._idle.put(worker)

    def run(self, source: str, problems: Sequence[ProblemCalls]) -> SubmissionRun:
        """Load `source` in a fresh process and run every problem's calls; blocks."""
        job = encode_job(source, problems, self.limits)  # before the copy: the encoding is cached per call list
        problems = tuple(problems)
        self.start()
        worker = self._idle.get()
        try:
            for _ in range(3):
                if not worker.alive():
                    worker.kill()
                    worker.start()
                try:
                    return worker.run(job, problems)
                except _NotDelivered:
                    continue
                except _WorkerLost as lost:
                    logger.warning("sandbox worker %d lost: %s", worker.slot, lost.run.message)
                    return lost.run
            raise SandboxError("the sandbox worker keeps dying before it takes a job")
        finally:
            self._idle.put(worker)

    def map(self, jobs: Iterable[tuple[K, str, Sequence[ProblemCalls]]]) -> Iterator[tuple[K, SubmissionRun]]:
        """Run many submissions, `jobs` at a time; yields (key, run) as each completes."""
        self.start()
        pending: dict[concurrent.futures.Future, K] = {}
        source_iter = iter(jobs)
        with concurrent.futures.ThreadPoolExecutor(self.jobs, thread_name_prefix="qkv-sandbox") as executor:
            while True:
                for key, source, problems in itertools.islice(source_iter, 2 * self.jobs - len(pending)):
                    pending[executor.submit(self.run, source, problems)] = key
                if not pending:
                    return
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()

    def close(self) -> None:
        """Stop the workers and remove their files; the pool can be started again."""
        with self._lock:
            if self._spawner is not None:
                self._stop_workers()

    def _stop_workers(self) -> None:
        for worker in self._workers:
            worker.stop(timeout=5.0)
        self._spawner.stop()
        self._spawner = None
        self._workers = []
        self._idle = queue.Queue()
        if self._scratch_base:
            shutil.rmtree(self._scratch_base, ignore_errors=True)
            self._scratch_base = ""
