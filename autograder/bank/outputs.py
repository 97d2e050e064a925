"""How a test's output is judged: returned values in, a match or a described mismatch out.

Used in the trusted process only (validate, grade): outputs from student code
arrive as plain arrays and are compared here, never by the student's objects.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from autograder.bank.inputs import call_arguments
from autograder.bank.model import TestCase, Tolerance, Track

Outputs = tuple[np.ndarray, ...]


class GradedTestLike(Protocol):
    output: str


@dataclass(frozen=True)
class Mismatch:
    reason: str
    max_error: float | None = None


def as_outputs(value: Any) -> Outputs:
    """A function's return value as a tuple of float/bool arrays (tensors detached, pairs split)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for item in items:
        if hasattr(item, "detach"):
            item = item.detach().cpu().numpy()
        out.append(np.asarray(item))
    return tuple(out)


def select(outputs: Outputs, test: TestCase | GradedTestLike) -> Outputs:
    """The returned values a test compares (`output: first` for a pair)."""
    if test.output == "first":
        return outputs[:1]
    if test.output == "second":
        return outputs[1:2]
    return outputs


def compare(got: Outputs, want: Outputs, tolerance: Tolerance) -> Mismatch | None:
    """Compare already-selected outputs entry by entry with the test's tolerance."""
    if len(got) != len(want):
        return Mismatch(f"returned {len(got)} value(s), expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        which = f"value {i + 1}: " if len(want) > 1 else ""
        if g.dtype.kind not in "biuf" or w.dtype.kind not in "biuf":
            return Mismatch(f"{which}returned an array of {g.dtype}, expected numbers")
        if g.shape != w.shape:
            return Mismatch(f"{which}shape {tuple(g.shape)}, expected {tuple(w.shape)}")
        g64, w64 = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        # An infinite expected entry (a fully masked score) must be met exactly: its window would
        # be infinite. inf - inf and 0 * inf are NaN, which never compares true.
        with np.errstate(invalid="ignore"):
            err = np.abs(g64 - w64)
            ok = (g64 == w64) | ((err <= tolerance.abs + tolerance.rel * np.abs(w64)) & np.isfinite(w64))
        if ok.all():
            continue
        if np.isnan(g64).any() and not np.isnan(w64).any():
            return Mismatch(f"{which}contains NaN", float("nan"))
        bad = ~ok
        bad &= ~(np.isnan(g64) & np.isnan(w64))
        if bad.any():
            worst = float(np.nanmax(np.where(bad, err, 0.0)))
            return Mismatch(f"{which}{int(bad.sum())} of {bad.size} entries differ, largest error {worst:.3g}", worst)
    return None


def to_track(value: Any, track: Track) -> Any:
    if track == "torch" and isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(value.copy())
    return value


def run_trusted(function: Callable[..., Any], test: TestCase, track: Track = "numpy") -> Outputs:
    """Run one of *our* functions (reference, mutant) on a test's inputs in this process."""
    args, kwargs = call_arguments(test)
    # a mutant dividing 0 by 0 on purpose is not news; its NaN output is what gets compared
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = function(*(to_track(a, track) for a in args), **{k: to_track(v, track) for k, v in kwargs.items()})
    return as_outputs(result)


def literal_outputs(expect: Any) -> Outputs:
    """A test's `expect:` figure, compared with the selected output (`output: first` for a pair)."""
    return (np.asarray(expect, dtype=float),)
