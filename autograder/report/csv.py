"""gradebook.csv: one row per student (student, total, max, status, one column per problem id, isolation;
then penalty, final and late_rule when the class has a due date).

The last column says how the submission was isolated ("bwrap" or "rlimits-only"),
so nobody mistakes a run without namespaces for the isolated mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from autograder.private import write_private
from autograder.results import SubmissionResult
from autograder.report.spreadsheet import csv_text


def gradebook_csv(results: Sequence[SubmissionResult], problem_ids: Sequence[str], isolation: Mapping[str, str],
                  late: Mapping[str, Any] | None = None) -> str:
    """`late` (student -> classroom.deadlines.LateOutcome) adds the late penalty, the final score and the rule."""
    rows = [["student", "total", "max", "status", *problem_ids, "isolation",
             *(["penalty", "final", "late_rule"] if late is not None else [])]]
    for result in sorted(results, key=lambda r: r.student):
        scores = {p.problem_id: p.score for p in result.problems}
        extra = []
        if late is not None:
            outcome = late.get(result.student)
            extra = [f"{outcome.penalty:g}", f"{outcome.final:g}", outcome.rule] if outcome else ["0", f"{result.score:g}", ""]
        rows.append([result.student, f"{result.score:g}", f"{result.max_score:g}", result.status,
                     *[f"{scores.get(pid, 0.0):g}" for pid in problem_ids], isolation.get(result.student, ""), *extra])
    return csv_text(rows)


def write_gradebook_csv(
    path: Path, results: Sequence[SubmissionResult], problem_ids: Sequence[str], isolation: Mapping[str, str],
    late: Mapping[str, Any] | None = None,
) -> None:
    write_private(path, gradebook_csv(results, problem_ids, isolation, late).encode())
