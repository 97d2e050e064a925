"""The item analysis for people: an `ItemAnalysis` in; stats.html (tables and three plots, inline SVG, works
offline) and a terminal table out.

Plots: the histogram of total scores, facility against point-biserial discrimination (the flag lines at
0.95 and 0.2 drawn), and how many students matched each named misconception; beside them, each named
mistake's prevalence where it starts, with an anonymised example (classroom/mistakes.py).
"""

from __future__ import annotations

import io
import re
import textwrap
from typing import Optional

import jinja2
from markupsafe import Markup
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from autograder.classroom.stats import HIGH_FACILITY, LOW_DISCRIMINATION, ItemAnalysis
from autograder.page_style import page_style
from autograder.report.summary import terminal_safe
from autograder.wording import counted

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("autograder.classroom", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined)


def _number(value: Optional[float], digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


_ENV.filters["num"] = _number
_ENV.globals["page_style"] = page_style()
_ENV.filters["counted"] = counted


def _svg(figure) -> Markup:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    text = text[text.index("<svg"):]  # no XML prolog or DOCTYPE inside HTML
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # the date matplotlib stamps in
    return Markup(text)


MISCONCEPTIONS_DRAWN = 10
LABEL_LINE = 28  # characters of a bar's label line


def _short_label(text: str) -> str:
    lines = textwrap.wrap(" ".join(text.split()), LABEL_LINE, max_lines=2, placeholder=" …")
    return "\n".join(lines) or "-"


def plots(analysis: ItemAnalysis) -> dict[str, Markup]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = {}
    matplotlib.rcParams["svg.hashsalt"] = "qkv"  # the same ids on every run
    fig, ax = plt.subplots(figsize=(6, 3))
    bins = min(40, max(5, int(analysis.max_score) or 10))
    ax.hist(analysis.totals, bins=bins, range=(0, analysis.max_score or 1), color="#4c72b0", edgecolor="white")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # students are counted whole: no tick at 0.5
    ax.set_xlabel("total score")
    ax.set_ylabel("students")
    ax.set_title(f"Scores of {counted(analysis.students, 'student')}")
    out["histogram"] = _svg(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for items, marker, label in ((analysis.problems, "o", "problems"), (analysis.hidden_tests, "x", "hidden tests")):
        points = [(i.facility, i.point_biserial) for i in items if i.point_biserial is not None]
        if points:
            ax.scatter([p[0] for p in points], [p[1] for p in points], marker=marker, label=label, alpha=0.75)
    ax.axvline(HIGH_FACILITY, color="#c44e52", linestyle="--", linewidth=1)
    ax.axhline(LOW_DISCRIMINATION, color="#c44e52", linestyle="--", linewidth=1)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel("facility (mean score / points)")
    ax.set_ylabel("discrimination (point-biserial)")
    ax.set_title("Facility against discrimination")
    if analysis.problems or analysis.hidden_tests:
        ax.legend(loc="lower left")
    out["scatter"] = _svg(fig)
    plt.close(fig)

    shown = analysis.misconceptions[:MISCONCEPTIONS_DRAWN]
    # a label of two short lines at most, so that the figure keeps its width and its type stays readable when the
    # page scales it (labels of 60 characters on one line shrank it to a quarter); the table below has them whole
    fig, ax = plt.subplots(figsize=(6, max(1.5, 0.42 * len(shown) + 1)))
    labels = [_short_label(f"{c.problem}: {c.misconception}") for c in shown]
    ax.barh(range(len(shown)), [c.share * 100 for c in shown], color="#dd8452")
    ax.set_yticks(range(len(shown)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("% of students")
    ax.set_title("Named misconceptions matched" if shown else "No named misconception matched")
    out["misconceptions"] = _svg(fig)
    plt.close(fig)
    return out


def stats_html(analysis: ItemAnalysis, title: str, mistakes: tuple = (), corrections: tuple = ()) -> str:
    """`mistakes`: classroom.mistakes.class_mistakes, the prevalence of each named mistake with an example;
    `corrections`: classroom.corrections.written_corrections, the free-text corrections to read."""
    import statistics

    totals = analysis.totals.tolist()
    summary = {
        "mean": statistics.fmean(totals) if totals else None,
        "sd": statistics.stdev(totals) if len(totals) > 1 else None,
        "median": statistics.median(totals) if totals else None,
    }
    return _ENV.get_template("stats.html.j2").render(
        a=analysis, title=title, plots=plots(analysis), summary=summary, mistakes=mistakes, corrections=corrections,
        low=LOW_DISCRIMINATION, high=HIGH_FACILITY)


def stats_table(analysis: ItemAnalysis) -> Table:
    table = Table(title=f"Item analysis: {counted(analysis.students, 'student')}"
                        + (f" ({analysis.excluded} not run, left out)" if analysis.excluded else ""))
    columns: tuple[tuple[str, JustifyMethod], ...] = (("problem", "left"), ("mean", "right"), ("facility", "right"),
                                                      ("r_pb", "right"), ("upper-lower", "right"), ("flags", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    for item in analysis.problems:
        table.add_row(Text(terminal_safe(item.name)), f"{item.mean:.2f}/{item.max_score:g}", _number(item.facility),
                      _number(item.point_biserial), _number(item.upper_lower), Text(terminal_safe(", ".join(item.flags) or "-")))
    tests = [t for t in analysis.hidden_tests if t.flags]
    if tests:
        table.caption = f"{len(tests)} of {len(analysis.hidden_tests)} hidden tests flagged (stats.html lists them)"
    return table


def class_report(book, bundle: Optional[object], fallback_title: str, where: str) -> tuple[ItemAnalysis, str, tuple]:
    """The item analysis of a gradebook, as `qkv stats` and the service's stats page give it: (the analysis,
    stats.html, the written corrections to read). `bundle` (the build) gives choice texts; without it they
    are left out. Raises QkvError naming `where` when nothing graded ran."""
    from autograder.classroom.classbook import stored_title
    from autograder.classroom.corrections import written_corrections
    from autograder.classroom.mistakes import class_mistakes
    from autograder.classroom.stats import analyse, bundle_info, load_scores
    from autograder.errors import QkvError

    info = bundle_info(bundle) if bundle is not None else ((), {}, {}, {})
    scores = load_scores(book)
    title = stored_title(book) or fallback_title
    mistakes = class_mistakes(book, info[3], info[0])
    if not scores.students:
        raise QkvError(where, "no graded submission to analyse")
    analysis = analyse(scores, *info)
    corrections = written_corrections(scores)
    return analysis, stats_html(analysis, title, mistakes, corrections), corrections
