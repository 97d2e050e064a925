"""What a student should fix first: a `SubmissionResult` in, its lost points grouped by the mistake that explains them out.

A lesson is one named mistake (a misconception of some problem) with every
failed test it explains, across problems: a column softmax explains the failed
tests of softmax_rows and of the attention functions built on it. Lessons come
largest first (points lost); what no named mistake explains is grouped per
problem, identical messages collapsed into one line with their count and cause.
Read by feedback.py and results_json.py; knows nothing of HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from autograder.bundle import GradingBundle
from autograder.kinds import KINDS
from autograder.memo import Memo
from autograder.results import ProblemResult, SubmissionResult, TestResult
from qkv_runtime.diagnosis import written_mistake_text

NOT_RUN = "no result: "  # grade/score.py's prefix of a test whose call never returned


@dataclass
class Lesson:
    problem: str  # the problem the mistake belongs to
    mistake: str
    message: str  # the bank's words for it
    function: str  # that problem's function ("" for a written problem)
    tests: list[TestResult] = field(default_factory=list)
    upstream_of: list[str] = field(default_factory=list)  # functions that fail because this problem's function has it
    inside: list[str] = field(default_factory=list)  # functions that have the same mistake written into them

    @property
    def points(self) -> float:
        return round(sum(t.max_score - t.score for t in self.tests), 4)

    @property
    def title(self) -> str:
        if self.function:
            return f"{self.mistake.replace('-', ' ')} in {self.function}"
        return f"your answer to {self.problem}"

    @property
    def problems(self) -> list[tuple[str, float]]:
        """(problem id, points lost to this mistake), in the order of the page."""
        lost: dict[str, float] = {}
        for t in self.tests:
            lost[t.problem_id] = round(lost.get(t.problem_id, 0.0) + t.max_score - t.score, 4)
        return list(lost.items())


@dataclass(frozen=True)
class Collapsed:
    """Failed tests of one problem that say the same thing: one line, with how many."""

    problem: str
    text: str
    tests: tuple[TestResult, ...]

    @property
    def points(self) -> float:
        return round(sum(t.max_score - t.score for t in self.tests), 4)

    @property
    def line(self) -> str:
        count = len(self.tests)
        noun = "test" if count == 1 else "tests"
        if self.text.startswith(NOT_RUN):
            return f"{count} {noun} not run: {self.text[len(NOT_RUN):]}"
        return f"{count} {noun}: {self.text}" if count > 1 else self.text


@dataclass
class Summary:
    lessons: list[Lesson]
    unexplained: list[Collapsed]  # failed tests no named mistake explains, by problem, largest first
    lesson_of: dict[tuple[str, str], int]  # (problem, test) -> index into lessons
    not_loaded: Optional[str] = None  # "63 tests not run and 14 written answers not read: ... (called sys.exit(3) ...)"

    @property
    def lost(self) -> float:
        return round(sum(lesson.points for lesson in self.lessons) + sum(c.points for c in self.unexplained), 4)


def _short(test: TestResult) -> str:
    """The mistake's own words in a test's sentence (qkv_runtime.diagnosis.mistake_text), without what differs."""
    text = test.message.rsplit(" (", 1)[0] if test.message.endswith(")") else test.message
    for joint in (" inside; ", " inside it: "):
        if test.cause and joint in text:
            text = text.split(joint, 1)[1]
            return text.split(": ", 1)[1] if joint == " inside; " and ": " in text else text
    return text


Words = tuple[dict[str, str], dict[tuple[str, str], str]]

# the same for every student of a bundle: made once per bundle, read only
_WORDS: Memo[Words] = Memo(8)


def bank_words(bundle: GradingBundle | None) -> Words:
    """What `summarise` takes from the bank: each code problem's function, and each mistake's message by
    (problem, mistake); empty without a bundle (the tests' own words stand in)."""
    if bundle is None:
        return {}, {}
    return _WORDS.get((bundle,), lambda: ({p.id: p.function for p in bundle.code},
                                          {(p.id, m): text for p in bundle.code for m, text in p.misconceptions.items()}))


def summarise(result: SubmissionResult, functions: dict[str, str], messages: dict[tuple[str, str], str],
              verdict_words: bool = True) -> Summary:
    """`functions` by problem id, `messages` the bank's by (problem, mistake); without them (an old page)
    the test's own words stand in. `verdict_words`: whether a written answer's verdict may be shown (after the
    due date only: "the statement is false" gives the answer away); a hand calculation's common mistake, in the
    words the self-check also says at any time (diagnosis.written_mistake_text), is named before it too."""
    lessons: dict[tuple[str, str], Lesson] = {}
    lesson_of: dict[tuple[str, str], tuple[str, str]] = {}
    loose: dict[tuple[str, str], list[TestResult]] = {}
    own_shown = {(p.problem_id, t.misconception) for p in result.problems for t in p.tests
                 if t.misconception and not t.cause}
    for problem in result.problems:
        for test in problem.tests:
            if test.passed:
                continue
            written = not _is_code(problem)
            said_anyway = written and written_mistake_text(test.misconception or "") in test.message
            if test.misconception and (verdict_words or not written or said_anyway):
                origin = test.cause or problem.problem_id
                key = (origin, test.misconception)
                if key not in lessons:
                    text = messages.get(key) or (test.misconception if said_anyway else
                                                 test.message if written else _short(test))
                    lessons[key] = Lesson(origin, test.misconception, text, functions.get(origin, ""))
                lesson = lessons[key]
                lesson.tests.append(test)
                lesson_of[(problem.problem_id, test.name)] = key
                if test.cause:
                    function = functions.get(problem.problem_id, problem.problem_id)
                    into = lesson.upstream_of if key in own_shown else lesson.inside
                    if function not in into:
                        into.append(function)
                continue
            text = test.message
            if written and not verdict_words and text != "not answered":
                text = "answer not right"  # a written answer's verdict may give the answer away before the due date
            loose.setdefault((problem.problem_id, text), []).append(test)
    ordered = sorted(lessons.values(), key=lambda lesson: (-lesson.points, lesson.problem, lesson.mistake))
    index = {(lesson.problem, lesson.mistake): i for i, lesson in enumerate(ordered)}
    collapsed = sorted((Collapsed(p, text, tuple(tests)) for (p, text), tests in loose.items()),
                       key=lambda c: -c.points)
    summary = Summary(ordered, collapsed, {k: index[v] for k, v in lesson_of.items()})
    code_tests = [t for p in result.problems if _is_code(p) for t in p.tests]
    if result.status != "graded" and all(t.message.startswith(NOT_RUN) for t in code_tests):
        summary.not_loaded = not_loaded_line(result)
    return summary


def mistake_titles(result: SubmissionResult) -> list[str]:
    """Each recognised mistake once, largest first, as the feedback page heads it ("columns softmax in
    softmax-rows", "your answer to why-scale"): a code problem's function is named by its problem's id, as a
    result holds no function names. A test's `misconception` is an id for code and a sentence or a shape for a
    written answer, which listed side by side read as a jumble."""
    functions = {p.problem_id: p.problem_id for p in result.problems if _is_code(p)}
    return [lesson.title for lesson in summarise(result, functions, {}).lessons]


def _is_code(problem: ProblemResult) -> bool:
    """Answered by a function the grader ran (its tests), not by an ANSWERS entry."""
    return KINDS[problem.kind].code


def not_loaded_line(result: SubmissionResult) -> str:
    """One line for a file that never ran: how many tests and answers that left out, and why."""
    code = sum(len(p.tests) for p in result.problems if _is_code(p))
    written = sum(1 for p in result.problems if not _is_code(p))
    why = result.message or result.status
    if not code and not written:
        return why
    parts = [f"{code} test{'s' if code != 1 else ''} not run"] if code else []
    parts += [f"{written} written answer{'s' if written != 1 else ''} not read"] if written else []
    return f"{' and '.join(parts)}: the file never finished loading ({why})"


@dataclass(frozen=True)
class ProblemLines:
    """A problem's tests as the page lists them (attributes, not a dict's keys: Jinja2 reads an attribute ten
    times faster than it falls back from one to a key)."""

    passed: list[str]  # the names of the tests passed
    explained: list[tuple[int, list[TestResult]]]  # (lesson index, the failed tests it explains), by index
    rest: list[Collapsed]  # what no lesson explains


def problem_lines(problem: ProblemResult, summary: Summary) -> ProblemLines:
    """A problem's tests as the page lists them: passed names, the lessons that explain failures, the rest collapsed."""
    passed = [t.name for t in problem.tests if t.passed]
    explained: dict[int, list[TestResult]] = {}
    for t in problem.tests:
        if not t.passed and (problem.problem_id, t.name) in summary.lesson_of:
            explained.setdefault(summary.lesson_of[(problem.problem_id, t.name)], []).append(t)
    rest = [c for c in summary.unexplained if c.problem == problem.problem_id]
    return ProblemLines(passed, sorted(explained.items()), rest)
