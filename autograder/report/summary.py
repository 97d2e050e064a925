"""Class statistics: graded results in, a rich table for the terminal out."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Sequence

from rich.table import Table

from autograder.grade.score import SubmissionResult


def summary_table(results: Sequence[SubmissionResult], title: str, isolation: str) -> Table:
    scores = [r.score for r in results]
    max_score = results[0].max_score if results else 0.0
    statuses = Counter(r.status for r in results)
    table = Table(title=f"{title}: {len(results)} submissions ({isolation})", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("graded", str(len(results)))
    if scores:
        table.add_row("mean", f"{statistics.fmean(scores):.2f} / {max_score:g}")
        table.add_row("median", f"{statistics.median(scores):.2f} / {max_score:g}")
        table.add_row("full marks", str(sum(s >= max_score for s in scores)))
    for status, count in sorted(statuses.items()):
        if status != "graded":
            table.add_row(f"not run: {status}", str(count))
    return table


def gradebook_table(results: Sequence[SubmissionResult], problem_ids: Sequence[str], limit: int = 40) -> Table:
    table = Table(title="Gradebook")
    for column in ("student", "total", "status", *problem_ids):
        table.add_column(column, justify="left" if column in ("student", "status") else "right", overflow="fold")
    for result in sorted(results, key=lambda r: r.student)[:limit]:
        scores = {p.problem_id: p.score for p in result.problems}
        table.add_row(result.student, f"{result.score:g}/{result.max_score:g}", result.status,
                      *[f"{scores.get(pid, 0):g}" for pid in problem_ids])
    return table
