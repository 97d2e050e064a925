"""How runnable submissions become results: `LocalRoute` (a SandboxPool here) or, with a cluster, cluster.py's Dask workers.

A route takes `Submission`s with a program and yields (submission, result, the
isolation it ran under) as each completes; scoring (score.py) runs in a trusted
process either way: this one, or the Dask worker's.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Optional, Protocol

from autograder import extras
from autograder.bundle import GradingBundle
from autograder.errors import QkvError
from autograder.grade.cluster_security import TlsFiles
from autograder.grade.execute import run_many
from autograder.grade.intake import Submission
from autograder.grade.score import grade_submission
from autograder.grade.timings import Timings
from autograder.results import SubmissionResult
from autograder.sandbox import Limits, Program, SandboxError, SandboxPool


class Route(Protocol):
    @property
    def isolation(self) -> str:
        """How student code is isolated (the weakest, if sandboxes differ)."""
        ...

    def grade(self, submissions: Iterable[Optional[Submission]]
              ) -> Iterator[tuple[Submission, SubmissionResult, str]]:
        """Yield (submission, result, the isolation it ran under) as each one completes. `submissions` is read
        as the route has room for more, so it may be a stream of what arrives meanwhile: None there means
        "nothing yet" (the route asks again when a submission is graded or IDLE_SECONDS later), its end "no
        more"; it holds at most one submission of a student at a time (a cluster names its tasks by student
        and file)."""
        ...


class LocalRoute:
    """Runs submissions in a warm SandboxPool on this machine and scores them in this process."""

    def __init__(self, bundle: GradingBundle, pool: SandboxPool, timings: Timings | None = None) -> None:
        self.bundle = bundle
        self.pool = pool
        self.isolation = pool.isolation
        self.timings = timings or Timings()

    def grade(self, submissions: Iterable[Optional[Submission]]
              ) -> Iterator[tuple[Submission, SubmissionResult, str]]:
        taken: dict[int, Submission] = {}  # by the order taken: what a stream held is let go once graded

        def programs() -> Iterator[Optional[tuple[int, Program]]]:
            for number, submission in enumerate(submissions):
                if submission is None:
                    yield None  # a stream with nothing yet
                elif submission.program is not None:
                    taken[number] = submission
                    yield number, submission.program

        wire = (self.pool.cpu.send, self.pool.cpu.receive)
        try:
            for number, run in run_many(self.pool, self.bundle, programs()):
                submission = taken.pop(number)
                self.timings.job(run.cpu)
                with self.timings.stage("score"):
                    result = grade_submission(self.bundle, submission, run)
                yield submission, result, self.isolation
        finally:
            self.timings.add("send", self.pool.cpu.send - wire[0])
            self.timings.add("receive", self.pool.cpu.receive - wire[1])


def tune_for_grading() -> None:
    """Set this process's garbage collector for grading a class, once its modules are imported: what is alive now
    is never collected (frozen), and a collection waits for 10,000 new objects, not 700. A class's grading
    allocates thousands of small objects per submission and keeps every result, so the defaults ran a collection
    every submission or so, and a full one over the whole heap every hundred (800 keys: 1,044 collections, 0.43 s
    of the grader's CPU; tuned, 165 and 0.15 s). Cycles are still collected; refcounting frees the rest at once."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def make_pool(bundle: GradingBundle, jobs: int | None, limits: Limits, isolation: str,
              protect: Sequence[Path]) -> SandboxPool:
    """A pool for the bundle's track (it starts nothing yet); refuses an isolation this machine cannot give."""
    if bundle.track == "torch":
        extras.require("torch", f"assignment {bundle.name}")
    try:
        return SandboxPool(bundle.track, jobs=jobs, limits=limits, isolation=isolation, protect=protect)
    except SandboxError as err:
        raise QkvError("--isolation", str(err)) from None


@contextmanager
def _local(bundle: GradingBundle, pool: SandboxPool, timings: Timings | None,
           start_soon: bool) -> Iterator[LocalRoute]:
    if start_soon:
        pool.start_soon()
    else:
        pool.start()  # a sandbox that cannot start fails the route's entry
    try:
        yield LocalRoute(bundle, pool, timings)
    finally:
        pool.close()


def open_route(bundle: GradingBundle, bundle_dir: Path, jobs: int | None, limits: Limits, isolation: str,
               cluster: str | None, protect: Sequence[Path] = (), tls: TlsFiles = TlsFiles(),
               timings: Timings | None = None, start_soon: bool = False) -> AbstractContextManager[Route]:
    """The route for `cluster` (None: this machine); `timings`, if given, is told the sandbox's CPU per job and
    the CPU of scoring (on this machine only). With `start_soon`, entering this machine's route starts its
    workers in the background (`SandboxPool.start_soon`) and returns; without, entering waits for them."""
    if cluster is None:
        if tls.given():
            raise QkvError(tls.given()[0], "certificates are for a tls:// --cluster; without --cluster, "
                                           "grading runs here")
        return _local(bundle, make_pool(bundle, jobs, limits, isolation, protect), timings, start_soon)
    if jobs is not None:
        raise QkvError("--jobs", "with --cluster, each Dask worker grades as many submissions at once as it has "
                                 "threads (dask worker --nthreads); drop --jobs")
    extras.require("cluster", "--cluster")
    # dask loads only when asked for
    from autograder.grade.cluster import cluster_route, cluster_security, parse_cluster_address

    address = parse_cluster_address(cluster)
    # the certificates are checked now, before the gradebook exists; the connection waits for the `with`
    return cluster_route(address, bundle, bundle_dir, limits, isolation, cluster_security(address, tls))
