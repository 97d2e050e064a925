"""gradebook.csv: one row per student (student, total, max, status, one column per problem id, isolation).

The last column says how the submission was isolated ("bwrap" or "rlimits-only"),
so nobody mistakes a run without namespaces for the isolated mode.
"""

from __future__ import annotations

import csv as _csv
import io
from pathlib import Path
from typing import Mapping, Sequence

from autograder.results import SubmissionResult
from autograder.report.files import write_atomic


def gradebook_csv(results: Sequence[SubmissionResult], problem_ids: Sequence[str], isolation: Mapping[str, str]) -> str:
    out = io.StringIO()
    writer = _csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "total", "max", "status", *problem_ids, "isolation"])
    for result in sorted(results, key=lambda r: r.student):
        scores = {p.problem_id: p.score for p in result.problems}
        writer.writerow([result.student, f"{result.score:g}", f"{result.max_score:g}", result.status,
                         *[f"{scores.get(pid, 0.0):g}" for pid in problem_ids], isolation.get(result.student, "")])
    return out.getvalue()


def write_gradebook_csv(
    path: Path, results: Sequence[SubmissionResult], problem_ids: Sequence[str], isolation: Mapping[str, str]
) -> None:
    write_atomic(path, gradebook_csv(results, problem_ids, isolation).encode())
