"""The student notebook: an `Assignment` in, the text of a Jupyter notebook (nbformat v4) out.

One setup cell, then for each problem: its prompt (Markdown), the cell to fill
in (a stub function or an ANSWERS entry) and a self-check cell. Every cell
carries `metadata.qkv = {role, problem}`, so the grader can tell the student's
code from the scaffolding; cell ids are derived from the problem ids so the
output is byte-identical across builds.
"""

from __future__ import annotations

from autograder.assemble.manifest import Assignment
from autograder.assemble.student_text import TRACK_IMPORTS, problem_markdown
from autograder.kinds import kind_of

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _cell(kind: str, source: str, role: str, problem: str | None = None):
    from nbformat.v4 import new_code_cell, new_markdown_cell  # nbformat loads only to build (a fifth of a second)

    make = new_markdown_cell if kind == "markdown" else new_code_cell
    cell = make(source.rstrip("\n"))
    cell.id = f"{problem or 'nb'}-{role}"[-64:]
    cell.metadata["qkv"] = {"role": role, **({"problem": problem} if problem else {})}
    return cell


def setup_source(assignment: Assignment) -> str:
    return (
        'STUDENT_ID = ""  # your student id, e.g. "s1234567"\n\n'
        f"{TRACK_IMPORTS[assignment.track]}\n\n"
        "ANSWERS = {}\n"
        "try:  # the offline self-check, shipped beside this notebook\n"
        "    from qkv_check import check, show\n"
        "except ImportError:\n"
        "    check = show = lambda *args, **kwargs: print(\"qkv_check.py is not beside this notebook\")"
    )


def student_notebook(assignment: Assignment) -> str:
    title = assignment.manifest.title
    cells = [
        _cell("markdown", f"# {title}\n\nFill in each cell marked *your work*, then run the self-check cell after it. "
                          "Run every cell from the top after a restart before you submit; hidden tests are run when you are graded.",
              "intro"),
        _cell("code", setup_source(assignment), "setup"),
    ]
    for assigned in assignment.problems:
        problem = assigned.problem
        cells.append(_cell("markdown", problem_markdown(assigned, assignment), "prompt", problem.id))
        cells.append(_cell("code", kind_of(problem).student_cell(problem), "work", problem.id))
        cells.append(_cell("code", f"check({problem.id!r})", "selfcheck", problem.id))
    cells.append(_cell("code", "check()  # every problem at once, with a summary", "selfcheck"))
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC,
                                                              "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)
