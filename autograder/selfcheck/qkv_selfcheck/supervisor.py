"""The command line's way to run student code: never in its own process.

A child (qkv_check.py in worker mode, with the same Python: worker.py) loads the file and runs the
public tests, and says on a pipe what it starts and what came of it. The parent holds the grader's
time limits: when the child takes longer than load_seconds to load, or than problem_seconds for one
problem's calls, it is killed (an endless loop, even one that catches BaseException or sits in a C
call, cannot stop that) and a fresh child goes on with the problems left.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from qkv_runtime.values import plain_answers

from .child import Child
from .data import HERE, UsageError, limits_of
from .loading import Submission, load_message, submission_path
from .outcomes import FAIL, Outcome, ProblemResult
from .public import PublicCheck, code_result
from .worker import WORKER, outcome_from

SCRIPT = HERE / "qkv_check.py"  # the child runs the script itself, so its folder is moved to the end of sys.path too
START_SECONDS = 120.0  # for the child's Python to start (numpy, torch on a torch track), before any limit
BETWEEN_SECONDS = 60.0  # between two problems the child runs only the self-check's own code
DUMP_GRACE_SECONDS = 0.3  # after a limit, for the child's traceback dump (faulthandler) to arrive


def supervise(data: Dict[str, Any], data_path: Any, path: Any,
              run_code: bool = True) -> Tuple[Submission, Dict[str, ProblemResult]]:
    """Load `path` and run its public tests in supervised children, under the grader's time limits.

    Gives the submission as the child saw it (its ANSWERS and STUDENT_ID as plain data, what went
    wrong loading it) and the results of the code problems. A child that runs out of time, or dies,
    is killed and the problem it was on fails with what happened; a fresh child goes on with the rest.
    """
    path = submission_path(path)
    limits = limits_of(data)
    code = [p for p in data["problems"] if p["code"]] if run_code else []
    results: Dict[str, ProblemResult] = {}
    submission: Optional[Submission] = None
    kind = "ipynb" if path.suffix == ".ipynb" else "py"
    while True:
        skip = [p["id"] for p in data["problems"] if p["code"] and (p["id"] in results or p not in code)]
        argv = [sys.executable, str(SCRIPT), WORKER, str(path), "--data",
                str(Path(data_path).resolve())] + [arg for pid in skip for arg in ("--skip", pid)]
        child = Child(argv)
        phase, deadline = "start", time.monotonic() + START_SECONDS
        problem: Optional[Dict[str, Any]] = None
        check: Optional[PublicCheck] = None
        outcomes: List[Outcome] = []
        try:
            while True:
                event = child.next(deadline)
                if isinstance(event, dict):
                    name = event["event"]
                    if name == "load":
                        phase, deadline = "load", time.monotonic() + limits.load_seconds
                    elif name == "loaded" and phase == "load":
                        if submission is None:
                            submission = _child_submission(event, path, kind)
                        phase, deadline = "between", time.monotonic() + BETWEEN_SECONDS
                    elif name == "problem" and phase == "between":
                        problem = next((p for p in code if p["id"] == event.get("problem")), None)
                        if problem is None:
                            raise _ChildBroke("it ran a problem it was not asked to")
                        phase, deadline, outcomes, check = "problem", time.monotonic() + limits.problem_seconds, [], None
                    elif name == "call" and phase == "problem":
                        underway = _running(problem)
                        test = next((t for t in underway["public_tests"] if t["name"] == event.get("test")), None)
                        check = PublicCheck(underway, test, data["track"]) if test else None
                    elif name == "outcome" and phase == "problem":
                        outcome = outcome_from(event)
                        if outcome is not None:
                            outcomes.append(outcome)
                    elif name == "done" and phase == "problem":
                        underway = _running(problem)
                        results[underway["id"]] = code_result(underway, outcomes)
                        phase, deadline, problem = "between", time.monotonic() + BETWEEN_SECONDS, None
                        outcomes, check = [], None
                    elif name == "end" and phase == "between":
                        return _finished(submission, path, kind), results
                    continue
                if event is Child.TIMEOUT and phase in ("load", "problem"):
                    time.sleep(DUMP_GRACE_SECONDS)  # the child's own dump of where it was, due about now
                child.kill()
                where = child.where(str(path))
                if phase == "start":
                    raise _ChildBroke(f"it did not start: {child.exit_text()}{child.last_line()}"
                                      if event is None else f"it did not start within {START_SECONDS:g} s")
                if phase == "load":
                    if event is Child.TIMEOUT:
                        error = load_message(limits.load_seconds, kind, where)
                    else:
                        error = f"the check stopped while loading your file ({child.exit_text()}: os._exit, or a crash?)"
                    failed = submission or Submission({}, path.name, kind)
                    if submission is None:
                        failed.load_error = error
                        return failed, results
                    for p in code:  # a fresh child failed to load what loaded before
                        results.setdefault(p["id"], ProblemResult(p, [Outcome(FAIL, f"not checked: {error}")]))
                    return failed, results
                if problem is None:  # between problems: the next one to run pays for it
                    problem = next((p for p in code if p["id"] not in results), None)
                    if problem is None:
                        return _finished(submission, path, kind), results
                if phase == "between":
                    message = (f"not checked: the check {'stopped answering' if event is Child.TIMEOUT else 'stopped'}"
                               f" before {problem['function']}() ({child.exit_text()}; a thread of your code still "
                               "running, or os._exit?)")
                elif event is Child.TIMEOUT:
                    message = (check.timeout_message(limits.problem_seconds, where) if check else
                               f"took longer than {limits.problem_seconds:g} s (an endless loop?)")
                else:
                    running = f" while running {check.function}() (public test {check.test['name']!r}){where}" \
                        if check else ""
                    message = f"the check stopped{running}: {child.exit_text()} (os._exit, or a crash?)"
                left = len(problem["public_tests"]) - len(outcomes) - 1
                details = [f"the problem's other {left} public test{'s' if left != 1 else ''} did not run"] \
                    if left > 0 else []
                results[problem["id"]] = code_result(problem, outcomes + [Outcome(FAIL, message, details)])
                break  # a fresh child for the problems left
        except _ChildBroke as err:
            child.kill()
            raise UsageError(f"the self-check's worker (a second Python running {SCRIPT.name}) failed: {err}") \
                from None
        finally:
            child.kill()
        if all(p["id"] in results for p in code):
            return _finished(submission, path, kind), results


class _ChildBroke(Exception):
    pass


def _running(problem: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The problem the child is on, which the phase "problem" has (both are set together)."""
    if problem is None:
        raise _ChildBroke("it reported on a problem it never began")
    return problem


def _finished(submission: Optional[Submission], path: Path, kind: str) -> Submission:
    return submission or Submission({}, path.name, kind, load_error="the self-check's worker said nothing")


def _child_submission(event: Dict[str, Any], path: Path, kind: str) -> Submission:
    """The submission as the child saw it: plain data only (ANSWERS, STUDENT_ID), never student objects."""
    def texts(value: Any) -> List[str]:
        return [str(v) for v in value] if isinstance(value, list) else []

    student = event.get("student_id")
    namespace = {"ANSWERS": plain_answers(event.get("answers")), "STUDENT_ID": student if isinstance(student, str) else ""}
    error = event.get("load_error")
    printed = event.get("printed")
    return Submission(namespace, path.name, kind, load_error=str(error) if error else None,
                      cell_errors=texts(event.get("cell_errors")), skipped=texts(event.get("skipped")),
                      printed=printed if isinstance(printed, str) else "")
