"""Mistakes across the class, for the instructor: the gradebook in, each named mistake's prevalence and an example out.

A mistake is counted where it starts: a column softmax that also breaks the
attention functions built on softmax_rows is one mistake of softmax-rows, with
the points it costs in every problem it touches (the gradebook stores such a
test's misconception as "softmax-rows/column-softmax", grade/gradebook/writes.py).
Each comes with one anonymised example, a failed test it explains (a public one
when there is one): the test, what was expected and what came back, and the
message students read, never who handed it in. Read with the item analysis
(stats.py) from the latest grading of each student whose file ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from autograder.grade.gradebook import Gradebook


@dataclass(frozen=True)
class Example:
    problem: str
    test: str
    visibility: str
    expected: str
    got: str
    message: str


@dataclass(frozen=True)
class ClassMistake:
    problem: str  # the problem the mistake belongs to
    mistake: str
    message: str
    students: int
    share: float  # of the students analysed
    points: float  # lost to it over the class
    touches: tuple[str, ...]  # problems whose tests it explains, the problem itself first
    example: Optional[Example]

    @property
    def per_student(self) -> float:
        return self.points / self.students if self.students else 0.0


def _origin(problem: str, stored: str) -> tuple[str, str]:
    upstream, _, mistake = stored.rpartition("/")
    return (upstream, mistake) if upstream else (problem, stored)


def _example(book: Gradebook, grading: int, problem: str, mistake: str) -> Optional[Example]:
    result = book.stored_result(grading)
    if result is None:
        return None
    found = [(p["problem_id"], t) for p in result.get("problems", []) for t in p.get("tests", [])
             if t.get("misconception") == mistake and (t.get("cause") or p["problem_id"]) == problem]
    if not found:
        return None
    where, test = min(found, key=lambda f: (f[1].get("visibility") != "public", f[0] != problem))
    return Example(where, test.get("name", ""), test.get("visibility", ""), test.get("expected_excerpt", ""),
                   test.get("got_excerpt", ""), test.get("message", ""))


def class_mistakes(book: Gradebook, messages: dict[tuple[str, str], str],
                   order: tuple[str, ...] = ()) -> tuple[ClassMistake, ...]:
    """Every named mistake of the latest gradings, most students first; `messages` by (problem, mistake) id."""
    analysed = book.latest_graded_count()
    who: dict[tuple[str, str], set[int]] = {}
    lost: dict[tuple[str, str], float] = {}
    touched: dict[tuple[str, str], dict[str, None]] = {}
    for grading, problem, stored, points in book.latest_mistakes():
        key = _origin(problem, stored)
        who.setdefault(key, set()).add(grading)
        lost[key] = lost.get(key, 0.0) + points
        touched.setdefault(key, {key[0]: None})[problem] = None
    place = {p: i for i, p in enumerate(order)}
    out = []
    for key, gradings in who.items():
        problem, mistake = key
        touches = tuple(sorted(touched[key], key=lambda p: (p != problem, place.get(p, len(place)), p)))
        out.append(ClassMistake(problem, mistake, messages.get(key, mistake), len(gradings),
                                len(gradings) / analysed if analysed else 0.0, round(lost[key], 4), touches,
                                _example(book, min(gradings), problem, mistake)))
    return tuple(sorted(out, key=lambda m: (-m.students, -m.points, m.problem, m.mistake)))
