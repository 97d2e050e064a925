"""pytest route to grading: `pytest --qkv NAME --qkv-submission FILE [checks.py]` reports one pytest test per graded test.

For instructors who grade with pytest (GitHub Classroom, CI pipelines). The
submission runs once in the same sandbox as `qkv grade`, and the same
`grade_submission` scores it in this trusted process, so both routes give the
same scores. Each test's points go to `user_properties` (and so to JUnit XML),
and the total is printed at the end. Custom hidden checks are plain pytest
functions taking the `qkv_submission` fixture (calls run in the sandbox) and
marked `@pytest.mark.qkv_points(N)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autograder.bundle import GradingBundle, read_bundle
from autograder.errors import QkvError
from autograder.grade.execute import run_submission
from autograder.grade.intake import read_submission, safe_student_id
from autograder.grade.score import grade_submission
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
        name = config.getoption("qkv")
        dist = Path(config.getoption("qkv_dist") or Path("dist") / name)
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
        result = self.config.stash[SESSION].test_result(self.problem_id, self.test_name)
        self.user_properties += [("points", result.score), ("max_points", result.max_score)]
        if not result.passed:
            raise SubmissionCallFailed(result.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
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
    if _session(config) is None:
        return
    score = maximum = 0.0
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(getattr(report, "user_properties", []) or [])
            if getattr(report, "when", None) == "call" and "max_points" in properties:
                score += properties["points"]
                maximum += properties["max_points"]
    terminalreporter.write_line(f"qkv score: {score:g} / {maximum:g}")
