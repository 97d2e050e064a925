"""feedback.html for one student: a `SubmissionResult` in, a self-contained HTML page out.

For each problem: the score and what happened; for each failed test: input
shapes, expected vs got (public tests), the largest error and the mistake the
output matches. Attention weights are drawn as heatmaps (matplotlib's imsave,
embedded as PNG data, so the page works offline); hidden tests show theirs only
after the due date.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from autograder.results import SubmissionResult, TestResult
from autograder.report.files import write_atomic
from autograder.report.summary import points

CELL_PIXELS = 24

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
_ENV.filters["points"] = points


def heatmap_png(matrix: list[list[float]]) -> str:
    """A weight matrix as a PNG data URI (0 = dark, 1 = bright, one square per weight)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    array = np.clip(np.asarray(matrix, dtype=float), 0.0, 1.0)
    big = np.kron(array, np.ones((CELL_PIXELS, CELL_PIXELS)))
    buffer = io.BytesIO()
    plt.imsave(buffer, big, cmap="viridis", vmin=0.0, vmax=1.0, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _past_due(due: str | None, now: dt.datetime | None = None) -> bool:
    if not due:
        return True
    deadline = dt.datetime.fromisoformat(due)
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=dt.timezone.utc)
    return (now or dt.datetime.now(dt.timezone.utc)) >= deadline


def _show_heatmap(test: TestResult, past_due: bool) -> bool:
    return test.heatmap is not None and not test.passed and (test.visibility == "public" or past_due)


def feedback_html(result: SubmissionResult, title: str, due: str | None, isolation: str, late: Any = None) -> str:
    """`late`, when given, is the student's own deadline (classroom.deadlines.LateOutcome): shown, and it
    decides when hidden tests' heatmaps appear."""
    if late is not None and late.due is not None:
        due = late.due.isoformat()
    past_due = _past_due(due)
    heatmaps = {
        (t.problem_id, t.name): (heatmap_png(t.heatmap["got"]), heatmap_png(t.heatmap["want"]))
        for p in result.problems for t in p.tests if _show_heatmap(t, past_due)
    }
    return _ENV.get_template("feedback.html.j2").render(
        result=result, title=title, heatmaps=heatmaps, past_due=past_due, isolation=isolation, late=late,
    )


def write_feedback(path: Path, result: SubmissionResult, title: str, due: str | None, isolation: str,
                   late: Any = None) -> None:
    write_atomic(path, feedback_html(result, title, due, isolation, late).encode())
