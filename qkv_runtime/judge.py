"""The judging rules every route shares, each written once: the tolerance, "not answered", the part of an answer, choice letters, source positions.

The grader's kinds, nbgrader's test cells, the self-check, the copying check and
`compare` all call these, so an answer is close, missing or in a cell by one rule
whichever route judges it. Standard library and NumPy only, and no import of
another runtime module: every other module may import this one (nbgrader's cells
run the runtime module by module, in autograder/assemble/nbgrader_source.py's order).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

# ------------------------------------------------------------------ the tolerance


def window(want: Any, tol_abs: float, tol_rel: float) -> Any:
    """How far from `want` an answer may lie, entry by entry: abs + rel * |want|."""
    return tol_abs + tol_rel * np.abs(want)


def within(got: Any, want: Any, tol_abs: float, tol_rel: float) -> np.ndarray:
    """Entry by entry (broadcast), whether got is within want's window: |got - want| <= abs + rel * |want|.

    An infinite expected entry (a fully masked score) is met only by itself: its window would be
    infinite. NaN meets nothing, itself included (inf - inf and 0 * inf are NaN, never <= anything)."""
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return (g == w) | ((np.abs(g - w) <= window(w, tol_abs, tol_rel)) & np.isfinite(w))


def close(got: Any, want: Any, tol_abs: float, tol_rel: float) -> bool:
    """The same shape, and every entry within the tolerance of the expected one."""
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return g.shape == w.shape and bool(np.all(within(g, w, tol_abs, tol_rel)))


# ------------------------------------------------------------------ answers


def blank(value: Any) -> bool:
    """One typed value left empty: None or ""."""
    return value is None or (isinstance(value, str) and value == "")


def unanswered(answer: Any) -> bool:
    """A whole answer not given: blank, or a dictionary of blank entries only (the stub's placeholder)."""
    return blank(answer) or (isinstance(answer, dict) and all(blank(v) for v in answer.values()))


def part_of(answer: Any, part: str, single: bool) -> Any:
    """What was typed for one part: a bare value when the answer has a `single` part (or the part a bare
    value stands for), else the dictionary's entry; None when there is none."""
    if isinstance(answer, dict):
        return answer.get(part)
    return answer if single else None


# ------------------------------------------------------------------ choices

LETTERS = "ABCDEFGH"  # a choice's letter is its place in the order a student is shown; 8 choices at most


def letters(count: int) -> str:
    return LETTERS[:count]


def letter_of(order: Sequence[str], choice: str) -> str:
    """The letter `choice` (an id) has in `order`."""
    return LETTERS[list(order).index(choice)]


def choice_at(order: Sequence[str], letter: str) -> str:
    """The id whose place in `order` the (read, valid) `letter` names."""
    return order[LETTERS.index(letter)]


# ------------------------------------------------------------------ source positions


def cell_file(number: int) -> str:
    """The file name a notebook cell is compiled under, so that a traceback names the cell."""
    return f"cell {number}"


def position(frames: Sequence[Tuple[str, int]], filename: str) -> Optional[str]:
    """'line N' (or 'cell C, line N' in a notebook): the innermost of `frames` ([(file, line)], outermost
    first) in the student's `filename` or a notebook cell; None when no frame is."""
    where = None
    for name, lineno in frames:
        if name == filename:
            where = f"line {lineno}"
        elif name.startswith("cell ") and name[5:].isdigit():
            where = f"{name}, line {lineno}"
    return where
