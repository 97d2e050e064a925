"""Offline self-check of a qkv assignment: your file in, a verdict on every problem out.

    python qkv_check.py attention_numpy.py               # a .py submission
    python qkv_check.py attention_numpy.ipynb            # a notebook (no Jupyter needed)
    python qkv_check.py --student s1234567 --show        # your own numbers (per-student assignments)

In a notebook: `from qkv_check import check, show`, then `check("problem-id")`,
`check()` for everything, `show("problem-id")` for your numbers.

Needs only numpy (and torch for a torch-track assignment), `qkv_runtime/` and
`selfcheck.json` beside this file. No network. Your code runs here, in your own
Python, exactly as you wrote it.

Code problems: the public tests, with the messages the grader gives (the input,
expected vs your output, the largest error, the name of a common mistake when your
output is that mistake's). Written problems: right or wrong, decided by opening
answers sealed under scrypt keys (slow to derive on purpose, so guessing them one
by one takes hours), so the answers are not in this folder in clear. Hidden tests are run only when you
are graded: passing here is necessary, not sufficient.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.dirname(
        os.path.realpath(__file__)):
    # Python puts this script's folder first: a student's numbers.py or random.py there would stand in for the
    # standard library's (numpy imports both); last, the folder still holds qkv_runtime
    sys.path.append(sys.path.pop(0))

import argparse
import contextlib
import inspect
import io
import itertools
import json
import signal
import threading
import time
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

HERE = Path(__file__).resolve().parent
if not __package__ and str(HERE) not in sys.path:  # in a student release, the runtime lies beside this file
    sys.path.insert(0, str(HERE))

from qkv_runtime import answers as qkv_answers  # noqa: E402 - after the path is set
from qkv_runtime import diagnosis, judge, sealed  # noqa: E402
from qkv_runtime.compare import compare, excerpt, select  # noqa: E402
from qkv_runtime.limits import Limits  # noqa: E402
from qkv_runtime.notebook import NotebookError, program_steps, read_cells, run_steps  # noqa: E402
from qkv_runtime.values import exception_text, plain, plain_answers, to_arrays  # noqa: E402

DATA_FILE = "selfcheck.json"
DATA_FORMAT = sealed.FORMAT
NO_KDF = ("not checked: this Python's hashlib has no scrypt (built with LibreSSL, as Apple's /usr/bin/python3 is); "
          "check with a Python from python.org, Homebrew or conda")
TEST_SECONDS = Limits().problem_seconds  # the calls of one problem, when the release does not say (the grader's)
LOAD_SECONDS = 60  # loading in this process (pytest route, library calls), where torch may still be imported
CLASS = "*"  # the student key of class-wide variants
USAGE_ERROR = 2

PASS, FAIL, TODO = "pass", "fail", "not answered"
_loading = threading.local()  # set while this module runs a submission's top level


class UsageError(Exception):
    """Bad command line or missing file: one line for the user, exit code 2."""


class _TimeLimit(BaseException):
    """Raised by the alarm in the middle of student code (BaseException: `except Exception` can't eat it)."""


# ---------------------------------------------------------------- data


def load_data(path: Any = None) -> Dict[str, Any]:
    """The release's self-check data (selfcheck.json)."""
    path = Path(path) if path else HERE / DATA_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: not found; {DATA_FILE} comes with the assignment's release") from None
    except ValueError as err:
        raise UsageError(f"{path}: damaged ({err}); download the release again") from None
    if not isinstance(data, dict) or data.get("format") != DATA_FORMAT:
        raise UsageError(f"{path}: format {data.get('format') if isinstance(data, dict) else '?'} is not "
                         f"{DATA_FORMAT}; this qkv_check.py belongs to another release")
    wrong = sealed.kdf_problem(data.get("kdf"))
    if wrong:
        raise UsageError(f"{path}: damaged ({wrong}); download the release again")
    return data


def limits_of(data: Dict[str, Any]) -> Limits:
    """The grader's limits for this assignment (selfcheck.json carries the bundle's)."""
    return Limits.from_json(data.get("limits"))


def _problem(data: Dict[str, Any], problem_id: str) -> Dict[str, Any]:
    for problem in data["problems"]:
        if problem["id"] == problem_id:
            return problem
    known = ", ".join(p["id"] for p in data["problems"])
    raise UsageError(f"no problem {problem_id!r} in this assignment (problems: {known})")


# ---------------------------------------------------------------- outcomes


class Outcome:
    """One verdict: `passed`, `status` (pass / fail / not answered) and a message for the student."""

    def __init__(self, status: str, message: str, details: Optional[List[str]] = None) -> None:
        self.status = status
        self.message = message
        self.details = details or []

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def lines(self) -> List[str]:
        mark = {PASS: "PASS", FAIL: "FAIL", TODO: "TODO"}[self.status]
        return [f"  {mark}  {self.message}"] + [f"        {d}" for d in self.details]

    def __repr__(self) -> str:
        return f"Outcome({self.status!r}, {self.message!r})"


class ProblemResult:
    def __init__(self, problem: Dict[str, Any], outcomes: List[Outcome], note: str = "") -> None:
        self.problem = problem
        self.outcomes = outcomes
        self.note = note

    @property
    def status(self) -> str:
        """fail if anything fails, pass if everything passes, else not answered (yet)."""
        if any(o.status == FAIL for o in self.outcomes):
            return FAIL
        if self.outcomes and all(o.status == PASS for o in self.outcomes):
            return PASS
        return TODO

    def summary(self) -> str:
        unit = "public tests" if self.problem["code"] else "parts"
        passed = sum(o.passed for o in self.outcomes)
        if self.status == TODO and not passed:
            return TODO
        if len(self.outcomes) > 1:
            return f"{self.status} ({passed}/{len(self.outcomes)} {unit})"
        return self.status

    def lines(self) -> List[str]:
        p = self.problem
        out = [f"[{p['id']}] {p['title']} ({_points(p['points'])})"]
        for outcome in self.outcomes:
            out.extend(outcome.lines())
        if self.note:
            out.append(f"        {self.note}")
        return out


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


# ---------------------------------------------------------------- submissions


class Submission:
    """The names a student's file or notebook defines, and what went wrong while running it."""

    def __init__(self, namespace: Dict[str, Any], source: str, kind: str,
                 load_error: Optional[str] = None, cell_errors: Optional[List[str]] = None,
                 skipped: Optional[List[str]] = None, printed: str = "") -> None:
        self.namespace = namespace
        self.source = source
        self.kind = kind  # "py", "ipynb" or "namespace"
        self.load_error = load_error
        self.cell_errors = cell_errors or []
        self.skipped = skipped or []
        self.printed = printed
        # the mistakes each problem's checks showed, which confirm them in the problems built on, checked later
        # (the assignment's order puts what a problem builds on first)
        self.shown: Dict[str, frozenset] = {}

    @classmethod
    def from_namespace(cls, namespace: Dict[str, Any], source: str = "this notebook") -> "Submission":
        return cls(namespace, source, "namespace")

    @property
    def student_id(self) -> str:
        value = self.namespace.get("STUDENT_ID", "")
        return value.strip() if isinstance(value, str) else ""

    @property
    def answers(self) -> Dict[str, Any]:
        return plain_answers(self.namespace.get("ANSWERS"))


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Interrupt student code after `seconds` (POSIX main thread only; elsewhere no limit)."""
    if (not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
            or seconds <= 0):
        yield
        return

    def on_alarm(signum, frame):
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _captured():
    """Collect what student code prints, so the report stays readable."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        yield buffer


@contextlib.contextmanager
def _loading_submission(folder: Path):
    """While a submission's top level runs: check()/show() do nothing, its folder is importable."""
    _loading.active = True
    added = str(folder) not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        _loading.active = False
        if added and str(folder) in sys.path:
            sys.path.remove(str(folder))


def _where(frames: List[Tuple[str, int]], filename: str) -> str:
    """', at line N' (or ', at cell N, line M'): the innermost of `frames` ([(file, line)], outermost
    first) in the student's file or notebook cells; '' when none is."""
    where = judge.position(frames, filename)
    return f", at {where}" if where else ""


def _tb_frames(exc: BaseException) -> List[Tuple[str, int]]:
    import traceback

    return [(frame.f_code.co_filename, lineno) for frame, lineno in traceback.walk_tb(exc.__traceback__)]


def load_message(seconds: float, kind: str, where: str = "") -> str:
    if kind == "ipynb":
        return f"the notebook took longer than {seconds:g} s to run{where} (an endless loop?)"
    return f"loading took longer than {seconds:g} s{where} (an endless loop at the top level?)"


def _load_py(path: Path, seconds: float) -> Submission:
    source = path.read_text(encoding="utf-8", errors="replace")
    module = types.ModuleType("submission")
    module.__file__ = str(path)
    namespace = module.__dict__
    error = None
    with _loading_submission(path.parent), _captured() as printed:
        try:
            with _time_limit(seconds):
                exec(compile(source, str(path), "exec"), namespace)
        except _TimeLimit as exc:
            error = load_message(seconds, "py", _where(_tb_frames(exc), str(path)))
        except SystemExit as exc:
            error = f"called sys.exit({'' if exc.code is None else exc.code}) while loading"
        except BaseException as exc:  # noqa: BLE001 - any failure of the student's file is reported
            if isinstance(exc, KeyboardInterrupt):
                raise
            error = exception_text(exc, str(path))
    return Submission(namespace, path.name, "py", load_error=error, printed=printed.getvalue())


def _load_ipynb(path: Path, seconds: float) -> Submission:
    """Run a notebook's code cells from the top, as the grader and Jupyter do (qkv_runtime.notebook)."""
    try:
        steps = program_steps(read_cells(path.read_text(encoding="utf-8", errors="replace")))
    except NotebookError as err:
        raise UsageError(f"{path}: not a Jupyter notebook ({err})") from None
    namespace: Dict[str, Any] = {"__name__": "__main__", "__file__": str(path)}
    skipped = [f"cell {s.cell}: {s.note}" for s in steps if s.action == "skip"]
    with _loading_submission(path.parent), _captured() as printed:
        with _time_limit(seconds):
            try:
                errors = run_steps(steps, namespace, reraise=(KeyboardInterrupt, _TimeLimit))
            except _TimeLimit as exc:
                errors = [load_message(seconds, "ipynb", _where(_tb_frames(exc), str(path)))]
    return Submission(namespace, path.name, "ipynb", cell_errors=errors, skipped=skipped, printed=printed.getvalue())


def _submission_path(path: Any) -> Path:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    if path.suffix not in (".py", ".ipynb"):
        raise UsageError(f"{path}: expected a .py file or a .ipynb notebook")
    if path.suffix == ".ipynb":
        try:
            read_cells(path.read_text(encoding="utf-8", errors="replace"))
        except NotebookError as err:
            raise UsageError(f"{path}: not a Jupyter notebook ({err})") from None
    return path


def load_submission(path: Any, seconds: Optional[float] = None) -> Submission:
    """Run a student's .py or .ipynb here, in this Python, and collect what it defines.

    `seconds`: the time limit of loading (an alarm, POSIX main thread only; 0 for none), by default
    LOAD_SECONDS. The command line runs this in a supervised child instead (`supervise`).
    """
    path = _submission_path(path)
    seconds = LOAD_SECONDS if seconds is None else seconds
    return _load_py(path, seconds) if path.suffix == ".py" else _load_ipynb(path, seconds)


# ---------------------------------------------------------------- code problems


def _decode(spec: Dict[str, Any]) -> Any:
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
        args = [_decode(a) for a in test["args"]]
        kwargs = {k: _decode(v) for k, v in test["kwargs"].items()}
        call = self._call_text(function, args, kwargs)
        expect_error = test.get("expect_error")
        filename = getattr(function, "__code__", None) and function.__code__.co_filename
        caught: List[warnings.WarningMessage] = []
        try:
            targs = [_to_track(a, self.track) for a in args]
            tkwargs = {k: _to_track(v, self.track) for k, v in kwargs.items()}
        except ImportError:
            return Outcome(FAIL, f"{name}: this assignment's track is torch: install it first (pip install torch)")
        with _captured() as printed:
            try:
                with warnings.catch_warnings(record=True) as caught, _time_limit(seconds):
                    warnings.simplefilter("always")
                    value = function(*targs, **tkwargs)
                    outputs = to_arrays(value)
            except NotImplementedError:
                return Outcome(TODO, f"{name}: not implemented yet")
            except _TimeLimit as exc:
                return Outcome(FAIL, self.timeout_message(limit, _where(_tb_frames(exc), filename or "")), [call])
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
        want = [_decode(e) for e in test["expected"]]
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
        return Outcome(FAIL, f"{name}: " + diagnosis.mistake_text(  # the grader's words
            named, self.function, messages.get(named.mistake, named.mistake), mismatch.reason, function), details)

    def misconception(self, outputs: List[np.ndarray],
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
                                      lambda problem, mistake: mistake in shown.get(problem, ()))


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


# ---------------------------------------------------------------- written problems


def _derive(data: Dict[str, Any], password: str, salt: str) -> bytes:
    """One slow key (sealed.derive_key, with the release's parameters): what each candidate costs."""
    return sealed.derive_key(password, salt, data["kdf"])


def _answer_key(data: Dict[str, Any], student: str, problem: Dict[str, Any], canonical: str) -> bytes:
    salt = sealed.digest_salt(data["assignment"], student, problem["id"], "answer")
    return _derive(data, sealed.answer_password(canonical), salt)


def _hits(key: bytes, seals: List[Tuple[str, Any]], typed: List[float], tol_abs: float, tol_rel: float) -> set:
    """The labels among `seals` ([(label, {"tag", "sealed"})]) whose key this is and whose exact values
    the typed numbers are within the grader's tolerance of."""
    found = set()
    for label, seal in seals:
        if sealed.tag(key, label) != seal["tag"]:
            continue
        if judge.close(typed, sealed.unseal(key, label, seal["sealed"]), tol_abs, tol_rel):
            found.add(label)
    return found


def match_numbers(data: Dict[str, Any], student: str, problem: Dict[str, Any], part: Dict[str, Any],
                  spec: Dict[str, Any], typed: np.ndarray, mistakes: List[Dict[str, Any]]) -> Tuple[bool, List[str]]:
    """(whether the typed numbers are right, by the grader's rule, and the labels of the mistakes they are).

    For each candidate cell (tuple of cells) the grader's window around the typed numbers touches,
    one key; a key that opens a tag unseals the exact value, which the grader's rule then judges.
    At most sealed.most_keys(size) keys; a right answer stops the search.
    """
    tol = part["tolerance"]
    tol_abs, tol_rel = float(tol["abs"]), float(tol["rel"])
    flat = [float(x) for x in typed.reshape(-1)]
    sizes = [float(s) for s in spec["cells"]]
    if len(sizes) != len(flat):
        return False, []
    candidates = [sealed.candidate_cells(x, size, tol_abs, tol_rel) for x, size in zip(flat, sizes)]
    if any(not c for c in candidates):
        return False, []
    name = part["name"]
    labelled = [("right", spec["right"])] + [(m["label"], m["digests"][name]) for m in mistakes if name in m["digests"]]
    labels = [label for label, _ in labelled[1:]]

    def salt(suffix: str) -> str:
        return sealed.digest_salt(data["assignment"], student, problem["id"], name + suffix)

    if spec["mode"] == "whole":
        seals = [(label, s[0]) for label, s in labelled]
        found: set = set()
        for combo in itertools.product(*candidates):
            key = _derive(data, sealed.cell_password(sizes, typed.shape, combo), salt(""))
            hits = _hits(key, seals, flat, tol_abs, tol_rel)
            if "right" in hits:
                return True, []
            found |= hits
        return False, [label for label in labels if label in found]

    # "each": entry by entry, x's own cell first; an entry found right is not searched further
    per_entry: List[set] = []
    left: List[List[int]] = []
    for i, (x, cells) in enumerate(zip(flat, candidates)):
        seals = [(label, s[i]) for label, s in labelled]
        found = set()
        for n, cell in enumerate(cells):
            found |= _hits(_derive(data, sealed.cell_password([sizes[i]], (), [cell]), salt(f"[{i}]")),
                           seals, [x], tol_abs, tol_rel)
            if "right" in found:
                break
        per_entry.append(found)
        left.append(cells[n + 1:])
    if all("right" in found for found in per_entry):
        return True, []
    if labels:  # wrong: finish the entries cut short, so that a mistake every entry is can be named
        for i, cells in enumerate(left):
            seals = [(label, s[i]) for label, s in labelled[1:]]
            for cell in cells:
                per_entry[i] |= _hits(_derive(data, sealed.cell_password([sizes[i]], (), [cell]), salt(f"[{i}]")),
                                      seals, [flat[i]], tol_abs, tol_rel)
    return False, [label for label in labels if all(label in found for found in per_entry)]


def _numeric(data, problem, student, typed, who="") -> List[Outcome]:
    parts = problem["parts"]
    specs = problem["digests"][student]
    mistakes = problem.get("misconceptions", {}).get(student, [])
    if len(parts) > 1 and not isinstance(typed, dict):
        names = ", ".join(f'"{p["name"]}": ...' for p in parts)
        return [Outcome(FAIL, f"expected a dictionary with one entry per part: {{{names}}}")]
    outcomes = []
    for part in parts:
        label, value = part["label"], judge.part_of(typed, part["name"], len(parts) == 1)
        if judge.blank(value):
            outcomes.append(Outcome(TODO, f"{label}: not answered yet"))
            continue
        size = int(np.prod(part["shape"])) if part["shape"] else 1
        try:
            got = qkv_answers.parse_numbers(value, size)
        except qkv_answers.AnswerFormatError as err:
            outcomes.append(Outcome(FAIL, f"{label}: {err}"))
            continue
        if got.size != size:
            outcomes.append(Outcome(FAIL, f"{label}: {qkv_answers.wrong_count(size, got.size, value)}"))
            continue
        got = got.reshape(part["shape"])  # a flat list for a matrix, or [x] for a scalar, is fine
        right, named = match_numbers(data, student, problem, part, specs[part["name"]], got, mistakes)
        if right:
            outcomes.append(Outcome(PASS, f"{label}: correct"))
            continue
        messages = {m["label"]: m["message"] for m in mistakes}
        details = [f"common mistake: {messages[h]}" for h in named]
        tol = part["tolerance"]
        outcomes.append(Outcome(FAIL, f"{label}: {qkv_answers.not_close(tol['abs'], tol['rel'])}", details))
    return outcomes


def _answer_verdict(data, problem, student, canonical: str, entry=None, salted=None) -> Tuple[bool, Optional[str]]:
    """(right?, the message of the mistake it is) for a shape, true/false or choice id: one key. `entry` is the
    part of the problem's data that holds the digests (a follow-up's), `salted` the id its salt names."""
    entry = problem if entry is None else entry
    key = _answer_key(data, student, {"id": salted or problem["id"]}, canonical)
    if sealed.tag(key, "right") == entry["digests"][student]["answer"]:
        return True, None
    for mistake in entry.get("misconceptions", {}).get(student, []):
        if sealed.tag(key, "mistake") == mistake["digests"]["answer"]:
            return False, mistake["message"]
    return False, None


def _shape(data, problem, student, typed, who="") -> List[Outcome]:
    try:
        dims = tuple(qkv_answers.evaluate_dim(d, problem["symbols"]) for d in qkv_answers.parse_shape(typed))
    except qkv_answers.AnswerFormatError as err:
        return [Outcome(FAIL, str(err))]
    right, mistake = _answer_verdict(data, problem, student, "x".join(dims))
    if right:
        return [Outcome(PASS, "correct shape")]
    return [Outcome(FAIL, mistake or qkv_answers.not_the_shape(typed))]


def _letter_to_id(entry: Dict[str, Any], who: str, typed: Any) -> str:
    """The id of the choice whose letter, in this student's own order (the class's when none), was typed."""
    orders = entry["orders"]
    order = orders.get(who) or orders[CLASS]
    return judge.choice_at(order, qkv_answers.parse_choice(typed, len(order)))


def _choice_outcome(data, problem, student, typed, who, entry=None, salted=None, label="") -> Outcome:
    entry = problem if entry is None else entry
    try:
        got = _letter_to_id(entry, who, typed)
    except qkv_answers.AnswerFormatError as err:
        return Outcome(FAIL, label + str(err))
    right, mistake = _answer_verdict(data, problem, student, got, entry, salted)
    if right:
        return Outcome(PASS, label + "correct")
    return Outcome(FAIL, label + (mistake or qkv_answers.not_the_choice(typed)))


def _follow_up(data, problem, student, typed, who) -> Outcome:
    follow = problem["follow_up"]
    label = "follow-up: "
    if judge.blank(typed):
        return Outcome(TODO, label + "not answered yet")
    salted = problem["id"] + "/follow_up"
    if follow["form"] == "choice":
        return _choice_outcome(data, problem, CLASS, typed, who, follow, salted, label)
    if follow["form"] == "shape":
        try:
            dims = tuple(qkv_answers.evaluate_dim(d, follow["symbols"]) for d in qkv_answers.parse_shape(typed))
        except qkv_answers.AnswerFormatError as err:
            return Outcome(FAIL, label + str(err))
        right, _ = _answer_verdict(data, problem, CLASS, "x".join(dims), follow, salted)
        return Outcome(PASS, label + "correct shape") if right else \
            Outcome(FAIL, label + qkv_answers.not_the_shape(typed))
    part = follow["part"]
    try:
        got = qkv_answers.parse_numbers(typed, 1)
    except qkv_answers.AnswerFormatError as err:
        return Outcome(FAIL, label + str(err))
    if got.size != 1:
        return Outcome(FAIL, f"{label}expected 1 number, got {got.size}")
    right, _ = match_numbers(data, CLASS, {"id": problem["id"]}, part, follow["digests"][CLASS], got.reshape(()), [])
    tol = part["tolerance"]
    return Outcome(PASS, label + "correct") if right else \
        Outcome(FAIL, label + qkv_answers.not_close(tol["abs"], tol["rel"]))


def _true_false(data, problem, student, typed, who="") -> List[Outcome]:
    verdict_typed = judge.part_of(typed, "answer", True)  # a bare value is the verdict alone
    outcomes = []
    if judge.blank(verdict_typed):
        outcomes.append(Outcome(TODO, "true or false: not answered yet"))
    else:
        try:
            got = qkv_answers.parse_bool(verdict_typed)
        except qkv_answers.AnswerFormatError as err:
            outcomes.append(Outcome(FAIL, "true or false: " + str(err)))
        else:
            if _answer_verdict(data, problem, student, "true" if got else "false")[0]:
                outcomes.append(Outcome(PASS, "true or false: correct"))
            else:
                outcomes.append(Outcome(FAIL, "true or false: the statement is " + ("false" if got else "true")))
    if "follow_up" in problem:
        outcomes.append(_follow_up(data, problem, student, judge.part_of(typed, "follow_up", False), who))
    correction = typed.get("correction") if isinstance(typed, dict) else None
    if isinstance(correction, str) and correction.strip():
        outcomes[-1].details.append("(your written correction is read by your instructor, not by this check)")
    return outcomes


def _choice(data, problem, student, typed, who="") -> List[Outcome]:
    return [_choice_outcome(data, problem, student, typed, who)]


WRITTEN = {"numeric": _numeric, "shape": _shape, "true_false": _true_false, "multiple_choice": _choice}


def roster(data: Dict[str, Any]) -> set:
    """The student ids this release has digests for (per-student assignments)."""
    ids = set(data.get("prompts", {})) | set(data.get("roster", []))
    for problem in data["problems"]:
        ids.update(k for k in problem.get("digests", {}) if k != CLASS)
    return ids


def student_key(data: Dict[str, Any], student: str) -> Tuple[Optional[str], str]:
    """(the key of this student's digests, or None, and why not)."""
    if data["variants"] != "per_student":
        return CLASS, ""
    if not student:
        return None, 'set STUDENT_ID = "your id" in your file (or pass --student ID): your numbers depend on it'
    if student not in roster(data):
        return None, (f"student id {student!r} is not on this assignment's roster: check STUDENT_ID "
                      "(ask your instructor if it is right)")
    return student, ""


def check_written(data: Dict[str, Any], problem: Dict[str, Any], typed: Any, student: str = "") -> List[Outcome]:
    """Verdicts on one written answer, as typed (None: not answered yet)."""
    key, why = student_key(data, student)
    who = key or ""  # the student's own order of choices is theirs even where the digests are the class's
    if key is not None and key not in problem["digests"]:
        key = CLASS if CLASS in problem["digests"] else None
    typed = plain(typed)
    if judge.unanswered(typed):  # the grader's rule
        return [Outcome(TODO, "not answered yet")]
    if key is None:
        return [Outcome(FAIL, why)]
    if not sealed.kdf_available():
        return [Outcome(TODO, NO_KDF)]
    try:
        return WRITTEN[problem["kind"]](data, problem, key, typed, who)
    except qkv_answers.AnswerFormatError as err:  # a parser's message is always a format hint
        return [Outcome(FAIL, str(err))]


# ---------------------------------------------------------------- running and reporting


def check_problem(data: Dict[str, Any], problem: Dict[str, Any], submission: Submission,
                  student: str = "", code_results: Optional[Dict[str, ProblemResult]] = None) -> ProblemResult:
    """One problem's verdicts. Code problems come from `code_results` when given (the supervised child
    ran them), else run here under an alarm."""
    if problem["code"]:
        if code_results is not None:
            return code_results.get(problem["id"]) or ProblemResult(
                problem, [Outcome(FAIL, "not checked: the check stopped before this problem")])
        return run_code_problem(data, problem, submission)
    answers = submission.answers
    return ProblemResult(problem, check_written(data, problem, answers.get(problem["id"]), student))


def run_checks(data: Dict[str, Any], submission: Submission, student: str = "",
               only: Optional[str] = None, code_results: Optional[Dict[str, ProblemResult]] = None
               ) -> List[ProblemResult]:
    problems = [_problem(data, only)] if only else data["problems"]
    student = student or submission.student_id
    return [check_problem(data, p, submission, student, code_results) for p in problems]


def summary_lines(data: Dict[str, Any], results: List[ProblemResult]) -> List[str]:
    width = max([len(r.problem["id"]) for r in results] + [7])
    lines = ["", "Summary", f"  {'problem':<{width}}  {'kind':<15}  {'points':>6}  result"]
    for r in results:
        p = r.problem
        lines.append(f"  {p['id']:<{width}}  {p['kind']:<15}  {p['points']:>6g}  {r.summary()}")
    counts = {s: sum(r.status == s for r in results) for s in (PASS, FAIL, TODO)}
    points = sum(r.problem["points"] for r in results if r.status == PASS)
    total = sum(r.problem["points"] for r in results)
    lines.append(f"  {counts[PASS]} pass, {counts[FAIL]} fail, {counts[TODO]} not answered; "
                 f"problems that pass here are worth {points:g} of {total:g} points")
    code = [p for p in data["problems"] if p["code"]]
    hidden = sum(p.get("hidden_tests", 0) for p in code)
    if code:
        lines.append(f"Hidden tests exist for {len(code)} function{'s' if len(code) != 1 else ''} ({hidden} tests) and "
                     "will be run at grading: passing here is necessary, not sufficient.")
    return lines


def student_id_warning(data: Dict[str, Any], submission: Submission) -> str:
    """A warning when the file does not say whose it is ('' when it does): nothing fails for it here, but
    at grading a file left with the stub's name and no STUDENT_ID is matched to no student."""
    if submission.student_id or submission.load_error:
        return ""
    if data["variants"] == "per_student" and Path(submission.source).stem in roster(data):
        return ""  # named after a roster id, which names the student at grading
    where = "this notebook" if submission.kind == "namespace" else submission.source
    return (f"warning: STUDENT_ID is empty in {where}: unless your hand-in names you, the grader will not know "
            'whose file it is; set STUDENT_ID = "your id" (e.g. "s1234567") and check again')


def report(data: Dict[str, Any], submission: Submission, student: str = "", only: Optional[str] = None,
           summary: bool = True, code_results: Optional[Dict[str, ProblemResult]] = None
           ) -> Tuple[str, List[ProblemResult]]:
    lines: List[str] = []
    warning = student_id_warning(data, submission) if summary else ""  # once, atop the whole report
    if warning:
        lines += [warning, ""]
    if submission.load_error:
        lines += [f"Your file does not load: {submission.load_error}",
                  "The grader cannot load it either, so nothing in it would be graded. Fix this first.", ""]
    if submission.cell_errors:
        lines.append("These cells failed when the notebook ran from the top (they fail at grading too, and what "
                     "they should define is missing there):")
        lines += [f"  {e}" for e in submission.cell_errors] + [""]
    if submission.skipped:
        lines += [f"  {s}" for s in submission.skipped] + [""]
    if submission.load_error:
        results = []
    else:
        results = run_checks(data, submission, student, only, code_results)
        for result in results:
            lines += result.lines()
    if summary:
        lines += summary_lines(data, results) if results else []
    if submission.printed.strip():
        count = len(submission.printed.strip().splitlines())
        lines.append(f"(your {'file' if submission.kind == 'py' else 'notebook'} printed {count} line"
                     f"{'s' if count != 1 else ''} while loading; not shown here)")
    return "\n".join(lines), results


def _print(text: str) -> None:
    try:
        print(text)
    except UnicodeEncodeError:  # a console that cannot show every character
        print(text.encode("ascii", "replace").decode("ascii"))


# ---------------------------------------------------------------- notebook helpers


def check(problem: Optional[str] = None, student: Optional[str] = None) -> None:
    """In a notebook: self-check one problem ("problem-id") or, with no argument, all of them with a summary."""
    if getattr(_loading, "active", False):
        return None  # qkv_check itself is running this notebook
    namespace = sys._getframe(1).f_globals
    try:
        data = load_data()
        submission = Submission.from_namespace(namespace)
        text, _ = report(data, submission, student or "", problem, summary=problem is None)
    except UsageError as err:
        text = f"qkv_check: {err}"
    _print(text)
    return None


def prompt_text(data: Dict[str, Any], student: str, problem: Optional[str] = None) -> str:
    if data["variants"] != "per_student":
        return "Everyone has the same numbers in this assignment: the prompts are in PROBLEMS.md and the notebook."
    key, why = student_key(data, student)
    if key is None:
        raise UsageError(why)
    prompts = data.get("prompts", {}).get(key, {})
    if problem is not None:
        _problem(data, problem)
        if problem not in prompts:
            return f"{problem} is the same for everyone: see PROBLEMS.md."
        prompts = {problem: prompts[problem]}
    return "\n\n".join(f"## {pid} (for {key})\n\n{text.strip()}" for pid, text in prompts.items())


def show(problem: Optional[str] = None, student: Optional[str] = None) -> None:
    """In a notebook: print your own numbers for a per-student problem (all of them with no argument)."""
    if getattr(_loading, "active", False):
        return None
    namespace = sys._getframe(1).f_globals
    student = student or Submission.from_namespace(namespace).student_id
    try:
        data = load_data()
        text = prompt_text(data, student, problem)
    except UsageError as err:
        _print(f"qkv_check: {err}")
        return None
    if data["variants"] != "per_student":
        _print(text)
        return None
    try:  # rendered Markdown in Jupyter, plain text elsewhere
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return None
    except ImportError:
        pass
    _print(text)
    return None


# ---------------------------------------------------------------- supervised runs (the command line)
#
# The command line never runs student code in its own process: a child (this file, in worker mode,
# with the same Python) loads the file and runs the public tests, and says on a pipe, one JSON line
# each, what it starts and what came of it. The parent holds the grader's time limits: when the child
# takes longer than load_seconds to load, or than problem_seconds for one problem's calls, it is
# killed (an endless loop, even one that catches BaseException or sits in a C call, cannot stop
# that) and a fresh child goes on with the problems left. No fork, no signals in the parent:
# subprocess and threads, so Linux, macOS and Windows alike.

WORKER = "--qkv-worker"
START_SECONDS = 120.0  # for the child's Python to start (numpy, torch on a torch track), before any limit
BETWEEN_SECONDS = 60.0  # between two problems the child runs only the self-check's own code
DUMP_GRACE_SECONDS = 0.3  # after a limit, for the child's traceback dump (faulthandler) to arrive
STDERR_KEEP = 64 * 1024
PRINTED_KEEP = 100 * 1024


def _outcome_json(outcome: Outcome) -> Dict[str, Any]:
    return {"status": outcome.status, "message": outcome.message, "details": outcome.details}


def _outcome_from(event: Any) -> Optional[Outcome]:
    item = event.get("outcome") if isinstance(event, dict) else None
    if not isinstance(item, dict) or item.get("status") not in (PASS, FAIL, TODO):
        return None
    details = item.get("details") if isinstance(item.get("details"), list) else []
    return Outcome(item["status"], str(item.get("message", "")), [str(d) for d in details])


def _worker(path: str, data_path: str, skip: List[str]) -> int:
    """Worker mode: load the file, run the public tests of the code problems not in `skip`, and say so."""
    import faulthandler

    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the pipe to the parent; not inheritable
    os.dup2(2, 1)  # whatever student code writes to fd 1 lands in stderr, never on the channel

    def send(event: Dict[str, Any]) -> None:
        channel.write(json.dumps(event) + "\n")
        channel.flush()

    data = load_data(data_path)
    limits = limits_of(data)
    if data.get("track") == "torch":  # imported before the clock runs, as the grader's worker does
        with contextlib.suppress(Exception):
            import torch  # noqa: F401
    send({"event": "load"})
    faulthandler.dump_traceback_later(limits.load_seconds, file=2)
    try:
        submission = load_submission(path, seconds=0)
        answers, student = submission.answers, submission.student_id
    finally:
        faulthandler.cancel_dump_traceback_later()
    send({"event": "loaded", "kind": submission.kind, "source": submission.source,
          "load_error": submission.load_error, "cell_errors": submission.cell_errors,
          "skipped": submission.skipped, "printed": submission.printed[:PRINTED_KEEP],
          "answers": answers, "student_id": student})
    if not submission.load_error:
        for problem in data["problems"]:
            if not problem["code"] or problem["id"] in skip:
                continue
            send({"event": "problem", "problem": problem["id"]})
            faulthandler.dump_traceback_later(limits.problem_seconds, file=2)
            try:
                run_code_problem(data, problem, submission, alarm=False,
                                 before=lambda c: send({"event": "call", "test": c.test["name"]}),
                                 after=lambda o: send({"event": "outcome", "outcome": _outcome_json(o)}))
            finally:
                faulthandler.cancel_dump_traceback_later()
            send({"event": "done", "problem": problem["id"]})
    send({"event": "end"})
    channel.close()
    return 0


class _Child:
    """One worker process: its events in a queue, the tail of its stderr, a deadline to wait against."""

    TIMEOUT = object()

    def __init__(self, argv: List[str]) -> None:
        import queue
        import subprocess

        options: Dict[str, Any] = {}
        if os.name == "posix":
            options["start_new_session"] = True  # its own process group: what it starts dies with it
        else:
            options["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, **options)
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.stderr = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._read_events, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_events(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue  # not ours: the channel carries only the worker's own lines
            if isinstance(event, dict) and isinstance(event.get("event"), str):
                self.events.put(event)
        self.events.put(None)

    def _read_stderr(self) -> None:
        while True:
            chunk = self.process.stderr.read1(65536) if hasattr(self.process.stderr, "read1") else \
                self.process.stderr.read(65536)
            if not chunk:
                return
            with self._lock:
                self.stderr += chunk
                del self.stderr[:-STDERR_KEEP]

    def next(self, deadline: float) -> Any:
        """The next event; None when the child closed its channel; TIMEOUT when the deadline passed."""
        import queue

        try:
            return self.events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return self.TIMEOUT

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                if os.name == "posix":
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        self._stderr_reader.join(timeout=1)
        for stream in (self.process.stdout, self.process.stderr):
            with contextlib.suppress(Exception):
                stream.close()

    def where(self, filename: str) -> str:
        """Where the child's last traceback dump (faulthandler, at the time limit) says student code was."""
        with self._lock:
            text = bytes(self.stderr).decode("utf-8", "replace")
        dump = text.rsplit("Timeout (", 1)
        if len(dump) < 2:
            return ""
        frames = []
        for line in dump[1].splitlines():
            line = line.strip()
            if line.startswith('File "') and '", line ' in line:
                name, rest = line[6:].split('", line ', 1)
                number = rest.split(" ", 1)[0]
                if number.isdigit():
                    frames.append((name, int(number)))
            elif frames and not line.startswith("File"):
                break  # the end of the first thread's stack
        return _where(list(reversed(frames)), filename)  # a dump lists the most recent call first

    def last_line(self) -> str:
        with self._lock:
            lines = bytes(self.stderr).decode("utf-8", "replace").strip().splitlines()
        return f"; {lines[-1][:300]}" if lines else ""

    def exit_text(self) -> str:
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)
        code = self.process.returncode
        if code is None:
            return "it stopped answering"
        if code < 0 and os.name == "posix":
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"


def supervise(data: Dict[str, Any], data_path: Any, path: Any,
              run_code: bool = True) -> Tuple[Submission, Dict[str, ProblemResult]]:
    """Load `path` and run its public tests in supervised children, under the grader's time limits.

    Gives the submission as the child saw it (its ANSWERS and STUDENT_ID as plain data, what went
    wrong loading it) and the results of the code problems. A child that runs out of time, or dies,
    is killed and the problem it was on fails with what happened; a fresh child goes on with the rest.
    """
    path = _submission_path(path)
    limits = limits_of(data)
    code = [p for p in data["problems"] if p["code"]] if run_code else []
    results: Dict[str, ProblemResult] = {}
    submission: Optional[Submission] = None
    kind = "ipynb" if path.suffix == ".ipynb" else "py"
    while True:
        skip = [p["id"] for p in data["problems"] if p["code"] and (p["id"] in results or p not in code)]
        argv = [sys.executable, str(Path(__file__).resolve()), WORKER, str(path), "--data",
                str(Path(data_path).resolve())] + [arg for pid in skip for arg in ("--skip", pid)]
        child = _Child(argv)
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
                        test = next((t for t in problem["public_tests"] if t["name"] == event.get("test")), None)
                        check = PublicCheck(problem, test, data["track"]) if test else None
                    elif name == "outcome" and phase == "problem":
                        outcome = _outcome_from(event)
                        if outcome is not None:
                            outcomes.append(outcome)
                    elif name == "done" and phase == "problem":
                        results[problem["id"]] = code_result(problem, outcomes)
                        phase, deadline, problem = "between", time.monotonic() + BETWEEN_SECONDS, None
                        outcomes, check = [], None
                    elif name == "end" and phase == "between":
                        return _finished(submission, path, kind), results
                    continue
                if event is _Child.TIMEOUT and phase in ("load", "problem"):
                    time.sleep(DUMP_GRACE_SECONDS)  # the child's own dump of where it was, due about now
                child.kill()
                where = child.where(str(path))
                if phase == "start":
                    raise _ChildBroke(f"it did not start: {child.exit_text()}{child.last_line()}"
                                      if event is None else f"it did not start within {START_SECONDS:g} s")
                if phase == "load":
                    if event is _Child.TIMEOUT:
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
                    message = (f"not checked: the check {'stopped answering' if event is _Child.TIMEOUT else 'stopped'}"
                               f" before {problem['function']}() ({child.exit_text()}; a thread of your code still "
                               "running, or os._exit?)")
                elif event is _Child.TIMEOUT:
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
            raise UsageError(f"the self-check's worker (a second Python running {Path(__file__).name}) failed: {err}") \
                from None
        finally:
            child.kill()
        if all(p["id"] in results for p in code):
            return _finished(submission, path, kind), results


class _ChildBroke(Exception):
    pass


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


# ---------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python qkv_check.py",
        description="Self-check your assignment offline: public tests for your functions, right/wrong for your "
                    "written answers. Hidden tests are run only at grading.")
    parser.add_argument("file", nargs="?", help="your .py file or .ipynb notebook")
    parser.add_argument("--student", default="", metavar="ID",
                        help="your student id (default: STUDENT_ID in your file)")
    parser.add_argument("--show", nargs="?", const="", default=None, metavar="PROBLEM",
                        help="print your own numbers (per-student assignments), for one problem or all")
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    return parser


def _worker_main(argv: List[str]) -> int:
    """`qkv_check.py --qkv-worker FILE --data PATH [--skip ID]...`: the supervised child (`supervise`)."""
    parser = argparse.ArgumentParser(prog="qkv_check.py " + WORKER)
    parser.add_argument("file")
    parser.add_argument("--data", required=True)
    parser.add_argument("--skip", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        return _worker(args.file, args.data, args.skip)
    except UsageError as err:
        print(f"qkv_check: error: {err}", file=sys.stderr)
        return USAGE_ERROR


def main(argv: Optional[List[str]] = None) -> int:
    """Exit code 0 when the check ran, whatever the verdicts; 2 for usage errors.

    The file is run in a supervised child under the grader's time limits (`supervise`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == [WORKER]:
        return _worker_main(argv[1:])
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and USAGE_ERROR
    try:
        data_path = Path(args.data) if args.data else HERE / DATA_FILE
        data = load_data(data_path)
        if args.show is not None:
            student = args.student
            if not student and args.file:
                student = supervise(data, data_path, args.file, run_code=False)[0].student_id
            _print(prompt_text(data, student, args.show or None))
            return 0
        if not args.file:
            parser.print_usage(sys.stderr)
            raise UsageError("give the file to check, e.g. python qkv_check.py "
                             f"{data.get('module', 'assignment')}.py")
        if args.student:
            key, why = student_key(data, args.student)
            if key is None:
                raise UsageError(why)
        submission, code_results = supervise(data, data_path, args.file)
        student = args.student or submission.student_id
        title = f"qkv self-check: {data.get('title', data['assignment'])} | {submission.source}"
        note = ""
        if data["variants"] == "per_student":
            # At grading your id is the submitted file's name; warn when the two disagree.
            named = Path(args.file).stem
            if not student and named in roster(data):
                student = named
            elif student and named in roster(data) and named != student:
                note = (f"note: this file is named {named!r} but says STUDENT_ID = {student!r}; at grading "
                        "your numbers are those of the id in the file's name\n")
            title += f" | student {student or '(STUDENT_ID not set)'}"
        text, _ = report(data, submission, student, code_results=code_results)
        _print(title + "\n" + "=" * min(len(title), 100) + "\n" + note + text)
        return 0
    except UsageError as err:
        print(f"qkv_check: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("qkv_check: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.modules.setdefault("qkv_check", sys.modules["__main__"])  # a notebook's `import qkv_check` finds this one
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # output piped into `head` and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
