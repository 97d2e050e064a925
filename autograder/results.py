"""The results contract: what grading gives and every report, route and export reads.

A leaf module (it imports nothing of the engine), like `bundle.py` between build
and grade: `grade.score` makes these values, the gradebook stores them as JSON,
`report`, the routes and the class tools read them. Fields added later have
defaults, so `from_json` still reads the gradebooks of earlier versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from autograder.memo import Memo


@dataclass(frozen=True)
class TestResult:
    __test__ = False  # a result, not a pytest test class
    problem_id: str
    name: str
    visibility: str
    score: float
    max_score: float
    passed: bool
    message: str
    misconception: Optional[str] = None
    max_error: Optional[float] = None
    input_shapes: str = ""
    expected_excerpt: str = ""
    got_excerpt: str = ""
    heatmap: Optional[dict[str, Any]] = None  # what the page draws (grade/matrices.py); old ones: want and got only
    cause: Optional[str] = None  # the problem `misconception` belongs to, when it is not this one (one built on)


@dataclass(frozen=True)
class ProblemResult:
    problem_id: str
    kind: str
    score: float
    max_score: float
    message: str
    tests: tuple[TestResult, ...] = ()


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    digest: str
    status: str  # "graded" or why the file could not be run at all
    message: str
    score: float
    max_score: float
    problems: tuple[ProblemResult, ...] = field(default_factory=tuple)
    stdout: str = ""
    notes: tuple[str, ...] = ()  # what went wrong while it loaded, e.g. a notebook's failed cells
    answers: dict[str, Any] = field(default_factory=dict)  # the written answers as handed in (plain data), by problem id
    seed: Optional[int] = None  # the seed its fresh numbers were drawn with (grade/written_policy.py); None: the assignment's

    def to_json(self) -> dict[str, Any]:
        # dataclasses.asdict deep-copies recursively and cost ~30 ms a submission; the fields are flat
        return {**self.__dict__, "problems": [
            {**p.__dict__, "tests": [dict(t.__dict__) for t in p.tests]} for p in self.problems]}

    def to_json_text(self) -> str:
        """`json.dumps(self.to_json(), allow_nan=True)`, the same text, with each result a class shares (grade.score
        makes one per test passed, and one per problem all of whose tests passed) written once."""
        return _with(self.__dict__, "problems", _array(map(_problem_text, self.problems)))

    @staticmethod
    def from_json(data: dict[str, Any]) -> "SubmissionResult":
        problems = tuple(
            ProblemResult(**{**p, "tests": tuple(TestResult(**t) for t in p["tests"])}) for p in data["problems"]
        )
        return SubmissionResult(**{**data, "problems": problems, "notes": tuple(data.get("notes", ())),
                                   "answers": data.get("answers") or {}})


def _with(values: dict[str, Any], key: str, text: str) -> str:
    """json.dumps(values) with the value of `key` (whose entries before it are plain values) written as `text`:
    the first '"key": null' is that entry, since JSON escapes every quote inside a string."""
    return json.dumps({**values, key: None}, allow_nan=True).replace(f'"{key}": null', f'"{key}": {text}', 1)


def _array(texts: Iterable[str]) -> str:
    return "[" + ", ".join(texts) + "]"


# a passed test's text, and a problem's all of whose tests passed, written once for the (shared, frozen) result;
# one with a picture is never shared
_TEXTS: Memo[str] = Memo(16384)


def _test_text(test: TestResult) -> str:
    if not test.passed or test.heatmap is not None:
        return json.dumps(test.__dict__, allow_nan=True)
    return _TEXTS.get((test,), lambda: json.dumps(test.__dict__, allow_nan=True))


def all_passed(problem: ProblemResult) -> bool:
    """Whether every test of the problem passed: then grade.score shares its result across the class."""
    return all(t.passed and t.heatmap is None for t in problem.tests)


def _problem_text(problem: ProblemResult) -> str:
    def make() -> str:
        return _with(problem.__dict__, "tests", _array(map(_test_text, problem.tests)))

    return _TEXTS.get((problem,), make) if all_passed(problem) else make()
