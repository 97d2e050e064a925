"""The class's terminal views: intake rows, late penalties, regrade changes and a student's history in, rich tables out.

Every cell is student- or LMS-made text, so it goes through `terminal_safe` and into `Text`, never markup.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Iterable, Sequence

from rich.markup import escape
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from autograder.classroom.collect import IntakeRow
from autograder.classroom.deadlines import LateOutcome
from autograder.classroom.history import Change, Grading, diff
from autograder.report.summary import points, terminal_safe
from autograder.wording import counted


def _t(value: object) -> Text:
    return Text(terminal_safe(value))


def intake_counts(rows: Sequence[IntakeRow]) -> str:
    counts = Counter(r.status for r in rows)
    order = ("graded", "conflict", "superseded", "off_roster", "unmatched", "missing", "rejected", "skipped")
    return ", ".join(f"{counts[s]} {s.replace('_', ' ')}" for s in order if counts[s])


def _needs_a_look(row: IntakeRow) -> bool:
    if row.status != "graded":
        return True
    return bool(row.message) and row.message != "the LMS marks it LATE"  # lateness has its own table


def intake_table(rows: Sequence[IntakeRow], limit: int = 40) -> Table | None:
    """Every row that needs a look: anything not plainly graded (all rows are in intake.csv); None when no row
    does, rather than a table of headers alone."""
    shown = [r for r in rows if _needs_a_look(r)]
    if not shown:
        return None
    table = Table(title=f"Intake: {intake_counts(rows)}")
    table.add_column("status", no_wrap=True)
    table.add_column("entry", overflow="fold", ratio=2)
    table.add_column("student", no_wrap=True)
    table.add_column("why", overflow="fold", ratio=3)
    order = {"conflict": 0, "off_roster": 1, "unmatched": 2, "rejected": 3, "superseded": 4, "missing": 5,
             "graded": 6, "skipped": 7}
    for row in sorted(shown, key=lambda r: (order.get(r.status, 9), r.entry, r.student))[:limit]:
        why = row.message.removesuffix("; the LMS marks it LATE") or row.identified_by or "-"
        table.add_row(_t(row.status), _t(row.entry or "-"), _t(row.student or "-"), _t(why))
    if len(shown) > limit:
        table.caption = f"first {limit} of {len(shown)} rows; all are in intake.csv"
    return table


def _when(moment: dt.datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "-"


def late_table(late: dict[str, LateOutcome], limit: int = 40) -> Table:
    """The students whose lateness cost points, or who were late within the grace or an extension."""
    shown = [(s, o) for s, o in sorted(late.items()) if o.penalty or o.late_seconds > 0 or o.extension]
    table = Table(title=f"Late penalties: {sum(1 for _, o in late.items() if o.penalty)} of {counted(len(late), 'student')}")
    table.add_column("student", no_wrap=True)
    table.add_column("due", no_wrap=True)
    table.add_column("handed in", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("rule", overflow="fold")
    for student, o in shown[:limit]:
        score = f"{points(o.raw)} -{points(o.penalty)} = {points(o.final)}" if o.penalty else points(o.final)
        table.add_row(_t(student), _when(o.due), _when(o.submitted_at), score, _t(o.rule))
    if len(shown) > limit:
        table.caption = f"first {limit} of {len(shown)}; all are in gradebook.csv"
    return table


def changes_table(changes: Iterable[Change], limit: int = 40) -> Table:
    moved = sorted((c for c in changes if c.delta), key=lambda c: (c.delta, c.student))
    table = Table(title=f"Regraded: {len(moved)} student(s) gained or lost points")
    columns: tuple[tuple[str, JustifyMethod], ...] = (("student", "left"), ("before", "right"), ("after", "right"),
                                                      ("change", "right"), ("tests", "left"), ("why", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    for c in moved[:limit]:
        tests = ", ".join([*c.gained, *c.lost][:6])
        why = ", ".join(w for w, on in (("assignment rebuilt", c.new_bundle), ("new file", c.new_file)) if on) or "regraded"
        table.add_row(_t(c.student), points(c.before), points(c.after), f"{c.delta:+g}", _t(tests), why)
    if len(moved) > limit:
        table.caption = f"first {limit} of {len(moved)}; all are in changes.csv"
    return table


def _score(g: Grading, late: LateOutcome | None) -> str:
    if late is None or not late.penalty:
        return f"{points(g.score)}/{points(g.max_score)}"
    return f"{points(late.final)}/{points(g.max_score)} (raw {points(g.score)}; {late.rule})"


def history_table(student: str, trail: Sequence[Grading], late: Sequence[LateOutcome] = ()) -> Table:
    """`late`: each grading's outcome under the late policy (classroom/history.py); a penalty shows the final score."""
    table = Table(title=f"History of {escape(terminal_safe(student))}: {len(trail)} grading(s)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"), ("graded at", "left"), ("file", "left"), ("handed in", "left"), ("bundle", "left"),
        ("status", "left"), ("score", "right"), ("changed since the one before", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    previous = None
    outcomes: list[LateOutcome | None] = [*late] or [None] * len(trail)
    for n, (g, outcome) in enumerate(zip(trail, outcomes), 1):
        when = dt.datetime.fromtimestamp(g.graded_at, dt.timezone.utc).isoformat(timespec="seconds")
        change = "-"
        if previous is not None:
            d = diff(previous, g)
            change = ", ".join(x for x in (("new file" if d.new_file else ""), ("rebuilt" if d.new_bundle else ""),
                                           *list(d.gained + d.lost)[:6]) if x) or "nothing"
        table.add_row(str(n), when, _t(f"{g.source or '-'} ({g.digest[:10]})"),
                      _t(f"{g.submitted_at} ({g.time_source})" if g.submitted_at else "-"), g.bundle[:10], _t(g.status),
                      _t(_score(g, outcome)), _t(change))
        previous = g
    return table
