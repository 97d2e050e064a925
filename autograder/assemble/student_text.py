"""Problem texts for students: an `Assignment` in, stub code, prompts and answer placeholders (strings) out.

Shared by the .py release, the student notebook and the nbgrader notebook, so all
three say the same thing.
"""

from __future__ import annotations

import jinja2

from autograder.assemble.manifest import AssignedProblem, Assignment
from autograder.kinds import kind_of
from autograder.kinds.base import CLASS
from autograder.kinds.implement import stub_function

TRACK_IMPORTS = {
    "numpy": "import numpy as np",
    "torch": "import numpy as np\nimport torch",
}

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.assemble", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,
)
TEMPLATES.filters["points"] = lambda p: f"{p:g} point" + ("" if p == 1 else "s")


# ------------------------------------------------------------------ stubs


def stub_module(assignment: Assignment) -> str:
    return TEMPLATES.get_template("stub_module.py.j2").render(
        title=assignment.manifest.title, track=assignment.track, module=assignment.module_name,
        per_student=assignment.manifest.variants == "per_student", imports=TRACK_IMPORTS[assignment.track],
        stubs=[stub_function(p.problem) for p in assignment.implement],  # the notebook's cells say the same
        written=[{"id": p.problem.id, "title": p.problem.title, "points": p.points,
                  "placeholder": kind_of(p.problem).placeholder(p.problem)}
                 for p in assignment.written],
    )


# ---------------------------------------------------------------- prompts


def students_of(assignment: Assignment) -> list[str]:
    return list(assignment.manifest.roster) if assignment.manifest.variants == "per_student" else [CLASS]


def written_prompt(assigned: AssignedProblem, assignment: Assignment, student: str) -> str:
    """The text a student answers (with their own numbers when the assignment's variants are per student)."""
    problem, manifest = assigned.problem, assignment.manifest
    kind = kind_of(problem)
    return kind.question_markdown(problem, kind.variant(problem, manifest.seed, manifest.variants,
                                                        None if student == CLASS else student))


def problem_markdown(assigned: AssignedProblem, assignment: Assignment) -> str:
    problem = assigned.problem
    head = f"## {problem.title} ({assigned.points:g} point{'s' if assigned.points != 1 else ''})\n\n`{problem.id}`"
    body = kind_of(problem).release_prompt(problem, assignment.manifest)
    return f"{head}\n\n{body.strip()}\n"


def problems_markdown(assignment: Assignment) -> str:
    return f"# {assignment.manifest.title}\n\n" + "\n".join(problem_markdown(p, assignment) for p in assignment.problems)
