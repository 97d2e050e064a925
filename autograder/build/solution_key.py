"""The answer key as a submission: an `Assignment` in, a filled-in submission module (Python source) out.

Written to `dist/NAME/key/` for instructors (it must score full marks; tests and
the demo grade it) and never to `student/`. Function bodies are the track's
references; ANSWERS hold the right answer of each written problem for the
class-wide variant, or for one student's variant when `student` is given.
"""

from __future__ import annotations

import json
import pprint
import textwrap

import numpy as np

from autograder.bank.answers import expected_shape
from autograder.bank.model import ImplementProblem, MultipleChoiceProblem, NumericProblem, ShapeProblem, TrueFalseProblem
from autograder.bank.resolve import resolve
from autograder.bank.variants import Variant, variant_for
from autograder.build.manifest import Assignment
from autograder.bank.reference_source import reference_body
from autograder.build.student_text import TRACK_IMPORTS


def written_answer(problem, variant: Variant | None) -> object:
    """What a right student writes in ANSWERS for a written problem; `variant` holds a numeric one's numbers."""
    if isinstance(problem, NumericProblem):
        values = {p.name: np.round(variant.answers[p.name], 10).tolist() for p in problem.parts}
        return next(iter(values.values())) if len(values) == 1 else values
    if isinstance(problem, ShapeProblem):
        return " x ".join(expected_shape(problem))
    if isinstance(problem, TrueFalseProblem):
        return {"answer": problem.answer, "correction": problem.correction or ""}
    assert isinstance(problem, MultipleChoiceProblem)
    return problem.answer


def key_answer(problem, assignment: Assignment, student: str | None) -> object:
    """The right answer for the assignment's variant of `problem` (the class's, or `student`'s own)."""
    numeric = isinstance(problem, NumericProblem)
    manifest = assignment.manifest
    return written_answer(problem, variant_for(problem, manifest.seed, manifest.variants, student) if numeric else None)


def key_function(problem: ImplementProblem, track: str) -> str:
    """The problem's function with the track's reference as its body."""
    body = reference_body(problem.signature, resolve(problem.references[track]))
    return f"def {problem.signature}:\n{textwrap.indent(body, '    ')}\n"


def key_module(assignment: Assignment, student: str | None = None) -> str:
    parts = [f'"""Answer key of {assignment.manifest.title} (instructors only)."""', "", TRACK_IMPORTS[assignment.track], ""]
    for assigned in assignment.implement:
        parts.append("\n" + key_function(assigned.problem, assignment.track))
    answers = {a.problem.id: key_answer(a.problem, assignment, student) for a in assignment.written}
    parts.append(f"\nSTUDENT_ID = {json.dumps(student or '')}\n")
    parts.append("ANSWERS = " + pprint.pformat(answers, width=100, sort_dicts=False) + "\n")
    return "\n".join(parts)


def key_files(assignment: Assignment) -> dict[str, bytes]:
    return {f"{assignment.module_name}.py": key_module(assignment).encode()}
