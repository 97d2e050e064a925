"""How a function's output is judged: the selected outputs and the expected ones in, a match or the reason out.

The grader (in its trusted process, on plain arrays from the sandbox), validate,
the self-check and the nbgrader test cells all judge with this one function, so
a test passes or fails, with the same words, whichever route runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .judge import within

OUTPUT_CHOICES = ("all", "first", "second")


@dataclass(frozen=True)
class Mismatch:
    reason: str
    max_error: Optional[float] = None


def select(outputs: Sequence[np.ndarray], which: str) -> Tuple[np.ndarray, ...]:
    """The returned values a test compares (`first` or `second` of a pair, or `all`)."""
    if which == "first":
        return tuple(outputs[:1])
    if which == "second":
        return tuple(outputs[1:2])
    return tuple(outputs)


def compare(got: Sequence[np.ndarray], want: Sequence[np.ndarray], tol_abs: float, tol_rel: float) -> Optional[Mismatch]:
    """None when every output matches, entry by entry, by the tolerance rule (judge.within)."""
    if len(got) != len(want):
        return Mismatch(f"returned {len(got)} value(s), expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        which = f"value {i + 1}: " if len(want) > 1 else ""
        if not isinstance(g, np.ndarray) or not isinstance(w, np.ndarray):
            g, w = np.asarray(g), np.asarray(w)
        if g.dtype.kind not in "biuf" or w.dtype.kind not in "biuf":
            return Mismatch(f"{which}returned an array of {g.dtype}, expected numbers")
        if g.shape != w.shape:
            return Mismatch(f"{which}shape {tuple(g.shape)}, expected {tuple(w.shape)}")
        if g.dtype == w.dtype and g.tobytes() == w.tobytes():
            continue  # the same bytes (NaN where the reference has NaN too) pass every rule below: no arithmetic needed
        g64, w64 = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if (g64 == w64).all():
            continue  # equal to the bit, as a right answer computed the reference's way usually is: no error needed
        ok = within(g64, w64, tol_abs, tol_rel)
        if ok.all():
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(g64 - w64)
        if np.isnan(g64).any() and not np.isnan(w64).any():
            return Mismatch(f"{which}contains NaN", float("nan"))
        bad = ~ok & ~(np.isnan(g64) & np.isnan(w64))  # NaN where the reference has NaN is the reference's answer
        if bad.any():
            worst = float(np.nanmax(np.where(bad, err, 0.0)))
            return Mismatch(f"{which}{int(bad.sum())} of {bad.size} entries differ, largest error {worst:.3g}", worst)
    return None


def excerpt(array: Optional[np.ndarray], limit: int = 6) -> str:
    """'shape (1, 3): [0.6667, 0.3333, 0]': the start of an array, as feedback shows it."""
    if array is None:
        return ""
    flat = np.asarray(array).reshape(-1)
    body = ", ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in flat[:limit].tolist())
    more = ", ..." if flat.size > limit else ""
    return f"shape {tuple(np.shape(array))}: [{body}{more}]"
