"""How a submission's tests are run in the sandbox: a bundle and programs in, one `SubmissionRun` per program out.

Fast path first: every call of every problem as one batch, run by the
submission's own sandboxed process (no fork per problem, one message back;
about half the time of a class). When that run does not finish cleanly (a
loop, a crash, an exit, a memory bomb in any function), the submission is run
again with each problem in its own process, so one broken function costs only
its own problem's points.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Hashable, Iterable, Iterator, Optional, TypeVar

from autograder.bundle import GradingBundle
from autograder.memo import Memo
from autograder.sandbox import Call, ProblemCalls, ProblemRun, Program, SandboxPool, SubmissionRun
from autograder.sandbox.pool import MapJob

ALL_PROBLEMS = "__all_problems__"
K = TypeVar("K", bound=Hashable)


_CALLS: Memo[tuple[list[ProblemCalls], list[ProblemCalls]]] = Memo(8)


def _calls(bundle: GradingBundle) -> tuple[list[ProblemCalls], list[ProblemCalls]]:
    """(isolated, combined) calls of a bundle, made once: the sandbox reuses its encoding of the same list."""
    def make() -> tuple[list[ProblemCalls], list[ProblemCalls]]:
        isolated = [ProblemCalls(p.id, tuple(Call(t.call_id, p.function, t.args, dict(t.kwargs)) for t in p.tests))
                    for p in bundle.code]
        everything = tuple(call for problem in isolated for call in problem.calls)
        return isolated, [ProblemCalls(ALL_PROBLEMS, everything, batched=True)] if everything else []

    return _CALLS.get((bundle,), make)


def isolated_calls(bundle: GradingBundle) -> list[ProblemCalls]:
    """Each code problem's tests as its own group of calls."""
    return _calls(bundle)[0]


def combined_calls(bundle: GradingBundle) -> list[ProblemCalls]:
    """Every call of every code problem as one group."""
    return _calls(bundle)[1]


def split_combined(run: SubmissionRun, bundle: GradingBundle) -> SubmissionRun | None:
    """The combined run as per-problem results, or None when it must be run again problem by problem."""
    if not bundle.code:
        return run
    combined = run.problems.get(ALL_PROBLEMS)
    if combined is None:
        return None
    if combined.status == "not_run" and run.status != "ok":
        pass  # loading failed: running the problems apart cannot help, and each problem is "not run" alike
    elif run.status != "ok" or combined.status != "ok":
        return None  # the batch ran in the submission's main process, so any failure ends the run
    problems = {
        problem.id: ProblemRun(combined.status, combined.message,
                               {t.call_id: combined.results[t.call_id] for t in problem.tests if t.call_id in combined.results})
        for problem in bundle.code
    }
    return replace(run, problems=problems)


def run_submission(pool: SandboxPool, bundle: GradingBundle, program: Program) -> SubmissionRun:
    fast = pool.run(program, combined_calls(bundle))
    first = split_combined(fast, bundle)
    return first if first is not None else pool.run(program, isolated_calls(bundle), fast.seconds)


def run_many(pool: SandboxPool, bundle: GradingBundle,
             programs: Iterable[Optional[tuple[K, Program]]]) -> Iterator[tuple[K, SubmissionRun]]:
    """Runs as they complete. `programs` is read lazily, as workers come free, so it may be a stream that grows
    while this runs (the service's claims; None there: nothing yet, SandboxPool.map asks again soon); a
    submission whose fast path fails is run again problem by problem before the next new one is taken, so a
    stream that does not end keeps no rerun waiting. Keys are unique among the programs still running."""
    pending: dict[K, Program] = {}
    reruns: deque[K] = deque()  # fast paths that failed, not yet sent again
    spent: dict[K, float] = {}  # the seconds each of those took, which the rerun's budget no longer holds
    rerunning: set[K] = set()
    combined, isolated = combined_calls(bundle), isolated_calls(bundle)

    def sent_again() -> Iterator[tuple[K, Program, list[ProblemCalls], float]]:
        while reruns:
            again = reruns.popleft()
            rerunning.add(again)
            yield again, pending[again], isolated, spent.pop(again)

    def jobs() -> Iterator[Optional[MapJob[K]]]:
        for item in programs:
            yield from sent_again()
            if item is None:
                yield None
                continue
            key, program = item
            if key in pending:
                raise ValueError(f"key {key!r} is still running")
            pending[key] = program
            yield key, program, combined
            yield from sent_again()

    def finished(key: K, run: SubmissionRun) -> Iterator[tuple[K, SubmissionRun]]:
        if key in rerunning:
            rerunning.discard(key)
            pending.pop(key)
            yield key, run
            return
        split = split_combined(run, bundle)
        if split is None:
            reruns.append(key)
            spent[key] = run.seconds
        else:
            pending.pop(key)
            yield key, split

    for key, run in pool.map(jobs()):
        yield from finished(key, run)
    # the fast paths that failed once nothing new was left to take
    rerunning.update(reruns)
    for key, run in pool.map((key, pending[key], isolated, spent.pop(key)) for key in list(reruns)):
        yield from finished(key, run)
