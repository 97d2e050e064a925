"""feedback.html for one student: a `SubmissionResult` (and the assignment's `GradingBundle`) in, a self-contained page out.

The page opens with what to fix first (lessons.py): each recognised mistake
once, with its points, the problems it touches, the functions that fail because
they build on it, and the tests it explains; then what no mistake explains, one
line per distinct message. Then problem by problem: passed tests in one line,
failures by reference to their mistake. Failed tests are drawn (pictures.py:
yours, expected, the difference, the mask, with scales, inline SVG data, so the
page works offline); written answers are explained (written.py). Details of
hidden tests, their pictures, and written answers' right answers appear only
after the student's own due date (with extension, from the classroom's
`LateOutcome`). A problem's part (problem.html.j2) that only its shared result, its
written view and the due date decide is rendered once for the class.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jinja2
from markupsafe import Markup

from autograder.bundle import GradingBundle
from autograder.memo import Memo
from autograder.page_style import page_style
from autograder.private import write_private
from autograder.report.lessons import ProblemLines, Summary, bank_words, problem_lines, summarise
from autograder.report.pictures import Image, test_pictures
from autograder.report.summary import points
from autograder.report.written import WrittenView, written_view
from autograder.results import ProblemResult, SubmissionResult, TestResult

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    auto_reload=False,  # the package's own templates: no stat of each one at every page
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["points"] = points
_ENV.globals["page_style"] = page_style()


def _past_due(due: str | None, now: dt.datetime | None = None) -> bool:
    if not due:
        return True
    deadline = dt.datetime.fromisoformat(due)
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=dt.timezone.utc)
    return (now or dt.datetime.now(dt.timezone.utc)) >= deadline


def visible(test: TestResult, past_due: bool) -> bool:
    """Whether a test's inputs, numbers and pictures may be shown: public ones always, hidden ones after the due date."""
    return test.visibility == "public" or past_due


def _drawn(tests: list[TestResult], past_due: bool) -> Optional[TestResult]:
    """The test whose pictures a group of failures shows: the first visible one that has a picture, public first."""
    candidates = [t for t in tests if t.heatmap and visible(t, past_due)]
    candidates.sort(key=lambda t: t.visibility != "public")
    return candidates[0] if candidates else None


@dataclass(frozen=True)
class ProblemEntry:
    """One problem's part of the page (an object, as lessons.ProblemLines is, for Jinja2's sake)."""

    result: ProblemResult
    lines: ProblemLines
    written: Optional[WrittenView]  # a written problem of the bundle's


def page_context(result: SubmissionResult, past_due: bool, bundle: GradingBundle | None) -> dict[str, Any]:
    functions, messages = bank_words(bundle)
    summary: Summary = summarise(result, functions, messages, verdict_words=past_due)
    pictures: dict[tuple[str, str], list[Image]] = {}

    def draw(tests: list[TestResult]) -> Optional[TestResult]:
        chosen = _drawn(tests, past_due)
        # _drawn chooses among tests with a heatmap; the check says so to the type checker
        if chosen is not None and chosen.heatmap is not None and (chosen.problem_id, chosen.name) not in pictures:
            pictures[(chosen.problem_id, chosen.name)] = test_pictures(chosen.heatmap, chosen.name)
        return chosen

    lesson_drawn = [draw(lesson.tests) for lesson in summary.lessons]
    rest_drawn = {(c.problem, c.text): draw(list(c.tests)) for c in summary.unexplained}
    written = {w.id: w for w in bundle.written} if bundle is not None else {}
    problems = []
    for problem in result.problems:
        view = None
        if problem.problem_id in written and bundle is not None:  # a written problem of this bundle
            view = written_view(written[problem.problem_id], problem, result.answers.get(problem.problem_id), bundle,
                                result.student, past_due, result.seed)
        problems.append(ProblemEntry(problem, problem_lines(problem, summary), view))
    context = dict(summary=summary, lesson_drawn=lesson_drawn, rest_drawn=rest_drawn, pictures=pictures,
                   problems=problems, visible=lambda t: visible(t, past_due), past_due=past_due)
    # the problems' parts, unless a file that never ran lists them as a table
    context["sections"] = [] if summary.not_loaded else [problem_section(entry, context) for entry in problems]
    return context


# a problem's part of the page, when no mistake of the page's own explains a test of it, follows from the problem's
# result, its written view and the due date alone: a class shares those (grade.score shares the result of a problem
# all of whose tests passed, and of each written answer given the same), so each such part is rendered once
_SECTIONS: Memo[Markup] = Memo(4096)
_LONGEST_TYPED = 4096  # a part showing more of what a student typed is rendered afresh: the memo stays small


def _typed_chars(view: Optional[WrittenView]) -> int:
    return sum(len(part) + len(text) for part, text in view.typed) if view is not None else 0


def problem_section(entry: ProblemEntry, context: dict[str, Any]) -> Markup:
    """One problem's part of the page (problem.html.j2), in the page's `context`."""
    def render() -> Markup:
        return Markup(_ENV.get_template("problem.html.j2").render(entry=entry, **context))

    if entry.lines.explained or entry.lines.rest:  # numbered by this page's lessons, drawn with its pictures
        return render()
    if _typed_chars(entry.written) > _LONGEST_TYPED:
        return render()
    return _SECTIONS.get((entry.result,), render, (context["past_due"], entry.written))


def feedback_html(result: SubmissionResult, title: str, due: str | None, isolation: str, late: Any = None,
                  bundle: GradingBundle | None = None, now: dt.datetime | None = None,
                  reveal: bool | None = None, back: str | None = None) -> str:
    """`late`, when given, is the student's own deadline (classroom.deadlines.LateOutcome): shown, and it
    decides when hidden tests' details and written answers' solutions appear, unless `reveal` decides (the
    service: only once nobody can hand in any more). `bundle` gives the bank's words for each mistake and
    the written problems' keys; without it, the tests' own words stand in. `back`: the page it was opened from
    (the service's attempt page), linked above the feedback."""
    if late is not None and late.due is not None:
        due = late.due.isoformat()
    past_due = _past_due(due, now) if reveal is None else reveal
    return _ENV.get_template("feedback.html.j2").render(
        result=result, title=title, due=due, isolation=isolation, late=late, back=back,
        **page_context(result, past_due, bundle),
    )


def write_feedback(path: Path, result: SubmissionResult, title: str, due: str | None, isolation: str,
                   late: Any = None, bundle: GradingBundle | None = None, now: dt.datetime | None = None) -> None:
    write_private(path, feedback_html(result, title, due, isolation, late, bundle, now).encode())


__all__ = ["WrittenView", "feedback_html", "page_context", "visible", "write_feedback"]
