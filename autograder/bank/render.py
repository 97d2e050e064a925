"""Problem text with its numbers filled in: a template and a variant in, Markdown with LaTeX out.

Prompts and worked solutions of parameterised problems are Jinja2 templates
rendered from the same parameters and answers (kinds/numeric.py renders its
own), so the text can never disagree with the numbers that are graded.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from autograder.bank.variants import Variant
    from autograder.kinds.numeric import AnswerPart, NumericProblem


def _fmt_number(x: float, decimals: int | None = 4) -> str:
    x = float(x)
    if decimals is None:
        return f"{x:g}"
    if float(x).is_integer() and abs(x) < 1e15:
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


def render_text(template: str, context: dict[str, Any]) -> str:
    return _environment().from_string(template).render(**context)


def variant_context(problem: NumericProblem, variant: Variant) -> dict[str, Any]:
    parts: dict[str, AnswerPart] = {p.name: p for p in problem.parts}
    rounded = {name: np.round(value, parts[name].decimals) if parts[name].decimals is not None else value
               for name, value in variant.answers.items()}
    from autograder.kinds.by_hand import table_markdown

    return {**variant.params, "answer": rounded, "tables": table_markdown(problem.by_hand, variant.quantities)}
