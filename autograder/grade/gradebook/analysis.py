"""The gradebook's reads for the class's analysis (classroom/stats.py, mistakes.py): the latest grading of
each student whose file ran, its test scores as a matrix and the named mistakes its tests matched.

No Python loop runs per test row: when every such grading was made with one bundle (the usual case: the
same tests for everyone), the scores are read as one column in the table's order and reshaped;
otherwise each test's scores come packed per test (grading id, score, ...).
"""

from __future__ import annotations

import json
from typing import Any, Optional

import numpy as np

from autograder.grade.gradebook.database import Database
from autograder.grade.gradebook.reads import LATEST
from autograder.grade.gradebook.records import LatestGrading, MistakeHit, ScoreTable

LATEST_GRADED = f"SELECT id FROM gradings WHERE status = 'graded' AND id IN ({LATEST})"


def _answers(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


class Analysis:
    _db: Database

    def latest_scores(self) -> ScoreTable:
        """The test scores of each student's latest grading that ran, and how many latest gradings did not."""
        rows = self._db.execute(f"SELECT id, student, status, answers, bundle FROM gradings WHERE id IN ({LATEST}) "
                                "ORDER BY id").fetchall()
        graded = tuple(LatestGrading(gid, student, status, bundle, _answers(answers))
                       for gid, student, status, answers, bundle in rows if status == "graded")
        ids = np.array([g.id for g in graded], dtype=np.int64)  # ascending: rows come ORDER BY id

        def positions(found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Row indices of those grading ids that belong to analysed students, and which of `found` they are."""
            at = np.clip(np.searchsorted(ids, found), 0, max(len(ids) - 1, 0))
            keep = (ids[at] == found) if len(ids) else np.zeros(len(found), dtype=bool)
            return at[keep], keep

        columns: list[tuple[str, str, str]] = []
        maxima: list[float] = []
        matrix = np.zeros((len(graded), 0))
        if graded:
            keys = self._db.execute("SELECT problem, test, visibility, max_score FROM grading_tests WHERE grading = ? "
                                    "ORDER BY problem, test", (int(ids[0]),)).fetchall()
            if len({g.bundle for g in graded}) == 1 and keys:
                flat = np.fromiter((r[0] for r in self._db.execute(
                    f"SELECT score FROM grading_tests WHERE grading IN ({LATEST_GRADED}) "
                    "ORDER BY grading, problem, test")), float)
                if flat.size == len(graded) * len(keys):
                    columns = [(p, t, v) for p, t, v, _ in keys]
                    maxima = [m for *_, m in keys]
                    matrix = flat.reshape(len(graded), len(keys))
            if not columns:  # gradings of several bundles: tests differ between students
                cells = []
                for problem, test, visibility, max_score, packed in self._db.execute(
                        "SELECT problem, test, MAX(visibility), MAX(max_score), "
                        "group_concat(grading || ' ' || score, ' ') "
                        f"FROM grading_tests WHERE grading IN ({LATEST_GRADED}) GROUP BY problem, test"):
                    columns.append((problem, test, visibility))
                    maxima.append(max_score)
                    cells.append(np.array(packed.split(), dtype=float).reshape(-1, 2))
                matrix = np.zeros((len(graded), len(columns)))
                for col, pairs in enumerate(cells):
                    at, keep = positions(pairs[:, 0].astype(np.int64))
                    matrix[at, col] = pairs[keep, 1]
        return ScoreTable(graded, tuple(columns), np.array(maxima, dtype=float), matrix, len(rows) - len(graded))

    def latest_graded_count(self) -> int:
        """How many students' latest grading ran."""
        return self._db.execute(f"SELECT COUNT(*) FROM ({LATEST_GRADED}) AS latest").fetchone()[0]

    def latest_mistakes(self) -> list[MistakeHit]:
        """Every test of the latest gradings that ran whose failure matched a named mistake, by grading."""
        return list(map(MistakeHit._make, self._db.execute(
            "SELECT grading, problem, misconception, max_score - score FROM grading_tests "
            f"WHERE misconception IS NOT NULL AND grading IN ({LATEST_GRADED}) ORDER BY grading")))

    def problem_kinds(self) -> dict[str, str]:
        """Each problem's kind, from one stored result of a file that ran ({} when none ran)."""
        sample = self._db.execute("SELECT result FROM submissions WHERE status = 'graded' LIMIT 1").fetchone()
        if not sample:
            return {}
        return {p["problem_id"]: p["kind"] for p in json.loads(sample[0]).get("problems", [])}

    def stored_result(self, grading: int) -> Optional[dict[str, Any]]:
        """The stored result (JSON data) of the grading's student when their latest grading is of the same file;
        None when it is of another, or unreadable."""
        row = self._db.execute("SELECT s.result FROM submissions s JOIN gradings g ON g.student = s.student AND "
                               "g.digest = s.digest WHERE g.id = ?", (grading,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            return None
