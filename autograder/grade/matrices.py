"""What of a failed test is drawn on the feedback page: plain arrays in, a small JSON-able picture record out.

Kept in the result (and so in the gradebook), the record holds the first
(rows x columns) slice of the output and of the expected output, at most
`MATRIX_MAX` a side, rounded to 4 decimals, and the test's boolean mask over
that slice when it has one. Weights (non-negative rows that sum to 1, or to 0
for a fully masked row) are preferred among a pair of outputs, since they show
what each query attends to. Non-finite entries are kept as None.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

MATRIX_MAX = 12  # the largest side drawn


def _first_slice(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1, array.shape[-2], array.shape[-1])[0]


def _is_weights(rows: np.ndarray) -> bool:
    if rows.size == 0 or not np.all(np.isfinite(rows)) or rows.min() < 0:
        return False
    sums = rows.sum(axis=-1)
    return bool(np.all((np.abs(sums - 1) < 1e-6) | (np.abs(sums) < 1e-12)))


def _cells(rows: np.ndarray) -> list[list[Optional[float]]]:
    rounded = np.round(rows.astype(float), 4).tolist()  # Python floats: math.isfinite costs a tenth of np.isfinite
    return [[x if math.isfinite(x) else None for x in row] for row in rounded]


def _mask(args: Sequence[Any], kwargs: dict[str, Any], shape: tuple[int, ...]) -> Optional[list[list[bool]]]:
    candidates = [kwargs.get("mask")] + [a for a in args if isinstance(a, np.ndarray) and a.dtype == bool]
    for mask in candidates:
        if isinstance(mask, np.ndarray) and mask.dtype == bool:
            try:
                return _first_slice(np.broadcast_to(mask, shape)).tolist()
            except ValueError:
                continue
    return None


def picture(got: Sequence[np.ndarray], want: Sequence[np.ndarray], args: Sequence[Any],
            kwargs: dict[str, Any]) -> Optional[dict[str, Any]]:
    """{"kind": "weights" | "values", "want", "got", "mask"?} for a drawable output, else None."""
    pairs = []
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if w.ndim < 2 or g.shape != w.shape or w.dtype.kind != "f" or g.dtype.kind not in "biuf":
            continue
        if w.shape[-2] > MATRIX_MAX or w.shape[-1] > MATRIX_MAX or w.size == 0:
            continue
        pairs.append((g, w))
    if not pairs:
        return None
    weights = [(g, w) for g, w in pairs if _is_weights(_first_slice(w))]
    g, w = (weights or pairs)[0]
    record: dict[str, Any] = {"kind": "weights" if weights else "values",
                              "want": _cells(_first_slice(w)), "got": _cells(_first_slice(g.astype(float)))}
    if w.ndim > 2:
        record["of"] = int(np.prod(w.shape[:-2]))  # the drawing is the first of this many matrices
        record["shape"] = [int(n) for n in w.shape]  # the page names the slice: [0, 0, :, :] of 2 x 8 x 10 x 10
    mask = _mask(args, kwargs, w.shape)
    if mask is not None:
        record["mask"] = mask
    return record
