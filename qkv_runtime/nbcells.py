"""What the nbgrader test cells run: the tests of one function, or the check of one written answer.

`qkv build` embeds this runtime in a locked cell of the nbgrader source notebook; each
test cell then builds a `CodeTests` or a `WrittenAnswer` over the notebook's globals
and ends with `score()`, whose value nbgrader reads as the points earned. Outputs are
judged with `compare`, answers read with `answers` and judged with `judge`, return
values and ANSWERS made plain with `values`: the rules of `qkv grade`, not a copy of
them. A failed test names its mistake with `diagnosis`, in `qkv grade`'s words; a
mistake of a function it builds on counts first when that function's own test cell,
run earlier in the notebook, showed it.

Every test cell runs this module afresh (autograder/assemble/nbgrader_source.py), so
the classes a cell uses are never ones a student's cell could have reached; what one
cell hands the next (`SHOWN`) goes through `carry_over`, which takes plain data only.

Student calls run with warnings, NumPy floating-point warnings and stderr (Python and
file-descriptor level) captured, because nbgrader gives 0 to a test cell that writes
to stderr, and a warning is not a mistake.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import sys
import tempfile
import warnings
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import answers, judge
from .compare import compare, select
from .diagnosis import mistake_text, name_mistake, shown, written_mistake_text, written_mistakes
from .values import exception_text, plain_answers, to_arrays, to_track


def array(dtype: str, shape: Sequence[int], data: str) -> np.ndarray:
    """An array of a test: its exact bytes, base64-encoded."""
    return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(tuple(shape)).copy()


@contextlib.contextmanager
def _fd_stderr():
    """Send what is written straight to file descriptor 2 (C code, sys.__stderr__) to a scratch file."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            try:
                if sys.__stderr__ is not None:
                    sys.__stderr__.flush()
            except Exception:  # noqa: BLE001 - a closed or replaced stream
                pass
            os.dup2(saved, 2)
            os.close(saved)


@contextlib.contextmanager
def _quiet(notes: List[str]):
    """Warnings and stderr of the code inside become notes (shown on stdout), never stderr output."""
    captured = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"), \
            contextlib.redirect_stderr(captured), _fd_stderr():
        warnings.simplefilter("always")
        try:
            yield
        finally:
            notes.extend(f"{w.category.__name__}: {w.message}" for w in caught)
            if captured.getvalue().strip():
                notes.append("wrote to stderr: " + captured.getvalue().strip()[:200])


def _result(points: float) -> float:
    """The value of a test cell, which nbgrader reads as the points earned. A cell that shows no value
    would get full marks, so switched-off display is an error (0 points), not a silent pass."""
    try:
        from IPython import get_ipython
    except ImportError:
        return points
    shell = get_ipython()
    plain = shell.display_formatter.formatters.get("text/plain") if shell is not None else None
    if shell is not None and (shell.ast_node_interactivity == "none" or plain is None or not plain.enabled
                              or "text/plain" not in shell.display_formatter.active_types):
        raise RuntimeError("this cell's result cannot be shown (display is switched off), so it cannot be graded")
    return points


# the mistakes each problem's test cell showed, for the cells of the functions built on it (run later)
SHOWN: Dict[str, frozenset] = {}


def carry_over(previous: Any) -> None:
    """SHOWN of the copy of this module the previous test cell ran on. A student's cell may have put anything
    there: only str ids and frozensets of str are taken, so none of its objects runs in this cell's tests."""
    kept = previous.__dict__.get("SHOWN") if type(previous) is type(sys) else None
    if type(kept) is not dict:
        return
    for problem, mistakes in list(kept.items()):
        if type(problem) is str and type(mistakes) is frozenset:
            SHOWN[problem] = frozenset(m for m in mistakes if type(m) is str)


def _print_notes(notes: List[str]) -> None:
    unique = list(dict.fromkeys(notes))
    if unique:
        print("  (ignored for grading) " + "; ".join(unique[:4]) + (" ..." if len(unique) > 4 else ""))


class CodeTests:
    """The tests of one function; score() is the points earned (each test: points * weight / total weight)."""

    def __init__(self, namespace: Dict[str, Any], problem: str, function: str, points: float, tests: int,
                 total_weight: float, track: str = "numpy", mistakes: Optional[Dict[str, str]] = None,
                 builds_on: Optional[List[Any]] = None) -> None:
        """`builds_on`: [problem id, its function, {its mistake: message}] of each problem built on."""
        self.namespace, self.problem, self.function, self.points = namespace, problem, function, points
        self.tests, self.total_weight, self.track = tests, total_weight, track
        self.mistakes = mistakes or {}
        self.builds_on = {p: (f, m) for p, f, m in (builds_on or [])}
        self.named: List[Any] = []
        SHOWN[problem] = frozenset()  # a cell run again starts afresh
        self.run, self.passed, self.earned = 0, 0, 0.0
        self.failures: List[str] = []
        self.notes: List[str] = []

    def check(self, name: str, weight: float, args: list, kwargs: dict, want: Optional[list] = None,
              error: Optional[str] = None, tol: Sequence[float] = (1e-6, 1e-6), output: str = "all",
              mutants: Optional[Dict[str, list]] = None, upstream: Optional[Dict[str, Dict[str, list]]] = None) -> None:
        self.run += 1
        reason = self._judge(args, kwargs, want, error, tol, output, mutants or {}, upstream or {})
        if reason is None:
            self.passed += 1
            self.earned += self.points * weight / self.total_weight
        else:
            self.failures.append(f"{name}: {reason}")

    def _judge(self, args, kwargs, want, error, tol, output, mutants, upstream) -> Optional[str]:
        function = self.namespace.get(self.function)
        if not callable(function):
            return f"{self.function} is not defined: run its cell first"
        with _quiet(self.notes):
            try:
                value = function(*[to_track(a, self.track) for a in args],
                                 **{k: to_track(v, self.track) for k, v in kwargs.items()})
            except Exception as err:  # noqa: BLE001 - the student's exception is the test's result
                if error is not None and type(err).__name__ == error:
                    return None
                text = exception_text(err, limit=200)
                return f"should raise {error}, but raised {text}" if error else text
            if error is not None:
                return f"should raise {error}"
            outputs = to_arrays(value)
            if isinstance(outputs, str):
                return outputs
            got = select(outputs, output)
            mismatch = compare(got, want, tol[0], tol[1])
            if mismatch is None:
                return None
            named = name_mistake(lambda outputs: compare(got, outputs, tol[0], tol[1]) is None, mutants,
                                 [(p, upstream[p]) for p in self.builds_on if p in upstream],
                                 lambda p, m: m in SHOWN.get(p, ()), SHOWN.get(self.problem, ()))
            if named is None:
                return mismatch.reason
            self.named.append((named.mistake, named.cause))
            SHOWN[self.problem] = shown(self.named)
            function, messages = self.builds_on.get(named.cause, ("", self.mistakes)) if named.cause else ("", self.mistakes)
            return mistake_text(named, self.function, messages.get(named.mistake, named.mistake), mismatch.reason,
                                function)

    def score(self) -> float:
        earned = min(self.points, round(self.earned, 4))
        print(f"{self.function}: {self.passed} of {self.run} tests passed")
        for failure in self.failures:
            print("  failed " + failure)
        _print_notes(self.notes)
        if self.run < self.tests:
            print(f"  {self.tests - self.run} hidden test(s) run when this is graded")
        return _result(earned)


class WrittenAnswer:
    """A written answer, ANSWERS[problem], read with the rules of `qkv grade`; score() is the points earned."""

    def __init__(self, namespace: Dict[str, Any], problem: str, points: float) -> None:
        # plain data, as qkv grade reads ANSWERS: a student's object (one equal to anything) never meets the answer
        self.answer = plain_answers(namespace.get("ANSWERS")).get(problem)
        self.problem, self.points = problem, points
        self.checks, self.right = 0, 0
        self.messages: List[str] = []
        self.matched: List[Any] = []  # (mistake, part): a wrong part that is the mistake's answer (as qkv grade)
        self.notes: List[str] = []
        if self._unanswered():
            print(f"ANSWERS[{problem!r}] is not set yet")

    def _unanswered(self) -> bool:
        return judge.unanswered(self.answer)

    def _judge(self, label: str, check) -> None:
        self.checks += 1
        if self._unanswered():
            return
        with _quiet(self.notes):
            try:
                ok = check()
            except answers.AnswerFormatError as err:
                self.messages.append(f"{label}: {err}")
                return
        if ok:
            self.right += 1
        else:
            self.messages.append(f"{label}: not the answer")

    def number(self, part: str, want: Any, tol_abs: float, tol_rel: float, single: bool = False,
               symbols: Optional[Dict[str, int]] = None, mistakes: Optional[Dict[str, Any]] = None) -> None:
        """`mistakes`: {message: this part's answer by that misconception's wrong method}."""
        def close_to(value: Any) -> bool:
            typed = judge.part_of(self.answer, part, single)
            if typed is None:
                raise answers.AnswerFormatError("not answered")
            w = np.asarray(value, dtype=float)
            got = answers.parse_numbers(typed, w.size, symbols)
            if got.size == w.size and got.shape != w.shape:
                got = got.reshape(w.shape)
            return judge.close(got, w, tol_abs, tol_rel)

        right = self.right
        self._judge(part, lambda: close_to(want))
        if self.right == right and not self._unanswered():
            with _quiet(self.notes):
                for message, value in (mistakes or {}).items():
                    try:
                        if close_to(value):
                            self.matched.append((message, part))
                    except answers.AnswerFormatError:
                        break

    def _part(self, key: Optional[str]) -> Any:
        """The whole answer, or (`key`) one entry of it, such as a true/false problem's "follow_up"."""
        if key is None:
            return self.answer
        typed = judge.part_of(self.answer, key, False)
        if judge.blank(typed):
            raise answers.AnswerFormatError("not answered")
        return typed

    def shape(self, want: Sequence[str], symbols: Dict[str, int], key: Optional[str] = None) -> None:
        def check() -> bool:
            typed = self._part(key)
            return tuple(answers.evaluate_dim(d, symbols) for d in answers.parse_shape(typed)) == tuple(want)
        self._judge(key or "shape", check)

    def truth(self, want: bool) -> None:
        typed = judge.part_of(self.answer, "answer", True)  # a bare value is the verdict alone
        self._judge("answer", lambda: answers.parse_bool(typed) == want)

    def choice(self, want: str, choices: int, key: Optional[str] = None) -> None:
        """`want`: the right letter in the order this notebook shows (the class-wide one)."""
        self._judge(key or "answer", lambda: answers.parse_choice(self._part(key), choices) == want)

    def score(self) -> float:
        _print_notes(self.notes)
        if self.checks == 0:
            print("checked when this is graded")
            return _result(0.0)
        if self._unanswered():
            print(f"ANSWERS[{self.problem!r}] is not set")
            return _result(0.0)
        print(f"{self.problem}: {self.right} of {self.checks} correct")
        for message in self.messages + [written_mistake_text(m) for m in written_mistakes(self.matched)]:
            print("  " + message)
        return _result(min(self.points, round(self.points * self.right / self.checks, 4)))
