"""A numeric problem's text with its numbers filled in: a template and a variant in, Markdown with LaTeX out.

Prompts and worked solutions of numeric problems are Jinja2 templates rendered
from the same parameters and answers that are graded (with the by-hand tables,
by_hand.py), so the text can never disagree with the numbers.
"""

from __future__ import annotations

import functools
from typing import Any, SupportsFloat

import numpy as np

from autograder.kinds.items import Variant
from autograder.kinds.numeric.by_hand import table_markdown
from autograder.kinds.numeric.model import AnswerPart, NumericProblem


def _fmt_number(value: SupportsFloat, decimals: int | None = 4) -> str:
    x = float(value)
    if decimals is None:
        return f"{x:g}"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{decimals}f}"


def fmt(value: Any, decimals: int | None = 4) -> str:
    """Numbers as a student writes them: 2, 0.0634, (1, 0, 2), or rows separated by semicolons."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return _fmt_number(array, decimals)
    if array.ndim == 1:
        return "(" + ", ".join(_fmt_number(x, decimals) for x in array) + ")"
    return "[" + "; ".join(fmt(row, decimals).strip("()") for row in array) + "]"


def latex(value: Any, decimals: int | None = 4) -> str:
    """A LaTeX matrix (pmatrix) for vectors and matrices, a plain number for scalars."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return _fmt_number(array, decimals)
    rows = array.reshape(1, -1) if array.ndim == 1 else array
    body = r" \\ ".join(" & ".join(_fmt_number(x, decimals) for x in row) for row in rows)
    return r"\begin{pmatrix} " + body + r" \end{pmatrix}"


@functools.cache
def _environment():
    # imported here: grading imports this module (through the kinds) but never renders, and the
    # Gradescope image installs only what grading needs (assemble/gradescope.py), without jinja2
    import jinja2

    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    environment.filters["fmt"] = fmt
    environment.filters["latex"] = latex
    environment.globals["np"] = np
    return environment


@functools.lru_cache(maxsize=4096)
def _compiled(template: str):
    # a bank's templates are few and each is rendered again for every variant (the service renders one per page
    # shown): compiling is most of a render's cost
    return _environment().from_string(template)


def render_text(template: str, context: dict[str, Any]) -> str:
    return _compiled(template).render(**context)


def _rounded(value: Any, decimals: int | None) -> Any:
    return value if decimals is None else np.round(value, decimals)


def variant_context(problem: NumericProblem, variant: Variant) -> dict[str, Any]:
    parts: dict[str, AnswerPart] = {p.name: p for p in problem.parts}
    rounded = {name: _rounded(value, parts[name].decimals) for name, value in variant.answers.items()}
    # what compute gives besides the answers (a figure's rounded weights), for a prompt that prints it
    given = {name: value for name, value in variant.quantities.items() if name not in parts}
    return {**variant.params, "answer": rounded, "given": given,
            "tables": table_markdown(problem.by_hand, variant.quantities)}


def render_prompt(problem: NumericProblem, variant: Variant | None) -> str:
    assert variant is not None, "a numeric problem's prompt needs its variant"
    return render_text(problem.prompt, variant_context(problem, variant))


def render_solution(problem: NumericProblem, variant: Variant | None) -> str:
    assert variant is not None, "a numeric problem's solution needs its variant"
    return render_text(problem.solution, variant_context(problem, variant))
