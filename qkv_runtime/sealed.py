"""How the self-check keeps answers out of the student release: canonical forms and salted digests.

The build writes digests of each right answer (and of each named mistake's answer)
for every student; the self-check computes the same digest of what a student typed
and compares. Numbers are snapped to a grid first, so a digest decides "within
tolerance" (docs/self-check.md).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

# Numbers: each entry of the right answer t is snapped to a grid, k = round(t / step),
# and the digest is taken of the integers k. The self-check enumerates every grid
# point within the tolerance window of the typed x (plus half a step), hashes each
# candidate and looks for the stored digest. So every answer the grader accepts,
# |x - t| <= abs + rel*|t|, is accepted here too, and an answer is accepted here
# only if |x - t| <= window + step, with step <= window / fineness.
# The fineness is as high as keeps the number of candidates of one part within
# GRID_BUDGET; parts with many entries are hashed entry by entry ("each" mode).

GRID_BUDGET = 50_000  # most digests the self-check computes for one answer part
GRID_FINENESS = (8, 4, 2, 1)


def canonical_numbers(values: np.ndarray, digits: int) -> str:
    flat = np.round(np.asarray(values, dtype=float).reshape(-1), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{np.shape(values)}:" + ",".join(f"{x:.{digits}f}" for x in flat)


def exact_step(decimals: int | None) -> float:
    """The grid of an exact answer: its stated decimals, whole numbers by default."""
    return 10.0 ** -(decimals or 0)


def _window(x: float, tol_abs: float, tol_rel: float) -> float:
    return tol_abs + tol_rel * abs(x)


def _power_of_two_below(x: float) -> float:
    return 2.0 ** math.floor(math.log2(max(x, 1e-12)))


EXACT_REACH = 30  # an answer on its decimals' grid is hashed exactly while its window spans at most 30 grid steps


def grid_plan(values: Any, tol_abs: float, tol_rel: float,
              decimals: int | None = None) -> tuple[str, list[float], bool]:
    """How the right answer `values` of a part is hashed: ("whole" or "each", one grid step per entry, exact).

    Exact: every entry sits on the grid of its stated decimals (integer scores, counts, 0.25):
    the self-check then tries exactly the grid points within the tolerance of the typed number,
    which is the grader's rule. Otherwise the steps are powers of two, from the absolute
    tolerance alone where it dominates (so they say nothing of the answer), else from the
    whole window.
    """
    flat = np.asarray(values, dtype=float).reshape(-1)
    step = exact_step(decimals)
    windows = [_window(x, tol_abs, tol_rel) for x in flat]
    if all(abs(x / step - round(x / step)) <= 1e-9 and w / step <= EXACT_REACH for x, w in zip(flat, windows)):
        counts = [2 * w / step + 1 for w in windows]
        return ("whole" if math.prod(counts) <= GRID_BUDGET else "each"), [step] * flat.size, True
    for mode, fineness in [("whole", m) for m in GRID_FINENESS] + [("each", GRID_FINENESS[0])]:
        steps = [_power_of_two_below((tol_abs if tol_rel * abs(x) <= tol_abs else w) / fineness)
                 for x, w in zip(flat, windows)]
        counts = [2 * (w / s + 1) + 1 for w, s in zip(windows, steps)]
        if mode == "each" or math.prod(counts) <= GRID_BUDGET:
            return mode, steps, False
    raise AssertionError("unreachable")


def grid_index(value: float, step: float) -> int:
    return int(round(float(value) / step))


def grid_candidates(value: float, step: float, tol_abs: float, tol_rel: float, exact: bool = False,
                    limit: int = 160) -> list[int]:
    """Grid points the right answer may sit on if the typed `value` is within tolerance of it."""
    value = float(value)
    if not math.isfinite(value) or abs(value) / step > 1e15:  # no answer is that far off the grid's scale
        return []
    # |t| <= |x| + w(t) bounds the window w(t) = abs + rel*|t| from the typed value alone.
    window = (tol_abs + tol_rel * abs(value)) / max(1.0 - tol_rel, 1e-9) + 1e-12 * max(1.0, abs(value))
    # exact: the right answer is a grid point, so only grid points within the window can be it
    reach = window if exact else window + step / 2
    low, high = math.ceil((value - reach) / step), math.floor((value + reach) / step)
    if high - low + 1 > limit:  # far wider than any right answer's window: cannot be within tolerance
        return []
    return list(range(low, high + 1))


def grid_form(indices: Any, shape: Any) -> str:
    """The canonical form of grid points: the shape and the integers."""
    return f"grid{tuple(int(n) for n in shape)}:" + ",".join(str(int(k)) for k in indices)


def answer_digest(salt: str, canonical: str) -> str:
    return hashlib.sha256(f"qkv1|{salt}|{canonical}".encode()).hexdigest()


def digest_salt(assignment: str, student: str, problem: str, part: str) -> str:
    return f"{assignment}|{student}|{problem}|{part}"


OUTPUT_DIGITS = 6  # a function output matches a misconception's when equal to 6 decimals


def outputs_digest(outputs, digits: int = OUTPUT_DIGITS) -> str:
    """A digest of a function's outputs, to recognise a misconception's output without shipping it."""
    canonical = "|".join(canonical_numbers(np.asarray(o, dtype=float), digits) for o in outputs)
    return hashlib.sha256(f"qkv1|outputs|{canonical}".encode()).hexdigest()
