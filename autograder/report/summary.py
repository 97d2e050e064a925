"""The terminal's view: graded results in, rich tables out; and `terminal_safe` for any text a student wrote.

Student ids, exception messages and file names can hold escape sequences (clear
the screen, set the window title, write the clipboard with OSC 52) or bidi
overrides; every table cell and message shown in a terminal goes through
`terminal_safe`, which shows them as visible escapes instead.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Sequence

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from autograder.results import SubmissionResult
from autograder.wording import counted


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def terminal_safe(text: object, keep_newlines: bool = False) -> str:
    """`text` with every control character (C0, DEL, C1) and bidi control shown as an escape, e.g. \\x1b."""
    def escape(match: re.Match) -> str:
        ch = match.group()
        if keep_newlines and ch == "\n":
            return ch
        return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"

    return _UNSAFE.sub(escape, str(text))


def summary_table(results: Sequence[SubmissionResult], title: str, isolation: str) -> Table:
    scores = [r.score for r in results]
    max_score = results[0].max_score if results else 0.0
    statuses = Counter(r.status for r in results)
    # a title is the manifest's text: brackets in it are not rich markup
    table = Table(title=f"{escape(terminal_safe(title))}: {len(results)} submissions ({isolation})", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("graded", str(len(results)))
    if scores:
        table.add_row("mean", f"{statistics.fmean(scores):.2f} / {max_score:g}")
        table.add_row("median", f"{statistics.median(scores):.2f} / {max_score:g}")
        table.add_row("full marks", str(sum(s >= max_score for s in scores)))
    for status, count in sorted(statuses.items()):
        if status != "graded":
            table.add_row(Text(terminal_safe(f"not run: {status}")), str(count))
    return table


def points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def gradebook_table(results: Sequence[SubmissionResult], limit: int = 40) -> Table:
    """One line per student: total, status, where points were lost and which mistakes were recognised."""
    from autograder.report.lessons import mistake_titles  # loads the kinds, which the terminal's other views need not

    table = Table(title="Gradebook")
    table.add_column("student")
    table.add_column("total", justify="right")
    table.add_column("status")
    table.add_column("points lost on", overflow="fold")
    table.add_column("mistakes recognised", overflow="fold")
    for result in sorted(results, key=lambda r: r.student)[:limit]:
        lost = [f"{p.problem_id} ({points(p.score)}/{points(p.max_score)})"
                for p in result.problems if p.score < p.max_score - 1e-9]
        mistakes = mistake_titles(result)
        if result.score == 0:
            lost_text = "everything" + (f": {result.message}" if result.message else "")
        else:
            lost_text = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        # Text, not markup: ids and messages come from students' files and code
        table.add_row(Text(terminal_safe(result.student)), f"{points(result.score)}/{points(result.max_score)}",
                      Text(terminal_safe(result.status)), Text(terminal_safe(lost_text or "-")),
                      Text(terminal_safe(", ".join(mistakes) or "-")))
    if len(results) > limit:
        table.caption = f"first {limit} of {counted(len(results), 'student')}; all are in gradebook.csv"
    return table
