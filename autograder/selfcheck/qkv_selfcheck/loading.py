"""A student's .py or .ipynb run in this Python: what it defines, what went wrong, and the alarm that stops it.

The command line runs this only in its supervised child (supervisor.py); a notebook's check() and the
release's pytest run it in their own process, under the alarm.
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from qkv_runtime import judge
from qkv_runtime.notebook import NotebookError, program_steps, read_cells, run_steps
from qkv_runtime.values import exception_text, plain_answers

from .data import UsageError

LOAD_SECONDS = 60  # loading in this process (pytest route, library calls), where torch may still be imported

_loading = threading.local()  # set while a submission's top level runs


class TimeLimit(BaseException):
    """Raised by the alarm in the middle of student code (BaseException: `except Exception` can't eat it)."""


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


def loading_now() -> bool:
    """Whether a submission's top level is running here: its own check() and show() calls then do nothing."""
    return getattr(_loading, "active", False)


@contextlib.contextmanager
def time_limit(seconds: float):
    """Interrupt student code after `seconds` (POSIX main thread only; elsewhere no limit)."""
    if (not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
            or seconds <= 0):
        yield
        return

    def on_alarm(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def captured():
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


def where_text(frames: List[Tuple[str, int]], filename: str) -> str:
    """', at line N' (or ', at cell N, line M'): the innermost of `frames` ([(file, line)], outermost
    first) in the student's file or notebook cells; '' when none is."""
    at = judge.position(frames, filename)
    return f", at {at}" if at else ""


def tb_frames(exc: BaseException) -> List[Tuple[str, int]]:
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
    with _loading_submission(path.parent), captured() as printed:
        try:
            with time_limit(seconds):
                # as Python compiles the file, not under this module's `from __future__ import annotations`
                exec(compile(source, str(path), "exec", dont_inherit=True), namespace)
        except TimeLimit as exc:
            error = load_message(seconds, "py", where_text(tb_frames(exc), str(path)))
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
    with _loading_submission(path.parent), captured() as printed:
        with time_limit(seconds):
            try:
                errors = run_steps(steps, namespace, reraise=(KeyboardInterrupt, TimeLimit))
            except TimeLimit as exc:
                errors = [load_message(seconds, "ipynb", where_text(tb_frames(exc), str(path)))]
    return Submission(namespace, path.name, "ipynb", cell_errors=errors, skipped=skipped, printed=printed.getvalue())


def submission_path(path: Any) -> Path:
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
    path = submission_path(path)
    seconds = LOAD_SECONDS if seconds is None else seconds
    return _load_py(path, seconds) if path.suffix == ".py" else _load_ipynb(path, seconds)
