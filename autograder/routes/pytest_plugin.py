"""pytest route to grading: `pytest --qkv NAME --qkv-submission FILE [checks.py]` reports one pytest test per graded test.

For instructors who grade with pytest (GitHub Classroom, CI pipelines). The
submission runs once in the same sandbox as `qkv grade`, and the same
`grade_submission` scores it in this trusted process, so both routes give the
same scores. Each test's points go to `user_properties` (and so to JUnit XML),
and the total is printed at the end. Custom hidden checks are plain pytest
functions taking the `qkv_submission` fixture (calls run in the sandbox) and
marked `@pytest.mark.qkv_points(N)`.

This process holds the answers, and pytest runs code from the folders it looks
in before any plugin: a student's conftest.py, a pytest.ini whose addopts load a
plugin, a module beside the submission that Python imports instead of ours. So,
with `--qkv`, no conftest.py is loaded at all (put fixtures in the checks file),
and the run stops with a usage error, before anything is graded, when pytest took
its configuration from a file it found itself (name yours with `-c FILE`), when a
plugin module not installed as a package was loaded (`-p`, `PYTEST_PLUGINS`),
when the submission's folder is on Python's path (`python -m pytest` run there)
or when the build lies in that folder. Code that runs before this plugin can
undo anything it checks, so the safe way is to run the `pytest` command (not
`python -m pytest`) from a folder of your own, never inside a student's repository:

    cd GRADING && pytest -c pytest.ini --qkv=NAME --qkv-dist=dist/NAME --qkv-submission=REPO/FILE [checks.py]

`-c` names your own pytest.ini (an empty one will do); each qkv option with `=`,
because pytest reads its configuration before it knows this plugin's options, and
takes a path standing alone for a test path, beside which it looks for one.

Where this route runs on every push (GitHub Classroom runs it in the student's own
repository, whose log the student reads), its output is shown before the deadline,
so the written-answer policy applies (grade/written_policy.py, the manifest's
`written_attempts:`). Under `hidden` (the default), until hand-in has closed for
everyone a fixed written item's test is skipped with one sentence for all and earns
no points, and the total says how many points wait: pass `--qkv-closed` once it has
closed (extensions included: this route knows no roster), or let the assignment's own
last date (its due date and late window) pass. The route grades one file and keeps no
attempts: under `first` and `penalty` it scores it as a first attempt.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from _pytest._code.code import TerminalRepr
from _pytest.config.findpaths import load_config_dict_from_file

from autograder.bundle import GradingBundle, read_bundle
from autograder.classroom.deadlines import policy_from, student_due
from autograder.errors import QkvError
from autograder.grade.execute import run_submission
from autograder.grade.intake import read_submission, safe_student_id
from autograder.grade.score import grade_submission
from autograder.grade.written_policy import HIDDEN_MESSAGE, fixed_items, hides
from autograder.results import SubmissionResult, TestResult
from autograder.sandbox import Call, ProblemCalls, Program, SandboxError, SandboxPool

SESSION = pytest.StashKey["QkvSession"]()


class SubmissionCallFailed(AssertionError):
    pass


@dataclass
class SandboxedSubmission:
    """The student's file, reachable only through calls that run in the sandbox."""

    program: Program
    pool: SandboxPool
    answers: dict[str, Any]

    def call(self, function: str, *args: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        run = self.pool.run(self.program, [ProblemCalls("custom", (Call("custom", function, args, kwargs),))])
        problem = run.problems.get("custom")
        result = problem.results.get("custom") if problem else None
        if result is None or not result.ok:
            reason = (result.error if result else None) or (problem.message if problem else run.message)
            raise SubmissionCallFailed(f"{function}() failed: {reason}")
        return tuple(result.outputs)


class QkvSession:
    """Grades the submission once per pytest session and hands out its test results."""

    def __init__(self, config: pytest.Config):
        dist = _dist(config.option)
        path = Path(config.getoption("qkv_submission") or "")
        if not path.is_file():
            raise pytest.UsageError(f"--qkv-submission: no such file '{path}'")
        try:
            self.bundle: GradingBundle = read_bundle(dist / "autograder")
        except QkvError as err:
            raise pytest.UsageError(str(err)) from None
        self.submission = read_submission(safe_student_id(path.stem), path)
        try:
            self.pool = SandboxPool(self.bundle.track, jobs=1, limits=self.bundle.limits,
                                    isolation=config.getoption("qkv_isolation") or self.bundle.isolation,
                                    protect=(dist, path.parent))
        except SandboxError as err:
            raise pytest.UsageError(f"--qkv-isolation: {err}") from None
        self.pool.__enter__()
        self._result: SubmissionResult | None = None
        _, last = student_due(policy_from(self.bundle.due, self.bundle.late), None)  # as the service's, no roster
        closed = bool(config.getoption("qkv_closed")) or (last is not None and dt.datetime.now(dt.timezone.utc) > last)
        # the fixed written items whose verdicts wait for hand-in to close (grade/written_policy.py)
        self.held = ({w.id: w.points for w in fixed_items(self.bundle)}
                     if hides(self.bundle.written_attempts, self.bundle, closed) else {})

    @property
    def result(self) -> SubmissionResult:
        if self._result is None:
            run = None
            if self.submission.program is not None:
                run = run_submission(self.pool, self.bundle, self.submission.program)
            self._result = grade_submission(self.bundle, self.submission, run)
        return self._result

    def test_result(self, problem_id: str, name: str) -> TestResult:
        problem = next(p for p in self.result.problems if p.problem_id == problem_id)
        return next(t for t in problem.tests if t.name == name)

    def close(self) -> None:
        self.pool.__exit__(None, None, None)


class QkvItem(pytest.Item):
    def __init__(self, *, problem_id: str, test_name: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.problem_id, self.test_name = problem_id, test_name

    def runtest(self) -> None:
        qkv = self.config.stash[SESSION]
        if self.problem_id in qkv.held:
            pytest.skip(HIDDEN_MESSAGE)
        result = qkv.test_result(self.problem_id, self.test_name)
        self.user_properties += [("points", result.score), ("max_points", result.max_score)]
        if not result.passed:
            raise SubmissionCallFailed(result.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, SubmissionCallFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path("qkv"), 0, f"{self.problem_id}: {self.test_name}"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("qkv", "grade a qkv submission")
    group.addoption("--qkv", metavar="NAME", help="grade a submission of assignment NAME (built in dist/NAME)")
    group.addoption("--qkv-submission", metavar="FILE", help="the student's .py or .ipynb")
    group.addoption("--qkv-dist", metavar="DIR", help="the build of NAME (default: dist/NAME)")
    group.addoption("--qkv-isolation", metavar="REQUEST",
                    help="require, allow-rlimits, bwrap or rlimits (default: the assignment's grading policy)")
    group.addoption("--qkv-closed", action="store_true",
                    help="hand-in has closed for everyone: mark the fixed written answers the written-answer policy "
                         "`hidden` keeps until then (they are, too, once the assignment's own last date has passed)")


def _dist(options: Any) -> Path:
    return Path(options.qkv_dist or Path("dist") / options.qkv)


def _untrusted(config: pytest.Config) -> str | None:
    """What pytest read or imported before this plugin that could run code here and that its caller did not
    name, as a one-line reason naming the file; None when there is nothing."""
    options = config.known_args_namespace
    if (config.inipath is not None and not options.inifilename
            and load_config_dict_from_file(config.inipath) is not None):
        return (f"{config.inipath}: pytest took its configuration (options, plugins, paths) from this file, "
                "which qkv did not choose: run from a folder of your own, or name your own file with -c FILE")
    installed = {id(plugin) for plugin, _ in config.pluginmanager.list_plugin_distinfo()}
    for plugin in config.pluginmanager.get_plugins():
        if (isinstance(plugin, ModuleType) and id(plugin) not in installed and plugin is not sys.modules[__name__]
                and not plugin.__name__.startswith("_pytest.")):
            return (f"{getattr(plugin, '__file__', None) or plugin.__name__}: a pytest plugin that is not an installed "
                    "package (-p, PYTEST_PLUGINS) would run beside the answers: install it, or leave it out")
    if not options.qkv_submission:
        return None  # QkvSession says what is missing
    folder = Path(options.qkv_submission).absolute().parent.resolve()
    if any(isinstance(entry, str) and Path(entry).absolute().resolve() == folder for entry in sys.path):
        return (f"{folder}: the submission's folder is on Python's path (python -m pytest run there, PYTHONPATH, "
                "pythonpath), so its files could stand in for the grader's modules: run pytest from a folder of your own")
    dist = _dist(options).absolute().resolve()
    if folder == dist or folder in dist.parents:
        return f"{dist}: the build lies in the submission's folder, where a student could have written it"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Runs after pytest has read its configuration and loaded -p plugins, before it imports any conftest.py.
    if not early_config.known_args_namespace.qkv:
        return
    early_config.known_args_namespace.noconftest = True  # what pytest reads to skip every conftest.py, at any depth
    reason = _untrusted(early_config)
    if reason is not None:
        raise pytest.UsageError(reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "qkv_points(n): points of a custom qkv check")
    if config.getoption("qkv", default=None):
        config.stash[SESSION] = QkvSession(config)


def _session(config: pytest.Config) -> QkvSession | None:
    return config.stash.get(SESSION, None)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = _session(config)
    if session is not None:
        session.close()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # With --qkv and no paths on the command line, grade only: don't wander into test folders.
    if _session(config) is not None and config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    qkv = _session(config)
    if qkv is None:
        return
    for problem in qkv.bundle.code:
        for test in problem.tests:
            items.append(QkvItem.from_parent(session, name=f"{problem.id}::{test.name}", problem_id=problem.id,
                                             test_name=test.name))
    for written in qkv.bundle.written:
        items.append(QkvItem.from_parent(session, name=f"{written.id}::answer", problem_id=written.id,
                                         test_name="answer"))


@pytest.fixture(scope="session")
def qkv_submission(request: pytest.FixtureRequest) -> SandboxedSubmission:
    qkv = _session(request.config)
    if qkv is None:
        raise pytest.UsageError("the qkv_submission fixture needs --qkv NAME --qkv-submission FILE")
    if qkv.submission.program is None:
        raise SubmissionCallFailed(f"the submission cannot be run: {qkv.submission.message}")
    run_answers = qkv.pool.run(qkv.submission.program, []).answers
    return SandboxedSubmission(qkv.submission.program, qkv.pool, dict(run_answers))


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    marker = item.get_closest_marker("qkv_points")
    if marker is not None and call.when == "call":
        points = float(marker.args[0])
        item.user_properties += [("points", points if call.excinfo is None else 0.0), ("max_points", points)]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    qkv = _session(config)
    if qkv is None:
        return
    score = maximum = 0.0
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(getattr(report, "user_properties", []) or [])
            if getattr(report, "when", None) == "call" and "max_points" in properties:
                score += properties["points"]
                maximum += properties["max_points"]
    terminalreporter.write_line(f"qkv score: {score:g} / {maximum:g}")
    if qkv.held:
        terminalreporter.write_line(
            f"qkv: written answers kept, not marked until hand-in closes for everyone: {', '.join(qkv.held)} "
            f"({sum(qkv.held.values()):g} points, not in the score above); --qkv-closed marks them once it has")
