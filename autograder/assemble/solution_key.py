"""The answer key as a submission: an `Assignment` in, a filled-in submission module (Python source) out.

Written to `dist/NAME/key/` for instructors (it must score full marks; tests and
the demo grade it) and never to `student/`. Function bodies are the track's
references; ANSWERS hold the right answer of each written problem for the
class-wide variant, or for one student's variant when `student` is given.
"""

from __future__ import annotations

import json
import pprint

from autograder.assemble.manifest import Assignment
from autograder.assemble.student_text import TRACK_IMPORTS
from autograder.kinds import kind_of
from autograder.kinds.implement import key_function


def key_answer(problem, assignment: Assignment, student: str | None) -> object:
    """The right answer for the assignment's variant of `problem` (the class's, or `student`'s own)."""
    kind = kind_of(problem)
    manifest = assignment.manifest
    return kind.answer(problem, kind.variant(problem, manifest.seed, manifest.variants, student))


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
