"""Grading on a Dask cluster: an address, the bundle folder and runnable submissions in; (submission, result, isolation) out, as each completes.

`qkv grade --cluster tls://host:8786` uses a running `dask scheduler` started with
certificates (cluster_security.py says why and checks the client's); `tcp://` one
without them, trusted network only; `--cluster local:N` starts a LocalCluster of N
worker processes here, and `local-tls:N` the same one encrypted with temporary
certificates.

This process reads the submissions and sends each one's program; workers
need no shared file system. The bundle's files travel once per Dask worker
inside a `WorkerPlugin`, which Dask also installs on workers that join or
restart later. Each worker process holds the unpacked bundle and one warm
`SandboxPool` (a slot per worker thread): student code runs in that sandbox
and the trusted comparison (`grade_submission`) runs in the worker process,
which returns plain data (`SubmissionResult.to_json()`). `grade_class` writes
it to the gradebook here, one transaction per submission, as a local run does.

Faults: when a worker dies mid-task its tasks are rescheduled by Dask; when a
task has been running on `distributed.scheduler.allowed-failures` + 1 workers
that all died (3 + 1 by default), Dask gives up with `KilledWorker` and that
submission gets the status "worker_lost" while the rest of the batch goes on.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import ssl
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import dask
from distributed import Client, Future, KilledWorker, LocalCluster, Worker, WorkerPlugin, as_completed, get_worker

from autograder.isolation_modes import IsolationMode
from autograder.bundle import GradingBundle, read_bundle
from autograder.errors import QkvError
from autograder.grade.cluster_security import (PlaintextClusterWarning, TlsFiles, UnsafeFolder, client_security,
                                                is_encrypted, plaintext_warning, private_subfolder,
                                                temporary_security, write_private_files)
from autograder.grade.intake import Submission
from autograder.grade.execute import run_submission
from autograder.grade.score import grade_submission
from autograder.results import SubmissionResult
from autograder.sandbox import Limits, SandboxPool
from autograder.sandbox.pool import IDLE_SECONDS, take

WORKER_WAIT_SECONDS = 60.0
# Tasks in flight per worker thread: enough to keep every thread busy between round
# trips and, above 2, to make Dask queue them (see `send`); few enough that the
# sources of a large class never pile up in the scheduler's memory.
TASKS_PER_THREAD = 4
MIN_TASKS_IN_FLIGHT = 16
MAX_LOCAL_WORKERS = 256
WORKER_LOST_STATUS = "worker_lost"


@dataclass(frozen=True)
class ClusterAddress:
    scheduler: str | None  # address of a running scheduler, e.g. tls://host:8786
    local_workers: int  # when scheduler is None: worker processes of a LocalCluster started here
    local_tls: bool = False  # that LocalCluster encrypted with temporary certificates

    def __str__(self) -> str:
        return self.scheduler or f"local{'-tls' if self.local_tls else ''}:{self.local_workers}"


def parse_cluster_address(text: str) -> ClusterAddress:
    """`tls://HOST:PORT` (any Dask comm scheme), `local:N` or `local-tls:N`; anything else is a QkvError."""
    local = re.fullmatch(r"local(-tls)?:(\d+)", text)
    if local:
        workers = int(local.group(2))
        if not 1 <= workers <= MAX_LOCAL_WORKERS:
            raise QkvError("--cluster", f"local:N needs 1 <= N <= {MAX_LOCAL_WORKERS}, not {workers}")
        return ClusterAddress(None, workers, local_tls=bool(local.group(1)))
    if re.fullmatch(r"[a-z]+://\S+", text):
        return ClusterAddress(text, 0)
    raise QkvError("--cluster", f"'{text}' is neither a scheduler address (tls://HOST:8786, tcp://HOST:8786) "
                                "nor local:N or local-tls:N")


def cluster_security(address: ClusterAddress, tls: TlsFiles):
    """distributed's `Security` for `address` (None: Dask's defaults, unencrypted), or a QkvError for certificates
    that would go unused: an instructor who gives them believes the run is encrypted."""
    given = tls.given()
    if address.scheduler is None:
        if given:
            raise QkvError(given[0], f"{address} starts its cluster here and makes no use of certificates; "
                                     "local-tls:N encrypts it with temporary ones")
        return temporary_security() if address.local_tls else None
    if is_encrypted(address.scheduler):
        return client_security(address.scheduler, tls)
    if given:
        raise QkvError(given[0], f"{address.scheduler} is not a TLS address, so the certificates would go unused; "
                                 "a scheduler started with certificates listens on tls://HOST:PORT")
    return None


def bundle_file_bytes(bundle_dir: Path) -> dict[str, bytes]:
    """Every file of the bundle folder as {relative path: bytes}: what a worker needs to grade."""
    return {path.relative_to(bundle_dir).as_posix(): path.read_bytes()
            for path in sorted(bundle_dir.rglob("*")) if path.is_file()}


def grader_name(files: dict[str, bytes], limits: Limits, isolation: str) -> str:
    """The plugin's name on the workers: the same bundle and settings replace their own stale copy
    (left by a killed client) instead of piling up beside it."""
    digest = hashlib.sha256(repr((sorted(files.items()), limits, isolation)).encode())
    return f"qkv-grader-{digest.hexdigest()[:16]}"


ISOLATION_ORDER = tuple(IsolationMode)  # strongest first


def weakest_isolation(isolations: Sequence[str]) -> str:
    return max(isolations, key=lambda i: ISOLATION_ORDER.index(i) if i in ISOLATION_ORDER else len(ISOLATION_ORDER))


class GraderPlugin(WorkerPlugin):
    """Lives in each Dask worker process: the unpacked bundle and a warm SandboxPool, closed at teardown."""

    def __init__(self, name: str, files: dict[str, bytes], limits: Limits, isolation: str) -> None:
        self.name = name
        self.files = files
        self.limits = limits
        self.isolation = isolation

    def setup(self, worker: Worker) -> None:
        # inside the worker's own folder, which Dask cleans up even after a kill -9; that folder is whatever the
        # worker's operator chose, or Dask's default in the shared temporary folder, hence the checks
        self.folder = private_subfolder(Path(worker.local_directory), "qkv-bundle-")
        write_private_files(self.folder, self.files)
        self.bundle = read_bundle(self.folder)
        # the sandbox processes start with the first submission, in a worker thread, not on the event loop
        self.pool = SandboxPool(self.bundle.track, jobs=worker.state.nthreads, limits=self.limits,
                                isolation=self.isolation)

    def teardown(self, worker: Worker) -> None:
        # also after a setup that failed part-way (Dask keeps such a plugin until it is removed)
        if hasattr(self, "pool"):
            self.pool.close()
        if hasattr(self, "folder"):
            shutil.rmtree(self.folder, ignore_errors=True)

    def grade(self, submission: Submission) -> tuple[dict, str]:
        # a file with nothing to run is scored as intake left it, as on this machine (grade/service.py)
        run = None if submission.program is None else run_submission(self.pool, self.bundle, submission.program)
        return grade_submission(self.bundle, submission, run).to_json(), self.pool.isolation


def _plugin(worker: Worker, grader: str) -> GraderPlugin:
    plugin = worker.plugins[grader]
    if not isinstance(plugin, GraderPlugin):
        raise TypeError(f"the worker's plugin {grader} is a {type(plugin).__name__}, not qkv's grader")
    return plugin


def grade_on_worker(grader: str, submission: Submission) -> tuple[dict, str]:
    """The Dask task: one submission graded by this worker's plugin; its result as plain data."""
    return _plugin(get_worker(), grader).grade(submission)


def worker_isolation(grader: str, dask_worker: Worker) -> str:
    return _plugin(dask_worker, grader).pool.isolation


class ClusterRoute:
    """Sends submissions to the cluster's workers, a bounded number in flight, and yields their results."""

    def __init__(self, client: Client, grader: str, bundle: GradingBundle, isolation: str) -> None:
        self.client = client
        self.grader = grader
        self.bundle = bundle
        self.isolation = isolation  # the weakest seen so far, as workers may join with less

    def grade(self, submissions: Iterable[Optional[Submission]]
              ) -> Iterator[tuple[Submission, SubmissionResult, str]]:
        waiting = iter(submissions)
        in_flight: dict[Future, Submission] = {}
        completed = as_completed(loop=self.client.loop)
        room = max(MIN_TASKS_IN_FLIGHT, TASKS_PER_THREAD * sum(self.client.nthreads().values()))

        def send() -> tuple[bool, bool]:
            """Send what `submissions` has, up to `room` in flight; whether it had nothing yet, and has ended."""
            batch, idle, ended = take(waiting, room - len(in_flight))
            if batch:
                # One task group per run (the key's first part), larger than twice the cluster's
                # threads: Dask then queues it on the scheduler and hands each worker only what it
                # can start, so a worker that dies takes few innocent tasks with it. The key names
                # the student, so the dashboard shows who is being graded.
                futures = self.client.map(grade_on_worker, [self.grader] * len(batch), batch,
                                          key=[(self.grader, s.student, s.digest) for s in batch])
                in_flight.update(zip(futures, batch))
                completed.update(futures)
            return idle, ended

        while True:
            idle, ended = send()
            if not in_flight:
                if ended:
                    return
                time.sleep(IDLE_SECONDS)
                continue
            if idle:  # the stream had nothing: ask it again once one is graded, or IDLE_SECONDS later
                deadline = time.monotonic() + IDLE_SECONDS
                while not completed.has_ready() and time.monotonic() < deadline:
                    time.sleep(IDLE_SECONDS / 10)
            for future in completed.next_batch(block=not idle):
                submission = in_flight.pop(future)
                # result() also waits for a result Dask recomputes because the worker holding it died
                try:
                    result, isolation = future.result()
                except KilledWorker as error:
                    yield submission, self._worker_lost(submission, error), self.isolation
                    continue
                except CancelledError:
                    raise QkvError(str(self.client.scheduler.address), "the cluster cancelled the run "
                                   "(scheduler lost?); run the same command again to resume") from None
                self.isolation = weakest_isolation([self.isolation, isolation])
                yield submission, SubmissionResult.from_json(result), isolation

    def _worker_lost(self, submission: Submission, error: KilledWorker) -> SubmissionResult:
        lost = replace(submission, status=WORKER_LOST_STATUS,
                       message=f"{error.allowed_failures + 1} Dask workers died while grading this submission; "
                               "it was not graded (run again with --regrade to retry)")
        return grade_submission(self.bundle, lost, None)


@contextmanager
def connect(address: ClusterAddress, security=None) -> Iterator[Client]:
    """A client of the scheduler at `address`, or of a LocalCluster started here for `local:N`;
    `security` (distributed's Security, from `cluster_security`) encrypts and authenticates it."""
    if address.scheduler is None:
        # One thread and one sandbox slot per worker; saturation 1.0 hands each worker only the task it
        # runs, so a worker that dies takes no queued neighbour with it (each death counts against a
        # task's allowed failures).
        settings: dict = {"distributed.scheduler.worker-saturation": 1.0}
        if security:
            # its plain-HTTP status pages (on 127.0.0.1, dashboard or not) show any local user the task names,
            # which name the students
            settings["distributed.scheduler.http.routes"] = []
        # Dask's default scratch folder is one per machine in the shared temporary folder, and Dask uses it even
        # when another user made it first: the scheduler and the workers get one of this run's own, mode 0700
        scratch = tempfile.mkdtemp(prefix="qkv-cluster-")
        try:
            with dask.config.set(settings):
                cluster = LocalCluster(n_workers=address.local_workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR,
                                       protocol="tls://" if security else None, security=security,
                                       local_directory=scratch, scheduler_kwargs={"local_directory": scratch})
            with cluster, Client(cluster) as client:  # the client takes the cluster's certificates
                yield client
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    warning = plaintext_warning(address.scheduler)
    if warning:  # before the first byte goes out
        warnings.warn(warning, PlaintextClusterWarning, stacklevel=2)
    try:
        # the connect timeout is Dask's (distributed.comm.timeouts.connect, 30 s by default)
        client = Client(address.scheduler, security=security)
    except (OSError, TimeoutError) as err:
        raise QkvError(address.scheduler, connect_failure(err)) from None
    except Exception as err:  # noqa: BLE001 - something else answered: distributed fails as it decodes the reply
        reply = " ".join(str(err).split())[:200]
        raise QkvError(address.scheduler, f"no Dask scheduler answered there ({type(err).__name__}: {reply}); "
                                          "is it the scheduler's address?") from None
    with client:
        yield client


def connect_failure(err: BaseException) -> str:
    """One line on why the client could not connect; a refused TLS handshake says what to check."""
    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    text = " ".join(str(err).split())
    if cause is not None or "TLS" in text or "SSL" in text:
        reason = getattr(cause, "reason", None) or text
        return (f"the TLS handshake with the Dask scheduler failed ({reason}): the scheduler's certificate must be "
                "signed by the CA of --tls-ca, and --tls-cert by the CA the scheduler was started with")
    return f"cannot reach the Dask scheduler ({text})"


@contextmanager
def cluster_route(address: ClusterAddress, bundle: GradingBundle, bundle_dir: Path, limits: Limits,
                  isolation: str, security=None) -> Iterator[ClusterRoute]:
    """Connect, install the grader on every worker, and give the route that grades there."""
    files = bundle_file_bytes(bundle_dir)
    grader = grader_name(files, limits, isolation)
    with connect(address, security) as client:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except TimeoutError:
            flags = " --tls-ca-file CA --tls-cert CERT --tls-key KEY" if security else ""
            raise QkvError(str(address), f"no Dask worker joined in {WORKER_WAIT_SECONDS:g} s; "
                                         f"start some with `dask worker {address}{flags}`") from None
        try:
            client.register_plugin(GraderPlugin(grader, files, limits, isolation))
        except UnsafeFolder as err:
            raise QkvError(str(address), f"a Dask worker cannot grade: {err}") from None
        except Exception as err:  # noqa: BLE001 - re-raised from a worker, any type
            raise QkvError(str(address), f"a Dask worker cannot grade: {type(err).__name__}: {err}") from None
        isolations = client.run(worker_isolation, grader)
        yield ClusterRoute(client, grader, bundle, weakest_isolation(list(isolations.values())))
        # after a clean finish only: frees the warm sandboxes of a shared cluster's workers
        client.unregister_worker_plugin(grader)
