"""Code problems: each public test called on the student's function, judged with the grader's comparison, and a
wrong output named as a common mistake the way the grader names it (qkv_runtime.diagnosis)."""

from __future__ import annotations

import inspect
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from qkv_runtime import diagnosis, sealed
from qkv_runtime.compare import compare, excerpt, select
from qkv_runtime.limits import Limits
from qkv_runtime.values import exception_text, to_arrays

from .data import limits_of
from .loading import Submission, TimeLimit, captured, tb_frames, time_limit, where_text
from .outcomes import FAIL, PASS, TODO, Outcome, ProblemResult

TEST_SECONDS = Limits().problem_seconds  # the calls of one problem, when the release does not say (the grader's)


def decode(spec: Dict[str, Any]) -> Any:
    if "array" in spec:
        array = np.array(spec["array"], dtype=spec["dtype"])
        return array.reshape(spec["shape"]) if "shape" in spec else array
    return spec["value"]


def _to_track(value: Any, track: str) -> Any:
    if isinstance(value, np.ndarray):
        value = value.copy()  # each call gets inputs no earlier call has touched
        if track == "torch":
            import torch

            return torch.from_numpy(value)
    return value


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array {tuple(value.shape)} {value.dtype}"
    return repr(value)


class PublicCheck:
    """One public test of one code problem; `run(submission)` gives an Outcome."""

    def __init__(self, problem: Dict[str, Any], test: Dict[str, Any], track: str,
                 seconds: Optional[float] = None) -> None:
        self.problem = problem
        self.test = test
        self.track = track
        self.function = problem["function"]
        self.id = f"{problem['id']}::{test['name']}"
        self.seconds = seconds  # the time limit of the call (None: TEST_SECONDS)
        self.builds_on = {u: (f, m) for u, f, m in problem.get("builds_on", [])}

    def __repr__(self) -> str:
        return f"PublicCheck({self.id!r})"

    def _call_text(self, function: Callable, args: List[Any], kwargs: Dict[str, Any]) -> str:
        names: List[str] = []
        try:
            names = [p.name for p in inspect.signature(function).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            pass
        shown = [f"{names[i]}={_describe(a)}" if i < len(names) else _describe(a) for i, a in enumerate(args)]
        shown += [f"{k}={_describe(v)}" for k, v in kwargs.items()]
        return f"input: {self.function}({', '.join(shown)})"

    def timeout_message(self, seconds: float, where: str = "") -> str:
        """The words for a call that ran out of time, in both routes (alarm in process, supervised child)."""
        return (f"took longer than {seconds:g} s while running {self.function}() "
                f"(public test {self.test['name']!r}){where}: an endless loop?")

    def run(self, submission: Any, seconds: Optional[float] = None, limit: Optional[float] = None) -> Outcome:
        """The verdict on one call. `seconds`: its time limit (0: none, the caller supervises); `limit`: the
        limit to name when it runs out (the problem's, when `seconds` is what is left of it)."""
        seconds = (self.seconds if self.seconds is not None else TEST_SECONDS) if seconds is None else seconds
        limit = seconds if limit is None else limit
        if isinstance(submission, dict):
            submission = Submission.from_namespace(submission)
        test, name = self.test, self.test["name"]
        function = submission.namespace.get(self.function)
        if not callable(function):
            return Outcome(FAIL, f"{name}: {self.function} is not defined")
        args = [decode(a) for a in test["args"]]
        kwargs = {k: decode(v) for k, v in test["kwargs"].items()}
        call = self._call_text(function, args, kwargs)
        expect_error = test.get("expect_error")
        filename = getattr(function, "__code__", None) and function.__code__.co_filename
        caught: List[warnings.WarningMessage] = []
        try:
            targs = [_to_track(a, self.track) for a in args]
            tkwargs = {k: _to_track(v, self.track) for k, v in kwargs.items()}
        except ImportError:
            return Outcome(FAIL, f"{name}: this assignment's track is torch: install it first (pip install torch)")
        with captured() as printed:
            try:
                with warnings.catch_warnings(record=True) as caught, time_limit(seconds):
                    warnings.simplefilter("always")
                    value = function(*targs, **tkwargs)
                    outputs = to_arrays(value)
            except NotImplementedError:
                return Outcome(TODO, f"{name}: not implemented yet")
            except TimeLimit as exc:
                return Outcome(FAIL, self.timeout_message(limit, where_text(tb_frames(exc), filename or "")), [call])
            except SystemExit as exc:
                return Outcome(FAIL, f"{name}: called sys.exit({'' if exc.code is None else exc.code}); "
                                     "the grader stops your submission there", [call])
            except Exception as exc:  # noqa: BLE001
                if expect_error and type(exc).__name__ == expect_error:
                    return Outcome(PASS, f"{name}: raised {expect_error} as required")
                text = exception_text(exc, filename or "")
                if expect_error:
                    return Outcome(FAIL, f"{name}: should raise {expect_error}, but raised {text}", [call])
                return Outcome(FAIL, f"{name}: {text}", [call])
        details = [call]
        if printed.getvalue().strip():
            lines = printed.getvalue().strip().splitlines()
            details.append(f"it printed: {lines[0][:100]}" + (f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else ""))
        if expect_error:
            return Outcome(FAIL, f"{name}: should raise {expect_error}", details)
        if isinstance(outputs, str):
            return Outcome(FAIL, f"{name}: {outputs}", details)
        got = select(outputs, test["output"])
        want = [decode(e) for e in test["expected"]]
        tol = test["tolerance"]
        mismatch = compare(got, want, tol["abs"], tol["rel"])
        notes = [f"warning: {w.category.__name__}: {w.message}" for w in caught[:2]]
        if mismatch is None:
            return Outcome(PASS, name, notes)
        details += [f"expected: {' | '.join(excerpt(w) for w in want)}",
                    f"got:      {' | '.join(excerpt(g) for g in got)}"] + notes
        named = self.misconception(got, submission.shown)
        if named is None:
            return Outcome(FAIL, f"{name}: {mismatch.reason}", details)
        pid = self.problem["id"]
        submission.shown[pid] = submission.shown.get(pid, frozenset()) | diagnosis.shown([(named.mistake, named.cause)])
        function, messages = self.builds_on[named.cause] if named.cause else ("", self.problem["misconceptions"])
        details.append(f"(common mistake{' of ' + function if function else ''}: {named.mistake})")
        message = messages.get(named.mistake, named.mistake)
        return Outcome(FAIL, f"{name}: " + diagnosis.mistake_text(  # the grader's words
            named, self.function, message, mismatch.reason, function), details, [message])

    def misconception(self, outputs: Sequence[np.ndarray],
                      shown: Optional[Dict[str, frozenset]] = None) -> Optional[diagnosis.Named]:
        """The mistake whose output (to 6 decimals) this is, if any, in the grader's order (diagnosis.name_mistake):
        one of a function this one builds on that its own checks showed (`shown`: {problem: mistakes}), this
        function's own, or one of a function built on, inside this one."""
        shown = shown or {}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                digest = sealed.outputs_digest([np.asarray(o, dtype=float) for o in outputs])
        except (TypeError, ValueError):
            return None
        upstream = self.test.get("upstream", {})
        return diagnosis.name_mistake(lambda outputs: outputs == digest, self.test.get("mutants", {}),
                                      [(u, upstream[u]) for u in self.builds_on if u in upstream],
                                      lambda problem, mistake: mistake in shown.get(problem, ()),
                                      shown.get(self.problem["id"], ()))


def public_checks(data: Dict[str, Any]) -> List[PublicCheck]:
    """Every public test of every code problem, in assignment order, each under the problem's time limit."""
    seconds = limits_of(data).problem_seconds
    return [PublicCheck(p, t, data["track"], seconds) for p in data["problems"] if p["code"]
            for t in p["public_tests"]]


def code_result(problem: Dict[str, Any], outcomes: List[Outcome], note: str = "") -> ProblemResult:
    """A code problem's result from its tests' outcomes (both routes)."""
    if outcomes and all(o.status == TODO for o in outcomes):
        outcomes = [Outcome(TODO, f"{problem['function']}: not implemented yet")]
    hidden = f"hidden tests: {problem['hidden_tests']} more, run at grading" if problem.get("hidden_tests") else ""
    return ProblemResult(problem, outcomes, "; ".join(n for n in (note, hidden) if n))


def run_code_problem(data: Dict[str, Any], problem: Dict[str, Any], submission: Submission,
                     alarm: bool = True, before: Optional[Callable[[PublicCheck], None]] = None,
                     after: Optional[Callable[[Outcome], None]] = None) -> ProblemResult:
    """The public tests of one code problem, here, in this Python: all of them within the problem's time
    (the grader's problem_seconds) by an alarm, or (alarm=False) under a supervisor's watch."""
    limit = limits_of(data).problem_seconds
    start = time.monotonic()
    outcomes: List[Outcome] = []
    for check in [PublicCheck(problem, t, data["track"], limit) for t in problem["public_tests"]]:
        if before is not None:
            before(check)
        left = limit - (time.monotonic() - start)
        if alarm and left <= 0:
            outcome = Outcome(FAIL, f"{check.test['name']}: not run: the problem's {limit:g} s ran out before it")
        else:
            outcome = check.run(submission, seconds=left if alarm else 0, limit=limit)
        outcomes.append(outcome)
        if after is not None:
            after(outcome)
    return code_result(problem, outcomes)
