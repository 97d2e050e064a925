"""Problem texts for students: an `Assignment` in, stub code, prompts and answer placeholders (strings) out.

Shared by the .py release, the student notebook and the nbgrader notebook, so all
three say the same thing.
"""

from __future__ import annotations

import json
import textwrap

import jinja2

from autograder.bank.model import (
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    TrueFalseProblem,
)
from autograder.bank.render import render_prompt
from autograder.bank.variants import variant_for
from autograder.build.manifest import AssignedProblem, Assignment

TRACK_IMPORTS = {
    "numpy": "import numpy as np",
    "torch": "import numpy as np\nimport torch",
}
CLASS = "*"  # the student key of class-wide variants

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.build", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,
)
TEMPLATES.filters["points"] = lambda p: f"{p:g} point" + ("" if p == 1 else "s")


# ------------------------------------------------------------------ stubs


def docstring(problem: ImplementProblem) -> str:
    text = problem.prompt.strip().replace('"""', "'''").replace("\\", "\\\\")
    parts = [text, f"Returns: {problem.returns}"]
    if problem.example.strip():
        parts.append("Example:\n" + textwrap.indent(problem.example.strip().replace("\\", "\\\\"), "    "))
    return textwrap.indent("\n\n".join(parts), "    ").lstrip()


def placeholder(problem) -> str:
    if isinstance(problem, NumericProblem):
        if len(problem.parts) == 1:
            return "None"
        return "{" + ", ".join(f"{json.dumps(p.name)}: None" for p in problem.parts) + "}"
    if isinstance(problem, TrueFalseProblem):
        return '{"answer": None, "correction": ""}'
    return "None"


def stub_function(problem: ImplementProblem) -> str:
    return f'def {problem.signature}:\n    """{docstring(problem)}\n    """\n    raise NotImplementedError("{problem.function}")\n'


def stub_module(assignment: Assignment) -> str:
    return TEMPLATES.get_template("stub_module.py.j2").render(
        title=assignment.manifest.title, track=assignment.track, module=assignment.module_name,
        per_student=assignment.manifest.variants == "per_student", imports=TRACK_IMPORTS[assignment.track],
        code=[{"signature": p.problem.signature, "docstring": docstring(p.problem), "function": p.problem.function}
              for p in assignment.implement],
        written=[{"id": p.problem.id, "title": p.problem.title, "points": p.points, "placeholder": placeholder(p.problem)}
                 for p in assignment.written],
    )


# ---------------------------------------------------------------- prompts


def students_of(assignment: Assignment) -> list[str]:
    return list(assignment.manifest.roster) if assignment.manifest.variants == "per_student" else [CLASS]


def written_prompt(assigned: AssignedProblem, assignment: Assignment, student: str) -> str:
    problem = assigned.problem
    if isinstance(problem, NumericProblem):
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants,
                              None if student == CLASS else student)
        return render_prompt(problem, variant)
    text = render_prompt(problem)
    if isinstance(problem, TrueFalseProblem):
        text += f"\n\n> {problem.statement}"
    if isinstance(problem, MultipleChoiceProblem):
        text += "\n\n" + "\n".join(f"- **{chr(65 + i)}.** {c.text}" for i, c in enumerate(problem.choices))
    return text


def problem_markdown(assigned: AssignedProblem, assignment: Assignment) -> str:
    problem = assigned.problem
    head = f"## {problem.title} ({assigned.points:g} point{'s' if assigned.points != 1 else ''})\n\n`{problem.id}`"
    if isinstance(problem, ImplementProblem):
        body = f"{problem.prompt.strip()}\n\n**Write** `{problem.signature}`: returns {problem.returns}."
    elif isinstance(problem, NumericProblem) and assignment.manifest.variants == "per_student":
        body = ("Your numbers depend on your student id: set `STUDENT_ID`, then run "
                f"`python qkv_check.py --student YOUR_ID --show {problem.id}` (or `show(\"{problem.id}\")` in the notebook).")
    else:
        body = written_prompt(assigned, assignment, CLASS)
    return f"{head}\n\n{body.strip()}\n"


def problems_markdown(assignment: Assignment) -> str:
    return f"# {assignment.manifest.title}\n\n" + "\n".join(problem_markdown(p, assignment) for p in assignment.problems)
